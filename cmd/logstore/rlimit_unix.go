//go:build unix

package main

import "syscall"

// descriptorLimit is the process's limit of open files (RLIMIT_NOFILE's
// soft limit, which the Go runtime raises to the hard one at start), or
// 0 when it cannot be read.
func descriptorLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
