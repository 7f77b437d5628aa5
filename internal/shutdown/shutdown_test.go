package shutdown

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// fakeCatcher is a started Catcher fed by the test, whose exit reports
// the status on a channel instead of ending the process.
func fakeCatcher(t *testing.T) (*Catcher, chan int, *bytes.Buffer) {
	t.Helper()
	exits := make(chan int, 1)
	var notice bytes.Buffer
	c := newCatcher(context.Background(), func(status int) { exits <- status }, &notice)
	go c.loop()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			close(c.stop)
			<-c.done
		}
	})
	return c, exits, &notice
}

func TestFirstSignalCancelsWithItsStatus(t *testing.T) {
	for _, tc := range []struct {
		sig    os.Signal
		status int
		name   string
	}{
		{os.Interrupt, 130, "SIGINT"},
		{syscall.SIGTERM, 143, "SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, exits, _ := fakeCatcher(t)
			if c.Signal() != nil || c.Err() != nil {
				t.Fatalf("before any signal: %v, %v", c.Signal(), c.Err())
			}
			c.sigs <- tc.sig
			<-c.Context().Done()
			cause := context.Cause(c.Context())
			var in *Interrupted
			if !errors.As(cause, &in) || in.Signal != tc.sig || in.ExitStatus() != tc.status {
				t.Fatalf("cause %v (%#v), want an *Interrupted by %v with status %d", cause, in, tc.sig, tc.status)
			}
			if !errors.Is(cause, ErrInterrupted) || cause.Error() != "interrupted by "+tc.name {
				t.Fatalf("cause %q: want errors.Is ErrInterrupted and the text %q", cause, "interrupted by "+tc.name)
			}
			if c.Signal() != tc.sig || !errors.Is(c.Err(), ErrInterrupted) {
				t.Fatalf("Signal %v, Err %v after %v", c.Signal(), c.Err(), tc.sig)
			}
			select {
			case s := <-exits:
				t.Fatalf("the first signal exited with %d", s)
			default:
			}
		})
	}
}

// A second signal, while the first's clean close still runs, exits at
// once with the first signal's status and says so.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	c, exits, notice := fakeCatcher(t)
	c.sigs <- syscall.SIGTERM
	<-c.Context().Done()
	c.sigs <- os.Interrupt
	if got := <-exits; got != 143 {
		t.Fatalf("second signal exited with %d, want 143 (the first signal's)", got)
	}
	<-c.done
	msg := notice.String()
	if !strings.Contains(msg, "SIGINT after SIGTERM") || !strings.Contains(msg, "status 143") || !strings.Contains(msg, "without closing the store cleanly") {
		t.Fatalf("notice %q", msg)
	}
}

func TestStopWithoutSignal(t *testing.T) {
	c := Catch(context.Background())
	c.Stop()
	c.Stop()
	<-c.Context().Done()
	if c.Err() != nil || c.Signal() != nil {
		t.Fatalf("after Stop without a signal: %v, %v", c.Err(), c.Signal())
	}
	if errors.Is(context.Cause(c.Context()), ErrInterrupted) {
		t.Fatal("Stop's cancellation looks like an interruption")
	}
}

func TestExitStatus(t *testing.T) {
	if got := ExitStatus(syscall.SIGHUP); got != 129 {
		t.Fatalf("SIGHUP: %d", got)
	}
	if got := ExitStatus(nil); got != 1 {
		t.Fatalf("nil: %d", got)
	}
	if Name(syscall.SIGHUP) != syscall.SIGHUP.String() {
		t.Fatal(Name(syscall.SIGHUP))
	}
}
