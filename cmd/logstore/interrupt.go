package main

import (
	"context"
	"errors"
	"fmt"

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

// feed calls a batchSource's next in a goroutine of its own, one call at
// a time and only when asked, so that a signal stops the wait for input
// (a pipe that stays open) without the source being read further. An
// item handed out stays valid until the next request, as the source
// promises.
type feed struct {
	req chan struct{}
	res chan fed
}

type fed struct {
	it  item
	err error
}

func startFeed(src batchSource) *feed {
	f := &feed{req: make(chan struct{}), res: make(chan fed, 1)}
	go func() {
		for range f.req {
			it, err := src.next()
			f.res <- fed{it, err} // buffered: never blocks, even once abandoned
			if err != nil {
				return
			}
		}
	}()
	return f
}

// next asks for the next item and waits for it, or for ctx to be done
// (ok false). After an error or ok false, next must not be called again.
func (f *feed) next(ctx context.Context) (it item, err error, ok bool) {
	f.req <- struct{}{}
	select {
	case r := <-f.res:
		return r.it, r.err, true
	case <-ctx.Done():
		return item{}, nil, false
	}
}

// stop lets the goroutine end once its call in flight returns.
func (f *feed) stop() { close(f.req) }

// interruptedAppend is the error of an append run that a signal stopped:
// the interruption, what was answered and from where the input was not
// sent, so that the producer knows where to resume.
func (a *appender) interruptedAppend(stop error, src batchSource, closed bool) error {
	unsent := "every batch was answered"
	if !a.eof {
		switch s := src.(type) {
		case *argsSource:
			unsent = "the batch was not sent"
		case *lineSource:
			if a.last.line == 0 {
				unsent = "no line was answered: nothing of the input was sent"
			} else {
				unsent = fmt.Sprintf("lines 1 to %d were answered; the input from line %d on was not sent", a.last.line, a.last.line+1)
			}
		case *logSource:
			if a.last.batch == 0 {
				unsent = fmt.Sprintf("no batch was answered: nothing of %s was sent", s.name)
			} else {
				unsent = fmt.Sprintf("batches 1 to %d were answered; %s from batch %d at position %d on was not sent", a.last.batch, s.name, a.last.batch+1, a.last.next)
			}
		}
	}
	if closed {
		unsent += "; the store was closed cleanly"
	}
	return fmt.Errorf("%w: %s", stop, unsent)
}
