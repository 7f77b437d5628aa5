//go:build (unix && !aix && !solaris) || illumos

package fileutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// flockPoll is how often a waiting Flock tries the lock again.
const flockPoll = 10 * time.Millisecond

// Flock takes a flock(2) on f, exclusive or shared. It tries again
// every few milliseconds until timeout has passed (once when timeout <=
// 0), then fails with an error wrapping ErrLocked; it stops waiting when
// ctx ends, with an error wrapping ctx's cause.
//
// A flock belongs to the open file description: a second open of the
// same file, even in the same process, conflicts with the first, and
// closing f releases it. bbolt takes the same lock on its files, so it
// also excludes a bbolt reader or writer of the file. (Package syscall
// has flock on every unix but aix and solaris; illumos has it. The
// others get flock_other.go.)
func Flock(ctx context.Context, f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("lock %s: waited %s: %w", f.Name(), max(timeout, 0), ErrLocked)
		}
		wait := time.NewTimer(min(flockPoll, time.Until(deadline)))
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("lock %s: gave up waiting: %w", f.Name(), context.Cause(ctx))
		}
	}
}

// Funlock releases the flock on f (closing f releases it too).
func Funlock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}
