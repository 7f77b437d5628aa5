//go:build !race

package recordbatch_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
