package testutil

import "runtime"

// Allocated returns the bytes fn allocates on the heap (the growth of
// runtime.MemStats.TotalAlloc while it runs): an upper bound on the heap
// it can have held at its peak. Unlike a peak sample it misses nothing,
// and unlike a time it does not depend on the machine or on -race. Call
// it from a test that is not parallel, so other tests add nothing.
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
