//go:build !unix || aix || (solaris && !illumos)

package fileutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
)

// Flock fails: the store's files are locked with flock(2), which this
// system does not offer through package syscall.
func Flock(_ context.Context, f *os.File, _ bool, _ time.Duration) error {
	return fmt.Errorf("lock %s: implemented only with flock(2), not on %s: %w", f.Name(), runtime.GOOS, errors.ErrUnsupported)
}

// Funlock does nothing: Flock never took a lock here.
func Funlock(*os.File) error { return nil }
