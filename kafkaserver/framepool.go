package kafkaserver

import (
	"math/bits"
	"sync"
)

// Request frames are read into buffers from pools by size class (powers
// of two from 1 KiB to 8 MiB; a larger frame gets a buffer of its own),
// so a steady stream of produce requests allocates nothing per frame and
// leaves the collector nothing to do.
//
// A frame's buffer goes back to its pool only once the response to its
// request is written (conn.writeLoop): kmsg's decoded request keeps
// byte slices into the frame (a produce's records), and a handler may
// run on after the reader has gone on (a produce waiting for group
// commit, a long-poll fetch), which ends before its response is
// complete. Strings are copied by kmsg's ReadFrom, so nothing that
// outlives the request (a topic name in the catalog, a metric's label)
// points into a pooled buffer.
const (
	minFrameShift  = 10 // 1 KiB
	maxFrameShift  = 23 // 8 MiB
	frameClasses   = maxFrameShift - minFrameShift + 1
	maxPooledFrame = 1 << maxFrameShift

	// firstFrameChunk is what a frame's buffer holds before its bytes
	// arrive: a frame larger than this grows, doubling, as they come, so
	// a size field costs nothing until the bytes it claims are sent.
	firstFrameChunk = 64 << 10
)

var framePools [frameClasses]sync.Pool

// frameClass is the index of the smallest class holding n bytes, or -1
// when n is above the largest.
func frameClass(n int) int {
	if n > maxPooledFrame {
		return -1
	}
	if n <= 1<<minFrameShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minFrameShift
}

// getFrame returns a buffer of length n, from its class's pool when it
// has one.
func getFrame(n int) []byte {
	c := frameClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if v := framePools[c].Get(); v != nil {
		return (*v.(*[]byte))[:n]
	}
	return make([]byte, n, 1<<(c+minFrameShift))
}

// putFrame gives b back to its class's pool; b must not be used after.
// A buffer whose capacity is not a class's (a frame over the largest
// class) is left to the collector.
func putFrame(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minFrameShift) {
		return
	}
	b = b[:0]
	framePools[c].Put(&b)
}
