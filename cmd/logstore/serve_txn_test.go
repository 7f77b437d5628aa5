package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServeTransactionMaxTimeout: serve's --transaction-max-timeout caps
// the transaction timeout InitProducerId may ask for (50 above it), and a
// value below a millisecond is a usage error.
func TestServeTransactionMaxTimeout(t *testing.T) {
	_, errOut, code := runCLI(t, "serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--transaction-max-timeout", "0s")
	if code == 0 || !strings.Contains(errOut, "--transaction-max-timeout") {
		t.Errorf("--transaction-max-timeout 0s: exit %d, stderr %q", code, errOut)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	cmd := newServeCommand()
	cmd.SetArgs([]string{"--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--sync", "never", "--transaction-max-timeout", "2s"})
	cmd.SetOut(pw)
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	ready, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v; stderr:\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, br)
	m := regexp.MustCompile(`^logstore serve: listening on (\S+),`).FindStringSubmatch(ready)
	if m == nil {
		t.Fatalf("ready line %q", ready)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	for _, c := range []struct {
		millis int32
		code   int16
	}{{2000, 0}, {2001, 50}} {
		r := kmsg.NewPtrInitProducerIDRequest()
		id := "capped"
		r.TransactionalID, r.TransactionTimeoutMillis = &id, c.millis
		resp, err := r.RequestWith(rctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != c.code {
			t.Errorf("InitProducerId with a timeout of %d ms: error %d, want %d", c.millis, resp.ErrorCode, c.code)
		}
	}
	cl.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v; stderr:\n%s", err, stderr.String())
	}
}
