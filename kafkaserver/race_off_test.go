//go:build !race

package kafkaserver

// raceEnabled: see race_on_test.go.
const raceEnabled = false
