//go:build !unix || aix || (solaris && !illumos)

package logstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

type fileLock struct{}

// lockFile fails: the store's single-process guarantee rests on flock(2),
// which this system does not offer through package syscall.
func lockFile(_ context.Context, path string, timeout time.Duration) (*fileLock, error) {
	return nil, fmt.Errorf("lock %s: locking a store is implemented only with flock(2), not on %s: %w", path, runtime.GOOS, errors.ErrUnsupported)
}

func (l *fileLock) unlock() error { return nil }
