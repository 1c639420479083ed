package fakecri

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// Alloc is what [MeasureAlloc] saw while its function ran. Both figures are
// the whole process's: run the function alone (not beside parallel tests)
// for them to mean something.
type Alloc struct {
	// Total is how many bytes were allocated on the heap
	// (runtime.MemStats.TotalAlloc after minus before).
	Total uint64
	// PeakHeap is the largest growth of the heap (live and not yet
	// collected objects) over what it held before, sampled every
	// sampleEvery.
	PeakHeap uint64
}

// sampleEvery is how often MeasureAlloc samples the heap: reading
// runtime/metrics does not stop the world, and a millisecond catches a
// buffer of a few MiB that lives while it is filled and decoded.
const sampleEvery = time.Millisecond

// heapObjects is the runtime/metrics name of the heap's objects in bytes
// (runtime.MemStats.HeapAlloc).
const heapObjects = "/memory/classes/heap/objects:bytes"

// MeasureAlloc runs f and reports how much it allocated. It collects garbage
// first, so that the heap starts from what is live.
func MeasureAlloc(f func()) Alloc {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	stop, peakc := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: heapObjects}}
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		var peak uint64
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				peakc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	peak := <-peakc
	runtime.ReadMemStats(&after)
	a := Alloc{Total: after.TotalAlloc - before.TotalAlloc}
	if peak > base {
		a.PeakHeap = peak - base
	}
	return a
}
