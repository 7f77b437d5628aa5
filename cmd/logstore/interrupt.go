package main

import (
	"context"
	"errors"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/shutdown"
)

// The pieces that let SIGINT and SIGTERM stop a command cleanly (see
// package shutdown): the command runs under the Catcher's context, stops
// taking input when it is done, finishes what is in flight, closes the
// store, and returns an error wrapping the *shutdown.Interrupted.

// interruption is the *shutdown.Interrupted that ended ctx, or nil when
// no signal did.
func interruption(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, shutdown.ErrInterrupted) {
		return err
	}
	return nil
}

// withInterruption makes err, when a signal ended ctx, carry the
// *shutdown.Interrupted too (for the exit status), and name the signal.
func withInterruption(ctx context.Context, err error) error {
	stop := interruption(ctx)
	if err == nil || stop == nil || errors.Is(err, shutdown.ErrInterrupted) {
		return err
	}
	return &signalled{err: err, stop: stop}
}

type signalled struct{ err, stop error }

func (e *signalled) Error() string {
	var in *shutdown.Interrupted
	errors.As(e.stop, &in)
	return e.err.Error() + " (" + shutdown.Name(in.Signal) + ")"
}

func (e *signalled) Unwrap() []error { return []error{e.err, e.stop} }

// openStoreUntil opens the store as logstore.Open does, but a signal
// stops the wait for the store's lock: it returns the interruption.
func openStoreUntil(ctx context.Context, dir string, opts logstore.Options) (*logstore.Store, error) {
	s, err := logstore.OpenContext(ctx, dir, opts)
	if err != nil {
		if stop := interruption(ctx); stop != nil {
			return nil, stop
		}
	}
	return s, err
}
