package kafkaserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkadump"
	"github.com/logstore/logstore/metrics"
)

// txnServer is a server over a store in dir that the test stops itself
// (stop), so that the files can then be checked with no process holding
// them.
type txnServer struct {
	t       *testing.T
	dir     string
	store   *logstore.Store
	srv     *Server
	addr    string
	metrics *metrics.Metrics
	logs    *testutil.LockedBuffer
	done    chan error
	stopped bool
}

// startTxnServer starts a server whose store has topic (3 partitions).
func startTxnServer(t *testing.T, topic string, cfg Config) *txnServer {
	t.Helper()
	s := &txnServer{t: t, dir: t.TempDir(), metrics: metrics.New(nil), logs: &testutil.LockedBuffer{}, done: make(chan error, 1)}
	store, err := logstore.Open(s.dir, logstore.Options{Events: s.metrics.StoreEvents()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = s.metrics
	cfg.Logger = slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, ln := newListening(t, store, cfg)
	s.store, s.srv, s.addr = store, srv, ln.Addr().String()
	if _, err := srv.cat.CreateTopic(topic, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

// stop shuts the server down and closes the store, once.
func (s *txnServer) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.t.Errorf("Shutdown: %v", err)
	}
	if err := <-s.done; !errors.Is(err, ErrServerClosed) {
		s.t.Errorf("Serve returned %v", err)
	}
	if err := s.store.Close(); err != nil {
		s.t.Errorf("closing the store: %v", err)
	}
}

// txnClient is a kgo transactional producer with id, producing to topic
// by the records' partitions.
func txnClient(t *testing.T, addr, id, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func partitionRecord(p int32, v string) *kgo.Record {
	return &kgo.Record{Partition: p, Value: []byte(v)}
}

// consume reads partitions 0 to n-1 of topic from the start with a kgo
// consumer at isolation level iso until it has want[p] records of each
// (a log that ends with a marker has no last record to wait for).
func consume(t *testing.T, ctx context.Context, addr, topic string, iso kgo.IsolationLevel, want []int) map[int32][]string {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range want {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]string{}
	full := func() bool {
		for p, n := range want {
			if len(got[int32(p)]) < n {
				return false
			}
		}
		return true
	}
	for !full() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer: %v; has %v, want %v records", ctx.Err(), got, want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], string(r.Value)) })
	}
	return got
}

// checkFiles checks the stopped store in dir: logstore.Check finds no
// problem (each .txnindex equals the one the log rebuilds), and the dump
// of each partition of topic shows the markers it should.
func checkFiles(t *testing.T, dir, topic string, partitions int, commits, aborts int) {
	t.Helper()
	var problems []string
	if _, err := logstore.Check(dir, func(p logstore.Problem) { problems = append(problems, p.String()) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("check: %q", problems)
	}
	for p := range partitions {
		var out, errOut bytes.Buffer
		opts := kafkadump.DefaultOptions()
		opts.DeepIteration = true
		if err := kafkadump.Dump(&out, &errOut, []string{filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p))}, opts); err != nil {
			t.Fatalf("dump: %v\n%s", err, errOut.String())
		}
		if c, a := strings.Count(out.String(), "endTxnMarker: COMMIT"), strings.Count(out.String(), "endTxnMarker: ABORT"); c != commits || a != aborts {
			t.Fatalf("dump of %s-%d: %d COMMIT and %d ABORT markers, want %d and %d:\n%s", topic, p, c, a, commits, aborts, out.String())
		}
	}
}

// TestTxnKgoCommitAbort: kgo's transactional producer commits and aborts
// transactions in turn over 3 partitions. A read_uncommitted consumer
// reads every record, a read_committed one the committed records in
// order and no aborted one; the logs hold each transaction's records followed
// by its COMMIT or ABORT marker in each partition; the coordinator's
// metrics count them; and once stopped, check finds every .txnindex
// equal to its rebuild and the dump shows the markers.
func TestTxnKgoCommitAbort(t *testing.T) {
	s := startTxnServer(t, "tx", Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const txns, perPartition = 8, 3
	cl := txnClient(t, s.addr, "alternating", "tx")
	var wantCommitted, wantAborted [3][]string
	for i := range txns {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			for r := range perPartition {
				v := fmt.Sprintf("txn%02d-p%d-r%d", i, p, r)
				if err := cl.ProduceSync(ctx, partitionRecord(p, v)).FirstErr(); err != nil {
					t.Fatalf("transaction %d: produce: %v", i, err)
				}
				if i%2 == 0 {
					wantCommitted[p] = append(wantCommitted[p], v)
				} else {
					wantAborted[p] = append(wantAborted[p], v)
				}
			}
		}
		commit := kgo.TryCommit
		if i%2 == 1 {
			commit = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("transaction %d: EndTransaction(%v): %v", i, commit, err)
		}
	}
	all := consume(t, ctx, s.addr, "tx", kgo.ReadUncommitted(), []int{txns * perPartition, txns * perPartition, txns * perPartition})
	// read_committed: the committed records, in order, and no aborted
	// one (the transactions alternate, so one would come before the
	// last committed record).
	const committedEach = txns / 2 * perPartition
	committedOnly := consume(t, ctx, s.addr, "tx", kgo.ReadCommitted(), []int{committedEach, committedEach, committedEach})
	for p := range int32(3) {
		part, err := s.store.Partition("tx", p)
		if err != nil {
			t.Fatal(err)
		}
		if want := append(slices.Clone(wantCommitted[p]), wantAborted[p]...); !sameSet(all[p], want) {
			t.Fatalf("read_uncommitted consumer, partition %d: %q, want %q", p, all[p], want)
		}
		if !slices.Equal(committedOnly[p], wantCommitted[p]) {
			t.Fatalf("read_committed consumer, partition %d: %q, want %q", p, committedOnly[p], wantCommitted[p])
		}
		committed, aborted, open := decided(readLog(t, part))
		if !slices.Equal(committed, wantCommitted[p]) || !slices.Equal(aborted, wantAborted[p]) || len(open) != 0 {
			t.Fatalf("partition %d: committed %q, aborted %q, open %q; want %q and %q", p, committed, aborted, open, wantCommitted[p], wantAborted[p])
		}
		// The last EndTxn's markers are made durable in the background.
		if err := part.SyncTo(part.EndOffset()); err != nil {
			t.Fatal(err)
		}
		if lso, hwm := part.LastStableOffset(), part.DurableEnd(); lso != hwm {
			t.Fatalf("partition %d: last stable offset %d, high watermark %d", p, lso, hwm)
		}
	}
	for e, want := range map[metrics.TxnEvent]float64{metrics.TxnBegun: txns, metrics.TxnCommitted: txns / 2, metrics.TxnAborted: txns / 2, metrics.TxnTimedOut: 0} {
		if got := s.metrics.Transactions(e); got != want {
			t.Errorf("transactions %s: %v, want %v", e, got, want)
		}
	}
	if n := s.srv.openTransactions(); n != 0 {
		t.Errorf("%d transactions open", n)
	}
	cl.Close()
	s.stop()
	checkFiles(t, s.dir, "tx", 3, txns/2, txns/2)
}

// TestTxnKgoFencing: a second kgo client with the same transactional id
// fences the first. Its InitProducerId aborts the first one's open
// transaction; the first one's next produce gets 47 and its commit
// fails; none of its records is committed, and the second one's
// transaction commits.
func TestTxnKgoFencing(t *testing.T) {
	s := startTxnServer(t, "fx", Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := txnClient(t, s.addr, "fenced", "fx")
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := first.ProduceSync(ctx, partitionRecord(p, fmt.Sprintf("first-p%d", p))).FirstErr(); err != nil {
			t.Fatalf("first client: %v", err)
		}
	}
	if n := s.srv.openTransactions(); n != 1 {
		t.Fatalf("%d transactions open, want 1", n)
	}
	hs := httptest.NewServer(s.metrics.Handler())
	defer hs.Close()
	fams := scrape(t, hs.URL)
	if open, begun := value(fams, "logstore_transactions_open"), value(fams, "logstore_transactions_total", "event=begun"); open != 1 || begun != 1 {
		t.Fatalf("/metrics with one transaction open: logstore_transactions_open %v, begun %v; want 1 and 1", open, begun)
	}
	second := txnClient(t, s.addr, "fenced", "fx")
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, partitionRecord(0, "second-p0")).FirstErr(); err != nil {
		t.Fatalf("second client: %v", err)
	}
	err := first.ProduceSync(ctx, partitionRecord(1, "first-p1-after")).FirstErr()
	if !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("first client's produce after the second's init: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// kgo does not try to commit a transaction that had a produce
	// error. Its abort sends nothing: 47 is recoverable for it
	// (KIP-588), by InitProducerId with its producer id and old epoch,
	// which it sends for its next transaction.
	if err := first.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced client committed")
	}
	if err := first.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("the fenced client's abort: %v", err)
	}
	// The second client commits before the first comes back: Kafka's
	// coordinator (and txncoord) takes an InitProducerId with the id's
	// producer id and an old epoch as a fence of the ongoing transaction,
	// whoever owns it, before it refuses the old epoch.
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second client's commit: %v", err)
	}
	// The first client's next transaction: its InitProducerId at the old
	// epoch is answered 90, fatal.
	err = first.BeginTransaction()
	if err == nil {
		err = first.ProduceSync(ctx, partitionRecord(2, "first-again")).FirstErr()
	}
	if !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the fenced client's next transaction: %v, want PRODUCER_FENCED", err)
	}
	// read_committed: partition 0's first record is the second
	// client's, the first client's aborted one is skipped.
	if got := consume(t, ctx, s.addr, "fx", kgo.ReadCommitted(), []int{1}); !slices.Equal(got[0], []string{"second-p0"}) {
		t.Fatalf("read_committed consumer, partition 0: %q", got[0])
	}
	for p := range int32(3) {
		part, err := s.store.Partition("fx", p)
		if err != nil {
			t.Fatal(err)
		}
		committed, aborted, open := decided(readLog(t, part))
		var want []string
		if p == 0 {
			want = []string{"second-p0"}
		}
		if !slices.Equal(committed, want) || !slices.Equal(aborted, []string{fmt.Sprintf("first-p%d", p)}) || len(open) != 0 {
			t.Fatalf("partition %d: committed %q, aborted %q, open %q", p, committed, aborted, open)
		}
	}
	first.Close()
	second.Close()
	s.stop()
	var problems []string
	if _, err := logstore.Check(s.dir, func(p logstore.Problem) { problems = append(problems, p.String()) }); err != nil || len(problems) != 0 {
		t.Fatalf("check: %v %q", err, problems)
	}
}

// TestTxnKgoTimeout: a transaction left open past its timeout (the
// client asks for 300 ms, within the server's maximum of a second) is
// aborted by the coordinator's scan: ABORT markers in its partitions,
// the timed-out and aborted counters, and the client, whose epoch the
// abort bumped, cannot commit it.
func TestTxnKgoTimeout(t *testing.T) {
	s := startTxnServer(t, "to", Config{TransactionMaxTimeout: time.Second, TransactionCheckInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := txnClient(t, s.addr, "slow", "to", kgo.TransactionTimeout(300*time.Millisecond))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := cl.ProduceSync(ctx, partitionRecord(p, fmt.Sprintf("open-p%d", p))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Wait (bounded by ctx) for the coordinator to abort it: the
	// aborted event comes once its markers are written.
	for s.metrics.Transactions(metrics.TxnAborted) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the transaction was not aborted past its timeout")
		case <-time.After(10 * time.Millisecond):
		}
	}
	for p := range int32(2) {
		part, err := s.store.Partition("to", p)
		if err != nil {
			t.Fatal(err)
		}
		committed, aborted, open := decided(readLog(t, part))
		if len(committed) != 0 || !slices.Equal(aborted, []string{fmt.Sprintf("open-p%d", p)}) || len(open) != 0 {
			t.Fatalf("partition %d: committed %q, aborted %q, open %q", p, committed, aborted, open)
		}
	}
	for e, want := range map[metrics.TxnEvent]float64{metrics.TxnBegun: 1, metrics.TxnTimedOut: 1, metrics.TxnAborted: 1, metrics.TxnCommitted: 0} {
		if got := s.metrics.Transactions(e); got != want {
			t.Errorf("transactions %s: %v, want %v", e, got, want)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the client committed a transaction the coordinator aborted")
	} else {
		t.Logf("commit after the timeout: %v", err)
	}
	cl.Close()
	s.stop()
	checkFiles(t, s.dir, "to", 2, 0, 1)
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
