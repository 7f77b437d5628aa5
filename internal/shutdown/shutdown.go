package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// Signals are the signals a Catcher catches.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// ErrInterrupted matches every *Interrupted with errors.Is.
var ErrInterrupted = errors.New("interrupted")

// Interrupted is the error of a run that a signal stopped.
type Interrupted struct {
	Signal os.Signal
}

func (e *Interrupted) Error() string { return "interrupted by " + Name(e.Signal) }

// Is makes errors.Is(err, ErrInterrupted) match.
func (e *Interrupted) Is(target error) bool { return target == ErrInterrupted }

// ExitStatus is the process's exit status after the signal: 128 + its
// number, as shells report a process a signal ended.
func (e *Interrupted) ExitStatus() int { return ExitStatus(e.Signal) }

// ExitStatus is 128 + sig's number: 130 for SIGINT, 143 for SIGTERM. A
// signal without a number gives 1.
func ExitStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// Name is the signal's conventional name: SIGINT, SIGTERM, or what its
// String method says for the others.
func Name(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case nil:
		return "no signal"
	}
	return sig.String()
}

// A Catcher catches SIGINT and SIGTERM from Catch until Stop. It is safe
// for concurrent use.
type Catcher struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	sigs   chan os.Signal
	stop   chan struct{}
	done   chan struct{}
	stopMu sync.Once

	// exit ends the process on the second signal; notice says so.
	exit   func(status int)
	notice io.Writer
	prog   string

	mu    sync.Mutex
	first os.Signal
}

// Catch starts catching SIGINT and SIGTERM: the first cancels the
// returned Catcher's Context (whose cause is an *Interrupted), a second
// prints a line on stderr and exits the process at once with the first's
// status. Call Stop when the run is over, to give the signals back their
// default action.
func Catch(parent context.Context) *Catcher {
	c := newCatcher(parent, os.Exit, os.Stderr)
	signal.Notify(c.sigs, Signals...)
	go c.loop()
	return c
}

// newCatcher makes a Catcher that has not started; tests feed c.sigs and
// watch exit.
func newCatcher(parent context.Context, exit func(int), notice io.Writer) *Catcher {
	ctx, cancel := context.WithCancelCause(parent)
	return &Catcher{
		ctx:    ctx,
		cancel: cancel,
		sigs:   make(chan os.Signal, 2),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		exit:   exit,
		notice: notice,
		prog:   filepath.Base(os.Args[0]),
	}
}

func (c *Catcher) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case sig := <-c.sigs:
			c.mu.Lock()
			first := c.first
			if first == nil {
				c.first = sig
			}
			c.mu.Unlock()
			if first == nil {
				c.cancel(&Interrupted{Signal: sig})
				continue
			}
			status := ExitStatus(first)
			fmt.Fprintf(c.notice, "%s: %s after %s: exiting at once with status %d, without closing the store cleanly (its next open recovers it)\n",
				c.prog, Name(sig), Name(first), status)
			c.exit(status)
			return
		}
	}
}

// Context is cancelled by the first signal, by Stop, or with the parent.
func (c *Catcher) Context() context.Context { return c.ctx }

// Signal is the first signal caught, nil before one came.
func (c *Catcher) Signal() os.Signal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// Err is an *Interrupted naming the first signal, or nil before one came.
func (c *Catcher) Err() error {
	if sig := c.Signal(); sig != nil {
		return &Interrupted{Signal: sig}
	}
	return nil
}

// Stop stops catching: the signals get their default action back (the
// process dies of them), and Context is cancelled. Calling it again does
// nothing.
func (c *Catcher) Stop() {
	c.stopMu.Do(func() {
		signal.Stop(c.sigs)
		close(c.stop)
		<-c.done
		c.cancel(context.Canceled)
	})
}
