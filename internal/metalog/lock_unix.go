//go:build (unix && !aix && !solaris) || illumos

package metalog

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often a waiting lockFile retries.
const lockPoll = 10 * time.Millisecond

// lockFile takes a flock on f, exclusive or shared, retrying until
// timeout has passed (once when timeout <= 0). flock is what bbolt
// takes on its files, so the lock excludes the previous format's
// readers and writers too.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
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
			return fmt.Errorf("lock %s: %w", f.Name(), ErrLockTimeout)
		}
		time.Sleep(min(lockPoll, time.Until(deadline)))
	}
}
