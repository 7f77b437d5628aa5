package logstore

import (
	"time"

	"github.com/logstore/logstore/vfs"
)

// WithFS returns o with fs as the filesystem of the store directory and
// everything below it but the lock file, for tests that inject faults or
// simulate power loss. Only tests can set it.
func (o Options) WithFS(fs vfs.FS) Options {
	o.fs = fs
	return o
}

// WithClock returns o with now as the store's clock, for tests that move
// time. Only tests can set it.
func (o Options) WithClock(now func() time.Time) Options {
	o.now = now
	return o
}
