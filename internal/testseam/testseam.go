// Package testseam carries the test seams of logstore.Options (the
// filesystem of the store directory and the store's clock) to test code
// outside the root package: internal/crashtest and the tests of the
// packages above the root. The seams are unexported fields of
// logstore.Options, so that no user of the library sets them.
//
// Package logstore registers its setters here when it is initialised.
// This package cannot import logstore (logstore imports it), so the
// setters are generic over the options type and checked when called:
// WithFS and WithClock panic unless O is the type logstore registered.
// Only code of this module can import an internal package.
package testseam

import (
	"time"

	"github.com/logstore/logstore/vfs"
)

// The setters package logstore registered, as func(O, vfs.FS) O and
// func(O, func() time.Time) O.
var withFS, withClock any

// Register records the setters of the options type O. Package logstore
// calls it once, from an init function; nothing else should.
func Register[O any](fs func(O, vfs.FS) O, clock func(O, func() time.Time) O) {
	withFS, withClock = fs, clock
}

// WithFS returns o with fs as the filesystem of the store directory and
// everything below it but the lock file, as the root package's tests
// get with Options.WithFS.
func WithFS[O any](o O, fs vfs.FS) O {
	return withFS.(func(O, vfs.FS) O)(o, fs)
}

// WithClock returns o with now as the store's clock.
func WithClock[O any](o O, now func() time.Time) O {
	return withClock.(func(O, func() time.Time) O)(o, now)
}
