package recordbatch

import "math"

// IncrementSequence returns seq advanced by inc with Kafka's int32 wrap:
// 2147483647 is followed by 0, never by a negative number. seq and inc
// are expected to be >= 0, as sequences and deltas always are.
func IncrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// DecrementSequence returns seq moved back by dec with the same wrap:
// 0 is preceded by 2147483647.
func DecrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}
