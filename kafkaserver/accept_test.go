package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
)

// failingListener fails its first accepts with err, as a process out
// of file descriptors sees them.
type failingListener struct {
	net.Listener
	fails atomic.Int32
	err   error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", l.err)}
	}
	return l.Listener.Accept()
}

// TestAcceptOutOfDescriptors: accept failing with EMFILE (and the like)
// makes the listener wait and try again, not stop the server, and is
// logged once for its run of failures rather than once each.
func TestAcceptOutOfDescriptors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			store, err := logstore.Open(t.TempDir(), logstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			logs := &testutil.LockedBuffer{}
			srv, ln := newListening(t, store, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
			fl := &failingListener{Listener: ln, err: errno}
			fl.fails.Store(5)
			done := make(chan error, 1)
			go func() { done <- srv.Serve(fl) }()
			ts := &testServer{t: t, addr: ln.Addr().String()}
			c := ts.dial()
			if resp := c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
				t.Fatalf("ApiVersions error %d", resp.ErrorCode)
			}
			c.nc.Close()
			if n := strings.Count(logs.String(), "kafka accept failed"); n != 1 {
				t.Errorf("%d lines of accept failures logged, want 1:\n%s", n, logs.String())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				t.Fatalf("Serve returned %v, want ErrServerClosed", err)
			}
		})
	}
	// Another accept error stops the listener, as before.
	if transientAccept(fmt.Errorf("accept: %w", syscall.EBADF)) {
		t.Error("EBADF is taken as transient")
	}
}
