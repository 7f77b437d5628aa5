//go:build !unix

package kafkaserver

import "time"

// processCPU: see cputime_unix_test.go; not known here.
func processCPU() (time.Duration, bool) { return 0, false }
