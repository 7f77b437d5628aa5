package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSlowReaderClosed: a client that sends fetches and never reads
// their responses is disconnected by the write deadline, and the server
// serves others meanwhile.
func TestSlowReaderClosed(t *testing.T) {
	ts := startServer(t, logstore.Options{Sync: logstore.SyncNever}, Config{WriteTimeout: 100 * time.Millisecond})
	ts.createTopic("t", 1)
	c := ts.dial()
	big := string(make([]byte, 200<<10))
	for range 4 {
		if got := producePart(t, c, 9, -1, "t", 0, batchOf(-1, 0, 0, big)); got.ErrorCode != 0 {
			t.Fatal(got.ErrorCode)
		}
	}
	slow := ts.dial()
	go func() {
		// Writes fail once the server has closed: stop then.
		for range 200 {
			if _, err := slow.nc.Write(frame(fetchReq(12, "t", 0, 0, 0, 0), 1)); err != nil {
				return
			}
		}
	}()
	waitFor(t, "the slow reader to be closed", func() bool {
		return strings.Contains(ts.logs.String(), "writing a response failed")
	})
	waitFor(t, "the slow reader's goroutines to end", func() bool { return ts.srv.numConns() == 1 })
	if resp := apiVersions(t, c, 3); resp.ErrorCode != 0 {
		t.Fatal("server stopped serving")
	}
}

// TestIdleConnectionsShutdown: 1,000 idle connections are served, and
// Shutdown closes them all and returns.
func TestIdleConnectionsShutdown(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	const n = 1000
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns[i] = nc
	}
	waitFor(t, "the server to accept every connection", func() bool { return ts.srv.numConns() == n })
	// One of them is used, and still answered.
	c := &rawClient{t: t, nc: conns[0]}
	if resp := apiVersions(t, c, 0); resp.ErrorCode != 0 {
		t.Fatal(resp.ErrorCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ts.srv.numConns(); got != 0 {
		t.Fatalf("%d connections left after Shutdown", got)
	}
	for i, nc := range conns {
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("connection %d after Shutdown: %v, want EOF", i, err)
		}
	}
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Fatal("the listener still accepts after Shutdown")
	}
}

// TestShutdownAnswersInFlight: a long-poll fetch waiting when Shutdown
// begins is answered (empty), then the connection closes.
func TestShutdownAnswersInFlight(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	r := fetchReq(12, "t", 0, 0, 600_000, 1)
	corr := c.send(r)
	waitFor(t, "the fetch to wait", func() bool { return ts.srv.longPolls.Load() == 1 })
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	resp := c.read(r, corr).(*kmsg.FetchResponse)
	if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 {
		t.Fatalf("fetch answered at shutdown: %+v", sp)
	}
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestIdleTimeout: a connection that sends nothing, or stops inside a
// frame, is closed after the idle timeout.
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{IdleTimeout: 50 * time.Millisecond})
	idle, partial := ts.dial(), ts.dial()
	if _, err := partial.nc.Write([]byte{0, 0, 0, 100, 0, 18}); err != nil {
		t.Fatal(err)
	}
	idle.expectClosed()
	partial.expectClosed()
}

// TestShutdownLeavesNoGoroutines: after a server that answered produces,
// held a long-poll fetch, a JoinGroup waiting for its rebalance and a
// transaction left open, and kept idle connections, is shut down and its
// store closed, no goroutine of it is left: every connection's reader
// and writer, every pending response, every long-poll, the group and
// transaction coordinators and their timers have ended.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	store, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(store, Config{Logger: slog.New(slog.DiscardHandler), GroupInitialRebalanceDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts := &testServer{t: t, store: store, srv: srv, addr: ln.Addr().String()}
	ts.createTopic("t", 1)
	c := ts.dial()
	for i := range 3 {
		if got := producePart(t, c, 9, -1, "t", 0, batchOf(-1, 0, 0, fmt.Sprint(i))); got.ErrorCode != 0 {
			t.Fatal(got.ErrorCode)
		}
	}
	// A transaction left open: its timeout's timer and the coordinator's
	// committer must end with the server.
	tx := ts.dial()
	id := "open"
	pid, epoch := initTxn(t, tx, 4, id)
	if got := addPartitions(t, tx, 3, id, pid, epoch, "t", 0); got["t"][0] != 0 {
		t.Fatal(got)
	}
	if got := txnProduce(t, tx, &id, "t", 0, txnBatchOf(pid, epoch, 0, "open")); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	poll := ts.dial()
	poll.send(fetchReq(12, "t", 0, 4, 60000, 1)) // waits for a record that never comes
	join := ts.dial()
	join.send(joinV3("g")) // waits for the initial rebalance delay, an hour
	for range 10 {
		ts.dial()
	}
	waitFor(t, "the long-poll fetch to wait", func() bool { return srv.longPolls.Load() == 1 })
	describe := ts.dial()
	waitFor(t, "the JoinGroup to wait", func() bool {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{"g"}
		g := describe.do(r).(*kmsg.DescribeGroupsResponse).Groups[0]
		return g.State == "PreparingRebalance" && len(g.Members) == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
