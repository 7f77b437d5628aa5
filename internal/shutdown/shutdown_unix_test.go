//go:build unix

package shutdown

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// A real signal to this process reaches a Catcher from Catch.
func TestCatchRealSignal(t *testing.T) {
	c := Catch(context.Background())
	defer c.Stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Skipf("cannot signal this process: %v", err)
	}
	<-c.Context().Done()
	if c.Signal() != syscall.SIGTERM {
		t.Fatalf("caught %v, want SIGTERM", c.Signal())
	}
}
