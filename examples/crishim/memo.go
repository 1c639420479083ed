package main

import (
	"bytes"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/mem"

	"github.com/sandboxpin/sandboxpin/pin"
)

// listMemo remembers the last large image list the shim walked (a copy of
// its bytes), the matcher it walked it with and the images it pinned in
// it. The kubelet asks for the image list again and again, and the answer
// seldom changes: comparing it with the last one (memequal, several GB/s,
// and it stops at the first difference) costs a fraction of walking and
// matching its images. It holds one response's bytes (at most twice the
// size of the last one stored).
type listMemo struct {
	mu    sync.RWMutex
	m     *pin.Matcher
	data  []byte
	spans []span
	// misses counts the lookups that missed since the last hit.
	misses atomic.Uint64
}

// lookup sets p.spans to what the memo found in bufs' bytes with m, and
// reports whether it holds them.
func (lm *listMemo) lookup(m *pin.Matcher, bufs mem.BufferSlice, p *patcher) bool {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.m != m || len(lm.data) != bufs.Len() {
		return false
	}
	off := 0
	for _, b := range bufs {
		d := b.ReadOnlyData()
		if !bytes.Equal(d, lm.data[off:off+len(d)]) {
			return false
		}
		off += len(d)
	}
	p.spans = append(p.spans[:0], lm.spans...)
	lm.misses.Store(0)
	return true
}

// missed counts a lookup that missed and reports whether to store the
// list: after the first miss in a row, the second, the fourth and so on,
// and then every storeEvery-th. A list that changed once is remembered at
// once; one that changes at every call (nothing to gain) costs a copy
// only now and then.
func (lm *listMemo) missed() bool {
	k := lm.misses.Add(1)
	return k&(k-1) == 0 || k%storeEvery == 0
}

// storeEvery is how often a list that keeps changing is stored.
const storeEvery = 64

// store remembers bufs' bytes and spans, what the walk with m found in
// them, unless another call is storing or looking (it does not wait).
func (lm *listMemo) store(m *pin.Matcher, bufs mem.BufferSlice, spans []span) {
	if !lm.mu.TryLock() {
		return
	}
	defer lm.mu.Unlock()
	n := bufs.Len()
	if cap(lm.data) < n || cap(lm.data) > 2*n {
		lm.data = make([]byte, 0, n) // grow, or give back what a far larger list took
	}
	lm.data = lm.data[:0]
	for _, b := range bufs {
		lm.data = append(lm.data, b.ReadOnlyData()...)
	}
	lm.m = m
	lm.spans = append(lm.spans[:0], spans...)
}
