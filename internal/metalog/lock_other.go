//go:build !unix || aix || (solaris && !illumos)

package metalog

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
)

// lockFile fails: a metadata file is locked with flock(2), which
// this system does not offer through package syscall (nor can the store
// itself be opened here).
func lockFile(f *os.File, _ bool, _ time.Duration) error {
	return fmt.Errorf("lock %s: implemented only with flock(2), not on %s: %w", f.Name(), runtime.GOOS, errors.ErrUnsupported)
}
