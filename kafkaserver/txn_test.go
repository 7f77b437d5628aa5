package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/txncoord"
)

// initTxn sends InitProducerId at version v for transactional id id
// (timeout one minute) and returns the producer id and epoch, failing
// the test on an error.
func initTxn(t *testing.T, c *rawClient, v int16, id string) (int64, int16) {
	t.Helper()
	resp := initTxnResp(t, c, v, id, -1, -1, 60000)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch < 0 {
		t.Fatalf("InitProducerId v%d %q: %+v", v, id, resp)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func initTxnResp(t *testing.T, c *rawClient, v int16, id string, pid int64, epoch int16, timeoutMillis int32) *kmsg.InitProducerIDResponse {
	t.Helper()
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = v
	r.TransactionalID = &id
	r.TransactionTimeoutMillis = timeoutMillis
	r.ProducerID, r.ProducerEpoch = pid, epoch
	return c.do(r).(*kmsg.InitProducerIDResponse)
}

// addPartitions sends AddPartitionsToTxn at version v for the topic and
// partitions given as ("topic", p, p, ..., "topic2", p, ...) and returns
// each partition's code by topic.
func addPartitions(t *testing.T, c *rawClient, v int16, id string, pid int64, epoch int16, tps ...any) map[string]map[int32]int16 {
	t.Helper()
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = v
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = id, pid, epoch
	for _, x := range tps {
		switch x := x.(type) {
		case string:
			at := kmsg.NewAddPartitionsToTxnRequestTopic()
			at.Topic = x
			r.Topics = append(r.Topics, at)
		case int:
			r.Topics[len(r.Topics)-1].Partitions = append(r.Topics[len(r.Topics)-1].Partitions, int32(x))
		}
	}
	resp := c.do(r).(*kmsg.AddPartitionsToTxnResponse)
	got := make(map[string]map[int32]int16)
	for _, rt := range resp.Topics {
		got[rt.Topic] = make(map[int32]int16)
		for _, rp := range rt.Partitions {
			got[rt.Topic][rp.Partition] = rp.ErrorCode
		}
	}
	return got
}

func endTxn(t *testing.T, c *rawClient, v int16, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	r := kmsg.NewPtrEndTxnRequest()
	r.Version = v
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, pid, epoch, commit
	return c.do(r).(*kmsg.EndTxnResponse).ErrorCode
}

// txnProduce produces batch for topic-partition in a request with
// transactional id id (nil: none).
func txnProduce(t *testing.T, c *rawClient, id *string, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	r := produceReq(9, -1, topic, partition, batch)
	r.TransactionID = id
	resp := c.do(r).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

// logEntry is one batch of a partition's log: a data batch's values, or
// a marker (control true, commit).
type logEntry struct {
	pid     int64
	epoch   int16
	control bool
	commit  bool
	values  []string
}

// readLog reads every batch of part from its start.
func readLog(t *testing.T, part *logstore.Partition) []logEntry {
	t.Helper()
	var out []logEntry
	var rr recordbatch.RecordReader
	for off := part.StartOffset(); off < part.EndOffset(); {
		data, err := part.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			data = data[b.Size():]
			if b.LastOffset() < off {
				continue
			}
			off = b.LastOffset() + 1
			e := logEntry{pid: b.ProducerID(), epoch: b.ProducerEpoch(), control: b.Attributes().Control()}
			if err := rr.Reset(b, recordbatch.DefaultMaxRecordsBytes); err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
				rec := rr.Record()
				if e.control {
					m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
					if err != nil {
						t.Fatal(err)
					}
					e.commit = m.Type == recordbatch.ControlCommit
				} else {
					e.values = append(e.values, string(rec.Value))
				}
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
	}
	return out
}

// decided returns the values of the log's transactional batches by the
// marker that ended their transaction: committed, aborted, and those of
// transactions still open.
func decided(entries []logEntry) (committed, aborted, open []string) {
	pending := map[int64][]string{}
	for _, e := range entries {
		if !e.control {
			pending[e.pid] = append(pending[e.pid], e.values...)
			continue
		}
		if e.commit {
			committed = append(committed, pending[e.pid]...)
		} else {
			aborted = append(aborted, pending[e.pid]...)
		}
		delete(pending, e.pid)
	}
	for _, v := range pending {
		open = append(open, v...)
	}
	return committed, aborted, open
}

// TestTxnOverTheWire drives a transaction with raw requests: InitProducerId
// for a transactional id, AddPartitionsToTxn (3 for an unknown partition
// and 55 for the others, nothing added), transactional produce (48 before
// the partition is added and without a transactional id in the request,
// 47 at an old epoch), EndTxn (markers in every partition of the
// transaction, a retry of the decision succeeds, the other decision 48),
// and a re-init that aborts the open transaction and fences the old epoch
// (90 from v2, 47 before).
func TestTxnOverTheWire(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	const id = "txn-a"
	txnID := id
	pid, epoch := initTxn(t, c, 4, id)
	if epoch != 0 {
		t.Fatalf("first epoch %d", epoch)
	}

	// Produce to a partition not added: 48, with the log start offset.
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid, epoch, 0, "early")); got.ErrorCode != errInvalidTxnState || got.LogStartOffset != 0 {
		t.Fatalf("produce before AddPartitionsToTxn: %+v", got)
	}
	// An unknown partition: 3 for it, 55 for the rest, nothing added.
	got := addPartitions(t, c, 3, id, pid, epoch, "t", 0, 1, 7, "nope", 0)
	want := map[string]map[int32]int16{"t": {0: errOperationNotAttempted, 1: errOperationNotAttempted, 7: errUnknownTopicOrPartition}, "nope": {0: errUnknownTopicOrPartition}}
	if !mapsEqual(got, want) {
		t.Fatalf("AddPartitionsToTxn with unknown partitions: %v, want %v", got, want)
	}
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid, epoch, 0, "early")); got.ErrorCode != errInvalidTxnState {
		t.Fatalf("produce after a refused AddPartitionsToTxn: %+v", got)
	}
	if got := addPartitions(t, c, 1, id, pid+1, epoch, "t", 0); got["t"][0] != errInvalidProducerIDMap {
		t.Fatalf("AddPartitionsToTxn with another producer id: %v", got)
	}
	if got := addPartitions(t, c, 0, id, pid, epoch, "t", 0, 1); got["t"][0] != 0 || got["t"][1] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", got)
	}
	for i, v := range []string{"a", "b"} {
		if got := txnProduce(t, c, &txnID, "t", int32(i), txnBatchOf(pid, epoch, 0, v)); got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("transactional produce to t-%d: %+v", i, got)
		}
	}
	// A transactional id the coordinator does not know, or a producer id
	// that is not the id's: 49, with the log start offset.
	nobody := "nobody"
	if got := txnProduce(t, c, &nobody, "t", 0, txnBatchOf(pid, epoch, 1, "c")); got.ErrorCode != errInvalidProducerIDMap || got.LogStartOffset != 0 {
		t.Fatalf("transactional batch of an unknown transactional id: %+v", got)
	}
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid+1, epoch, 0, "c")); got.ErrorCode != errInvalidProducerIDMap {
		t.Fatalf("transactional batch of another producer id: %+v", got)
	}
	// The same batch in a request without a transactional id: 48.
	if got := txnProduce(t, c, nil, "t", 0, txnBatchOf(pid, epoch, 1, "c")); got.ErrorCode != errInvalidTxnState {
		t.Fatalf("transactional batch without a transactional id: %+v", got)
	}
	if code := endTxn(t, c, 3, id, pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn commit: %d", code)
	}
	if code := endTxn(t, c, 3, id, pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn commit retried: %d", code)
	}
	if code := endTxn(t, c, 4, id, pid, epoch, false); code != errInvalidTxnState {
		t.Fatalf("EndTxn abort after a commit: %d, want 48", code)
	}
	// The transaction is over: its partitions are no longer in one.
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid, epoch, 1, "late")); got.ErrorCode != errInvalidTxnState {
		t.Fatalf("produce after EndTxn: %+v", got)
	}
	for pn, v := range []string{"a", "b"} {
		part, err := ts.store.Partition("t", int32(pn))
		if err != nil {
			t.Fatal(err)
		}
		committed, aborted, open := decided(readLog(t, part))
		if !slices.Equal(committed, []string{v}) || len(aborted) != 0 || len(open) != 0 {
			t.Fatalf("t-%d: committed %q aborted %q open %q; want %q committed", pn, committed, aborted, open, v)
		}
		// EndTxn answered once the markers were written; they are made
		// durable in the background. Wait for that here.
		if err := part.SyncTo(part.EndOffset()); err != nil {
			t.Fatal(err)
		}
		if lso, hwm := part.LastStableOffset(), part.DurableEnd(); lso != hwm || hwm != 2 {
			t.Fatalf("t-%d: last stable offset %d, high watermark %d; want 2 and 2", pn, lso, hwm)
		}
	}

	// A second transaction, left open, then the id initialised again:
	// the open transaction is aborted, the epoch bumped, the old one
	// fenced everywhere.
	if got := addPartitions(t, c, 3, id, pid, epoch, "t", 0); got["t"][0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", got)
	}
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid, epoch, 1, "zombie")); got.ErrorCode != 0 {
		t.Fatalf("transactional produce: %+v", got)
	}
	// Kafka bumps the epoch twice: once to fence and abort, once for
	// the new producer.
	pid2, epoch2 := initTxn(t, c, 4, id)
	if pid2 != pid || epoch2 <= epoch {
		t.Fatalf("re-init: producer %d epoch %d, want %d and an epoch above %d", pid2, epoch2, pid, epoch)
	}
	if got := txnProduce(t, c, &txnID, "t", 0, txnBatchOf(pid, epoch, 2, "zombie 2")); got.ErrorCode != errInvalidProducerEpoch || got.LogStartOffset != 0 {
		t.Fatalf("produce at the fenced epoch: %+v", got)
	}
	for v, want := range map[int16]int16{1: errInvalidProducerEpoch, 2: errProducerFenced, 4: errProducerFenced} {
		if code := endTxn(t, c, v, id, pid, epoch, true); code != want {
			t.Fatalf("EndTxn v%d at the fenced epoch: %d, want %d", v, code, want)
		}
	}
	for v, want := range map[int16]int16{1: errInvalidProducerEpoch, 3: errProducerFenced} {
		if got := addPartitions(t, c, v, id, pid, epoch, "t", 1); got["t"][1] != want {
			t.Fatalf("AddPartitionsToTxn v%d at the fenced epoch: %v, want %d", v, got, want)
		}
	}
	part, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	committed, aborted, open := decided(readLog(t, part))
	if !slices.Equal(committed, []string{"a"}) || !slices.Equal(aborted, []string{"zombie"}) || len(open) != 0 {
		t.Fatalf("t-0 after the re-init: committed %q aborted %q open %q", committed, aborted, open)
	}
}

// TestTxnInitProducerIDRefusals: a timeout above the server's maximum (or
// not above 0) is 50, an empty transactional id 42, a producer id
// without an epoch (or an epoch without a producer id) 42, and a
// producer id that is not the id's or an epoch older than the id's 90
// from v4 and 47 before (KIP-588), as Kafka answers.
func TestTxnInitProducerIDRefusals(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{TransactionMaxTimeout: 10_000_000_000})
	c := ts.dial()
	if resp := initTxnResp(t, c, 4, "x", -1, -1, 10_001); resp.ErrorCode != errInvalidTxnTimeout || resp.ProducerID != -1 {
		t.Fatalf("timeout above the maximum: %+v", resp)
	}
	if resp := initTxnResp(t, c, 4, "x", -1, -1, 0); resp.ErrorCode != errInvalidTxnTimeout {
		t.Fatalf("timeout 0: %+v", resp)
	}
	if resp := initTxnResp(t, c, 4, "", -1, -1, 1000); resp.ErrorCode != errInvalidRequest {
		t.Fatalf("empty transactional id: %+v", resp)
	}
	first := initTxnResp(t, c, 4, "x", -1, -1, 10_000)
	second := initTxnResp(t, c, 4, "x", -1, -1, 10_000)
	pid, epoch, epoch2 := first.ProducerID, first.ProducerEpoch, second.ProducerEpoch
	if first.ErrorCode != 0 || second.ErrorCode != 0 || second.ProducerID != pid || epoch2 != epoch+1 {
		t.Fatalf("inits at the maximum timeout: %+v then %+v", first, second)
	}
	if resp := initTxnResp(t, c, 4, "x", pid+100, epoch2, 1000); resp.ErrorCode != errProducerFenced {
		t.Fatalf("another producer id: %+v", resp)
	}
	if resp := initTxnResp(t, c, 3, "x", pid, -1, 1000); resp.ErrorCode != errInvalidRequest {
		t.Fatalf("a producer id without an epoch: %+v", resp)
	}
	if resp := initTxnResp(t, c, 4, "x", -1, epoch2, 1000); resp.ErrorCode != errInvalidRequest {
		t.Fatalf("an epoch without a producer id: %+v", resp)
	}
	if resp := initTxnResp(t, c, 4, "x", pid, epoch, 1000); resp.ErrorCode != errProducerFenced {
		t.Fatalf("v4, an older epoch: %+v", resp)
	}
	if resp := initTxnResp(t, c, 3, "x", pid, epoch, 1000); resp.ErrorCode != errInvalidProducerEpoch {
		t.Fatalf("v3, an older epoch: %+v", resp)
	}
	// KIP-360: the current producer id and epoch bump the epoch.
	if resp := initTxnResp(t, c, 3, "x", pid, epoch2, 1000); resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch2+1 {
		t.Fatalf("v3 with the current epoch: %+v", resp)
	}
}

// TestTxnFindCoordinator: a transactional id's coordinator is this node,
// at the address the client dialled, at every version that has key
// types; a group's is still not available (15).
func TestTxnFindCoordinator(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	for _, v := range []int16{1, 2, 3, 4} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorType = coordinatorTransaction
		r.CoordinatorKey = "txn"
		r.CoordinatorKeys = []string{"txn", "other"}
		resp := c.do(r).(*kmsg.FindCoordinatorResponse)
		host, portText, _ := net.SplitHostPort(ts.addr)
		port64, _ := strconv.ParseInt(portText, 10, 32)
		port := int32(port64)
		if v < 4 && (resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != host || resp.Port != port) {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v >= 4 {
			if len(resp.Coordinators) != 2 {
				t.Fatalf("v%d: %+v", v, resp)
			}
			for i, co := range resp.Coordinators {
				if co.Key != r.CoordinatorKeys[i] || co.ErrorCode != 0 || co.NodeID != 0 || co.Host != host || co.Port != port {
					t.Fatalf("v%d: coordinator %d: %+v", v, i, co)
				}
			}
		}
		r.CoordinatorType = 0
		resp = c.do(r).(*kmsg.FindCoordinatorResponse)
		if v < 4 && (resp.ErrorCode != errNone || resp.Port != port) || v >= 4 && (resp.Coordinators[0].ErrorCode != errNone || resp.Coordinators[0].Port != port) {
			t.Fatalf("group, v%d: %+v", v, resp)
		}
	}
}

func mapsEqual(a, b map[string]map[int32]int16) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || len(av) != len(bv) {
			return false
		}
		for p, code := range av {
			if c, ok := bv[p]; !ok || c != code {
				return false
			}
		}
	}
	return true
}

// TestTxnStorageFailureCode: an error of the coordinator that is none of
// its sentinels (transactions.db failing) is answered 15
// COORDINATOR_NOT_AVAILABLE, retriable, with a log line; in Produce it
// is 56 KAFKA_STORAGE_ERROR. The sentinels map to their codes.
func TestTxnStorageFailureCode(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	disk := errors.New("input/output error")
	if code := ts.srv.txnCode("EndTxn", "broken", fmt.Errorf("txncoord: write: %w", disk)); code != errCoordinatorNotAvailable {
		t.Fatalf("storage failure: code %d, want 15", code)
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "transaction coordinator failed") || !strings.Contains(logs, "broken") || !strings.Contains(logs, "input/output error") {
		t.Fatalf("no log line naming the id and the error:\n%s", logs)
	}
	if code := ts.srv.produceCode("broken", disk); code != errKafkaStorageError {
		t.Fatalf("storage failure in produce: code %d, want 56", code)
	}
	for err, want := range map[error]int16{
		txncoord.ErrInvalidTimeout:           errInvalidTxnTimeout,
		txncoord.ErrProducerFenced:           errProducerFenced,
		txncoord.ErrInvalidProducerEpoch:     errInvalidProducerEpoch,
		txncoord.ErrInvalidProducerIDMapping: errInvalidProducerIDMap,
		txncoord.ErrInvalidTxnState:          errInvalidTxnState,
		txncoord.ErrConcurrentTransactions:   errConcurrentTransactions,
		txncoord.ErrInvalidRequest:           errInvalidRequest,
		txncoord.ErrClosed:                   errCoordinatorNotAvailable,
	} {
		if code := ts.srv.txnCode("test", "x", fmt.Errorf("wrapped: %w", err)); code != want {
			t.Errorf("%v: code %d, want %d", err, code, want)
		}
	}
	if code := ts.srv.produceCode("x", txncoord.ErrProducerFenced); code != errInvalidProducerEpoch {
		t.Errorf("fenced in produce: code %d, want 47", code)
	}
	if code := ts.srv.produceCode("x", fmt.Errorf("begin produce: %w", txncoord.ErrClosed)); code != errNotLeaderOrFollower {
		t.Errorf("closed coordinator in produce: code %d, want 6", code)
	}
}

// txnSeeds are FuzzConn's seeds for the transaction APIs: InitProducerId
// with a transactional id, AddPartitionsToTxn, EndTxn and a
// transactional produce.
func txnSeeds() []kmsg.Request {
	id := "fuzz"
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis = 4, &id, 1000
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.Version, ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = 3, id, 0, 0
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1}
	ap.Topics = append(ap.Topics, at)
	et := kmsg.NewPtrEndTxnRequest()
	et.Version, et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = 4, id, 0, 0, true
	pr := produceReq(9, -1, "t", 0, txnBatchOf(0, 0, 0, "x"))
	pr.TransactionID = &id
	return []kmsg.Request{ip, ap, et, pr}
}

// TestTxnCoordinatorLifecycle: New opens the coordinator over
// transactions.db at the store root and Close closes it (a second server
// over the same store opens it again, the file's lock released), and what it
// holds outlives the server: the transactional id keeps its producer id,
// at the next epoch.
func TestTxnCoordinatorLifecycle(t *testing.T) {
	dir := t.TempDir()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var pid int64
	var epoch int16
	for run := range 3 {
		srv, err := New(store, Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, txncoord.FileName)); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		c := (&testServer{t: t, addr: ln.Addr().String()}).dial()
		gotPID, gotEpoch := initTxn(t, c, 4, "kept")
		if run > 0 && (gotPID != pid || gotEpoch != epoch+1) {
			t.Fatalf("run %d: producer %d epoch %d; the run before had %d and %d", run, gotPID, gotEpoch, pid, epoch)
		}
		pid, epoch = gotPID, gotEpoch
		// Close and Shutdown both close the coordinator.
		if run%2 == 0 {
			err = srv.Close()
		} else {
			err = srv.Shutdown(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Fatal(err)
		}
	}
}
