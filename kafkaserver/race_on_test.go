//go:build race

package kafkaserver

// raceEnabled: the race detector is on, and sync.Pool drops items at
// random, so allocation counts through pools mean nothing.
const raceEnabled = true
