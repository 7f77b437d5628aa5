package main

import (
	"context"
	"strings"
	"testing"
	"time"

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

	srv := serveInProcess(t, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--sync", "never", "--transaction-max-timeout", "2s")
	cl := srv.client(t)
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v; stderr:\n%s", err, srv.stderr.String())
	}
}

// TestServeTransactionalIDExpiration: serve's
// --transactional-id-expiration reaches the coordinator: an id idle
// past it is forgotten at the next scan (every 10 s), after which
// DescribeTransactions answers 105 for it; below a millisecond is a
// usage error.
func TestServeTransactionalIDExpiration(t *testing.T) {
	_, errOut, code := runCLI(t, "serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--transactional-id-expiration", "0s")
	if code == 0 || !strings.Contains(errOut, "--transactional-id-expiration") {
		t.Errorf("--transactional-id-expiration 0s: exit %d, stderr %q", code, errOut)
	}

	srv := serveInProcess(t, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--sync", "never", "--transactional-id-expiration", "1ms")
	cl := srv.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := "idle"
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v, %v", resp, err)
	}
	for {
		d := kmsg.NewPtrDescribeTransactionsRequest()
		d.TransactionalIDs = []string{id}
		resp, err := d.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeTransactions (the id did not expire within a minute?): %v", err)
		}
		if len(resp.TransactionStates) != 1 {
			t.Fatalf("DescribeTransactions: %+v", resp)
		}
		if resp.TransactionStates[0].ErrorCode == 105 {
			break
		}
		if resp.TransactionStates[0].ErrorCode != 0 {
			t.Fatalf("DescribeTransactions: %+v", resp.TransactionStates[0])
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl.Close()
	if err := srv.stop(); err != nil {
		t.Fatalf("serve: %v; stderr:\n%s", err, srv.stderr.String())
	}
	if !strings.Contains(srv.stderr.String(), "expired an idle transactional id") {
		t.Errorf("no log line of the expiry; stderr:\n%s", srv.stderr.String())
	}
}
