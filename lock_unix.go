//go:build (unix && !aix && !solaris) || illumos

package logstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPollInterval is how often a waiting Open retries the lock.
const lockPollInterval = 20 * time.Millisecond

// fileLock is an exclusive flock held on an open file. flock locks belong
// to the open file description, so a second open of the same file, even
// in the same process, conflicts with the first. (Package syscall has
// flock on every unix but aix and solaris; illumos has it. The others get
// lock_other.go.)
type fileLock struct{ f *os.File }

// lockFile takes an exclusive lock on path, creating the file if needed.
// It retries until timeout has passed (once when timeout < 0), then fails
// with an error wrapping ErrStoreInUse; it stops waiting when ctx ends,
// with an error wrapping ctx's cause.
func lockFile(ctx context.Context, path string, timeout time.Duration) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: held by another open store (waited %s): %w", path, max(timeout, 0), ErrStoreInUse)
		}
		wait := time.NewTimer(min(lockPollInterval, time.Until(deadline)))
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: gave up waiting: %w", path, context.Cause(ctx))
		}
	}
}

// unlock releases the lock. The file stays: removing it would let two
// openers lock two different files of the same name.
func (l *fileLock) unlock() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unlock %s: %w", l.f.Name(), err)
	}
	return nil
}
