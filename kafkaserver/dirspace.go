package kafkaserver

import "math"

// spaceBytes is blocks of unit bytes, as an int64; a count beyond int64
// is math.MaxInt64, as Kafka's adjustForLargeFileSystems answers a space
// Java reports as negative.
func spaceBytes(blocks, unit uint64) int64 {
	if unit != 0 && blocks > math.MaxInt64/unit {
		return math.MaxInt64
	}
	return int64(blocks * unit)
}
