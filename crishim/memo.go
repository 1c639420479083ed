package crishim

import (
	"hash/maphash"

	"github.com/sandboxpin/sandboxpin/pin"
)

// memoMax bounds a verdictMemo: past it, the memo starts again empty.
const memoMax = 1 << 17

// verdictMemo remembers, for encoded images already seen, whether they
// must be pinned, so that a client listing the same images every few
// seconds has each one matched once rather than at every answer. The key
// is a keyed 64-bit hash of the image's bytes, all of them (pinned
// included), checked against their length on a hit; the verdicts hold for
// one matcher, and the memo empties when the rules change.
//
// A wrong verdict would take two different encoded images of the same
// length whose hashes, under a seed chosen at random for this process,
// collide: about one chance in 10^10 over 10^5 images.
type verdictMemo struct {
	seed    maphash.Seed
	m       *pin.Matcher
	entries map[uint64]memoEntry
}

type memoEntry struct {
	size int32
	pin  bool
}

// newVerdictMemo returns an empty memo.
func newVerdictMemo() *verdictMemo {
	return &verdictMemo{seed: maphash.MakeSeed(), entries: map[uint64]memoEntry{}}
}

// use readies the memo for matcher m: a different matcher empties it.
func (v *verdictMemo) use(m *pin.Matcher) {
	if v.m != m || len(v.entries) > memoMax {
		clear(v.entries)
		v.m = m
	}
}

// lookup returns the verdict on the encoded image b and whether there is
// one, and the key to store it under.
func (v *verdictMemo) lookup(b []byte) (mustPin, ok bool, key uint64) {
	key = maphash.Bytes(v.seed, b)
	e, ok := v.entries[key]
	if !ok || int(e.size) != len(b) {
		return false, false, key
	}
	return e.pin, true, key
}

// store records the verdict on an encoded image of size bytes.
func (v *verdictMemo) store(key uint64, size int, mustPin bool) {
	v.entries[key] = memoEntry{size: int32(size), pin: mustPin} //nolint:gosec // G115: an image is under 16 MiB
}
