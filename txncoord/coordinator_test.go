package txncoord_test

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/txncoord"
)

func TestInitProducerIDNewAndBump(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("new id: producer %d epoch %d, want 1000 0", pid, epoch)
	}
	tx := e.wantState("t1", "Empty")
	if tx.ProducerID != 1000 || tx.Epoch != 0 || tx.Timeout != testTimeout || !tx.Start.IsZero() || len(tx.Partitions) != 0 {
		t.Fatalf("describe: %+v", tx)
	}
	pid2, epoch2 := e.init("t1")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("re-init: producer %d epoch %d, want %d 1", pid2, epoch2, pid)
	}
	// Another id gets another producer id.
	if pid3, epoch3 := e.init("t2"); pid3 != 1001 || epoch3 != 0 {
		t.Fatalf("second id: producer %d epoch %d", pid3, epoch3)
	}
	// The old epoch is fenced on every coordinator call.
	wantErr(t, "add with the old epoch", e.c.AddPartitions("t1", pid, 0, []txncoord.TopicPartition{tpA0}), txncoord.ErrProducerFenced)
	wantErr(t, "end with the old epoch", e.c.EndTxn("t1", pid, 0, true), txncoord.ErrProducerFenced)
	// Durable: a reopen keeps the mapping and bumps from it.
	e.reopen()
	if pid4, epoch4 := e.init("t1"); pid4 != pid || epoch4 != 2 {
		t.Fatalf("after reopen: producer %d epoch %d, want %d 2", pid4, epoch4, pid)
	}
	got := e.c.List()
	if len(got) != 2 || got[0].TransactionalID != "t1" || got[1].TransactionalID != "t2" {
		t.Fatalf("list: %+v", got)
	}
}

func TestInitProducerIDRefusals(t *testing.T) {
	e := newEnv(t)
	for _, d := range []time.Duration{0, -time.Second, time.Microsecond, txncoord.DefaultMaxTimeout + time.Millisecond} {
		_, _, err := e.c.InitProducerID("t", d, -1, -1)
		wantErr(t, "timeout "+d.String(), err, txncoord.ErrInvalidTimeout)
	}
	if _, ok := e.c.Describe("t"); ok {
		t.Fatal("a refused init left the id")
	}
	if _, _, err := e.c.InitProducerID("t", txncoord.DefaultMaxTimeout, -1, -1); err != nil {
		t.Fatalf("the maximum timeout: %v", err)
	}
	_, _, err := e.c.InitProducerID("", time.Second, -1, -1)
	wantErr(t, "empty id", err, txncoord.ErrInvalidRequest)

	// A configured maximum.
	e.cfg.MaxTimeout = time.Second
	e.reopen()
	_, _, err = e.c.InitProducerID("t", 2*time.Second, -1, -1)
	wantErr(t, "above the configured maximum", err, txncoord.ErrInvalidTimeout)

	// A failing producer id source: an error, nothing left behind.
	e.ids.err = errors.New("no ids")
	_, _, err = e.c.InitProducerID("u", time.Second, -1, -1)
	if !errors.Is(err, e.ids.err) {
		t.Fatalf("ids failing: %v", err)
	}
	if _, ok := e.c.Describe("u"); ok {
		t.Fatal("a failed init left the id")
	}
}

// TestInitProducerIDKIP360 follows Kafka's rules for InitProducerId v3+
// with the producer's id and epoch.
func TestInitProducerIDKIP360(t *testing.T) {
	e := newEnv(t)
	// Unknown id, producer id given (the coordinator lost it, or the
	// producer recovers): a new producer id at epoch 0.
	pid, epoch, err := e.c.InitProducerID("t", testTimeout, 77, 5)
	if err != nil || pid != 1000 || epoch != 0 {
		t.Fatalf("unknown id with a producer id: %d %d %v", pid, epoch, err)
	}
	// The current epoch: bumped.
	pid, epoch, err = e.c.InitProducerID("t", testTimeout, 1000, 0)
	if err != nil || pid != 1000 || epoch != 1 {
		t.Fatalf("current epoch: %d %d %v", pid, epoch, err)
	}
	// The previous epoch: a retry whose answer was lost, same answer.
	pid, epoch, err = e.c.InitProducerID("t", testTimeout, 1000, 0)
	if err != nil || pid != 1000 || epoch != 1 {
		t.Fatalf("retry with the previous epoch: %d %d %v", pid, epoch, err)
	}
	// Older than that, or another producer id: fenced.
	e.init("t") // epoch 2, no last epoch (no producer id given)
	_, _, err = e.c.InitProducerID("t", testTimeout, 1000, 1)
	wantErr(t, "an older epoch", err, txncoord.ErrProducerFenced)
	_, _, err = e.c.InitProducerID("t", testTimeout, 999, 2)
	wantErr(t, "another producer id", err, txncoord.ErrProducerFenced)
	if tx := e.wantState("t", "Empty"); tx.Epoch != 2 {
		t.Fatalf("fenced inits changed the epoch: %+v", tx)
	}
}

func TestEpochExhaustion(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	if err := txncoord.Seed(e.dir, map[string]txncoord.SeedRecord{
		"t": {State: "CompleteCommit", ProducerID: 7, PrevProducerID: -1, Epoch: math.MaxInt16 - 2, LastEpoch: -1, TimeoutMs: 1000, StartMs: -1},
	}); err != nil {
		t.Fatal(err)
	}
	e.open()
	// 32765 -> 32766, the last epoch handed out for producer id 7.
	pid, epoch, err := e.c.InitProducerID("t", testTimeout, 7, math.MaxInt16-2)
	if err != nil || pid != 7 || epoch != math.MaxInt16-1 {
		t.Fatalf("bump to the last epoch: %d %d %v", pid, epoch, err)
	}
	// Exhausted: a new producer id at epoch 0.
	pid, epoch, err = e.c.InitProducerID("t", testTimeout, 7, math.MaxInt16-1)
	if err != nil || pid != 1000 || epoch != 0 {
		t.Fatalf("exhausted: %d %d %v", pid, epoch, err)
	}
	// A retry naming the old producer id at its exhausted epoch gets
	// the same answer (KIP-360).
	pid, epoch, err = e.c.InitProducerID("t", testTimeout, 7, math.MaxInt16-1)
	if err != nil || pid != 1000 || epoch != 0 {
		t.Fatalf("retry after rotation: %d %d %v", pid, epoch, err)
	}
	// The old producer id at another epoch is fenced.
	_, _, err = e.c.InitProducerID("t", testTimeout, 7, 3)
	wantErr(t, "old producer id", err, txncoord.ErrProducerFenced)
	// A produce with the old producer id is an old epoch.
	e.add("t", 1000, 0, tpA0)
	_, err = e.c.BeginProduce("t", 7, math.MaxInt16-1, tpA0)
	wantErr(t, "produce with the rotated producer id", err, txncoord.ErrInvalidProducerEpoch)
	e.end("t", 1000, 0, true)
	// The new producer id bumps as usual, and survives a reopen.
	e.reopen()
	pid, epoch, err = e.c.InitProducerID("t", testTimeout, 1000, 0)
	if err != nil || pid != 1000 || epoch != 1 {
		t.Fatalf("after rotation: %d %d %v", pid, epoch, err)
	}
}

// TestEpochExhaustionOngoing: an ongoing transaction at the last epoch
// is aborted with epoch 32767, and the id moves to a new producer id.
func TestEpochExhaustionOngoing(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	if err := txncoord.Seed(e.dir, map[string]txncoord.SeedRecord{
		"t": {State: "Ongoing", ProducerID: 7, PrevProducerID: -1, Epoch: math.MaxInt16 - 1, LastEpoch: -1, TimeoutMs: 60000, StartMs: e.clock.Now().UnixMilli(), Partitions: []txncoord.TopicPartition{tpA0}},
	}); err != nil {
		t.Fatal(err)
	}
	e.open()
	pid, epoch := e.init("t")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("init: %d %d", pid, epoch)
	}
	wantMarkers(t, e.markers.take(), marker{tpA0, 7, math.MaxInt16, false, e.c.CoordinatorEpoch()})
}

func TestTransactionCommitAndAbort(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpB0, tpA1)
	start := e.clock.Now()
	e.clock.Advance(time.Second)
	e.add("t", pid, epoch, tpA0, tpB0) // one new, one again
	tx := e.wantState("t", "Ongoing")
	if !slices.Equal(tx.Partitions, []txncoord.TopicPartition{tpA0, tpA1, tpB0}) || !tx.Start.Equal(start) {
		t.Fatalf("ongoing: %+v", tx)
	}
	wantEvents(t, e.events.take(), txncoord.EventBegun)
	e.end("t", pid, epoch, true)
	ce := e.c.CoordinatorEpoch()
	wantMarkers(t, e.markers.take(),
		marker{tpA0, pid, epoch, true, ce}, marker{tpA1, pid, epoch, true, ce}, marker{tpB0, pid, epoch, true, ce})
	tx = e.wantState("t", "CompleteCommit")
	// The start time stays, as in Kafka.
	if len(tx.Partitions) != 0 || !tx.Start.Equal(start) {
		t.Fatalf("complete: %+v", tx)
	}
	wantEvents(t, e.events.take(), txncoord.EventCommitted)
	// A retry of the same decision succeeds, writing nothing; the
	// other decision is refused.
	e.end("t", pid, epoch, true)
	wantErr(t, "abort after commit", e.c.EndTxn("t", pid, epoch, false), txncoord.ErrInvalidTxnState)
	wantMarkers(t, e.markers.take())

	// The next transaction of the same producer, aborted.
	e.add("t", pid, epoch, tpA0)
	tx = e.wantState("t", "Ongoing")
	if !slices.Equal(tx.Partitions, []txncoord.TopicPartition{tpA0}) {
		t.Fatalf("second transaction: %+v", tx)
	}
	e.end("t", pid, epoch, false)
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, false, ce})
	e.wantState("t", "CompleteAbort")
	wantEvents(t, e.events.take(), txncoord.EventBegun, txncoord.EventAborted)
	e.end("t", pid, epoch, false)
	wantErr(t, "commit after abort", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrInvalidTxnState)

	// Reopened, the retry still succeeds.
	e.reopen()
	e.end("t", pid, epoch, false)
	wantMarkers(t, e.markers.take())
}

func TestEndTxnRefusals(t *testing.T) {
	e := newEnv(t)
	wantErr(t, "unknown id", e.c.EndTxn("t", 1, 0, true), txncoord.ErrInvalidProducerIDMapping)
	pid, epoch := e.init("t")
	// Empty: no transaction begun. Kafka answers INVALID_TXN_STATE for
	// either decision.
	wantErr(t, "commit in Empty", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrInvalidTxnState)
	wantErr(t, "abort in Empty", e.c.EndTxn("t", pid, epoch, false), txncoord.ErrInvalidTxnState)
	e.add("t", pid, epoch, tpA0)
	wantErr(t, "other producer id", e.c.EndTxn("t", pid+1, epoch, true), txncoord.ErrInvalidProducerIDMapping)
	wantErr(t, "newer epoch", e.c.EndTxn("t", pid, epoch+1, true), txncoord.ErrProducerFenced)
	wantErr(t, "empty id", e.c.EndTxn("", pid, epoch, true), txncoord.ErrInvalidRequest)
	e.wantState("t", "Ongoing")
	wantMarkers(t, e.markers.take())
}

func TestAddPartitionsRefusals(t *testing.T) {
	e := newEnv(t)
	tps := []txncoord.TopicPartition{tpA0}
	wantErr(t, "unknown id", e.c.AddPartitions("t", 1, 0, tps), txncoord.ErrInvalidProducerIDMapping)
	pid, epoch := e.init("t")
	wantErr(t, "other producer id", e.c.AddPartitions("t", pid+1, epoch, tps), txncoord.ErrInvalidProducerIDMapping)
	e.init("t")
	wantErr(t, "old epoch", e.c.AddPartitions("t", pid, epoch, tps), txncoord.ErrProducerFenced)
	wantErr(t, "bad partition", e.c.AddPartitions("t", pid, epoch+1, []txncoord.TopicPartition{{Topic: "a", Partition: -1}}), txncoord.ErrInvalidRequest)
	e.wantState("t", "Empty")
	// Nothing to add with no transaction: still Empty.
	e.add("t", pid, epoch+1)
	e.wantState("t", "Empty")
}

// TestAddPartitionsNoWrite: partitions already in the ongoing
// transaction are a success without a write; a new one is a lazy write
// (no commit of its own: it rides the decision's), and
// AddPartitionsDurable commits before it returns.
func TestAddPartitionsNoWrite(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	commits := 0
	e.cfg.OnCommit = func(error) { mu.Lock(); commits++; mu.Unlock() }
	e.reopen()
	count := func() int { mu.Lock(); defer mu.Unlock(); return commits }
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0, tpA1)
	before := count()
	e.add("t", pid, epoch, tpA1, tpA0)
	e.add("t", pid, epoch, tpA0)
	if n := count() - before; n != 0 {
		t.Fatalf("%d commits for partitions already added", n)
	}
	e.add("t", pid, epoch, tpB0)
	if n := count() - before; n != 0 {
		t.Fatalf("%d commits for a new partition, want 0 (a lazy write)", n)
	}
	if err := e.c.AddPartitionsDurable("t", pid, epoch, []txncoord.TopicPartition{{Topic: "__consumer_offsets", Partition: 7}}); err != nil {
		t.Fatal(err)
	}
	if n := count() - before; n != 1 {
		t.Fatalf("%d commits for a durable add, want 1", n)
	}
	if got := e.state("t").Partitions; len(got) != 4 {
		t.Fatalf("partitions %v, want 4", got)
	}
}

// TestMarkersFail: a marker write that fails leaves the decision
// (PrepareX), refused to everything but its own retry, which writes the
// markers again; the other decision is refused.
func TestMarkersFail(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0, tpA1)
	boom := errors.New("disk on fire")
	e.markers.setFail(boom)
	if err := e.c.EndTxn("t", pid, epoch, true); !errors.Is(err, boom) {
		t.Fatalf("end with failing markers: %v", err)
	}
	e.wantState("t", "PrepareCommit")
	wantErr(t, "add while prepared", e.c.AddPartitions("t", pid, epoch, []txncoord.TopicPartition{tpB0}), txncoord.ErrConcurrentTransactions)
	_, _, err := e.c.InitProducerID("t", testTimeout, -1, -1)
	wantErr(t, "init while prepared", err, txncoord.ErrConcurrentTransactions)
	wantErr(t, "abort while commit prepared", e.c.EndTxn("t", pid, epoch, false), txncoord.ErrInvalidTxnState)
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "produce while prepared", err, txncoord.ErrInvalidTxnState)
	e.markers.setFail(nil)
	e.end("t", pid, epoch, true)
	ce := e.c.CoordinatorEpoch()
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, true, ce}, marker{tpA1, pid, epoch, true, ce})
	e.wantState("t", "CompleteCommit")

	// The timeout scan retries a failed decision too.
	e.add("t", pid, epoch, tpB0)
	e.markers.setFail(boom)
	if err := e.c.EndTxn("t", pid, epoch, false); !errors.Is(err, boom) {
		t.Fatalf("end with failing markers: %v", err)
	}
	e.c.CheckTimeouts()
	e.wantState("t", "PrepareAbort")
	e.markers.setFail(nil)
	e.c.CheckTimeouts()
	e.wantState("t", "CompleteAbort")
	wantMarkers(t, e.markers.take(), marker{tpB0, pid, epoch, false, ce})
}

// TestInitAbortsOngoing: InitProducerID fences an ongoing transaction:
// ABORT markers with the bumped epoch, before the answer, which is the
// epoch bumped again.
func TestInitAbortsOngoing(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0, tpB0)
	e.events.take()
	pid2, epoch2 := e.init("t")
	if pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("init over an ongoing transaction: %d %d, want %d %d", pid2, epoch2, pid, epoch+2)
	}
	ce := e.c.CoordinatorEpoch()
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch + 1, false, ce}, marker{tpB0, pid, epoch + 1, false, ce})
	wantEvents(t, e.events.take(), txncoord.EventAborted)
	e.wantState("t", "Empty")
	// The fenced producer.
	wantErr(t, "fenced end", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrProducerFenced)
	_, err := e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "fenced produce", err, txncoord.ErrInvalidProducerEpoch)

	// KIP-360: the producer naming its own current epoch while its
	// transaction is ongoing is fenced after the abort, as Kafka's
	// retry finds the epoch bumped by the fence.
	e.add("t", pid2, epoch2, tpA0)
	_, _, err = e.c.InitProducerID("t", testTimeout, pid2, epoch2)
	wantErr(t, "init naming the current epoch over an ongoing transaction", err, txncoord.ErrProducerFenced)
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch2 + 1, false, ce})
	e.wantState("t", "CompleteAbort")

	// Markers failing: the error, the decision kept.
	e.init("t")
	tx := e.state("t")
	e.add("t", tx.ProducerID, tx.Epoch, tpA0)
	e.markers.setFail(errors.New("no"))
	if _, _, err := e.c.InitProducerID("t", testTimeout, -1, -1); err == nil {
		t.Fatal("init with failing markers succeeded")
	}
	e.wantState("t", "PrepareAbort")
}

func TestBeginProduce(t *testing.T) {
	e := newEnv(t)
	_, err := e.c.BeginProduce("t", 1, 0, tpA0)
	wantErr(t, "unknown id", err, txncoord.ErrInvalidProducerIDMapping)
	pid, epoch := e.init("t")
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "no transaction", err, txncoord.ErrInvalidTxnState)
	e.add("t", pid, epoch, tpA0)
	_, err = e.c.BeginProduce("t", pid, epoch, tpA1)
	wantErr(t, "partition not added", err, txncoord.ErrInvalidTxnState)
	_, err = e.c.BeginProduce("t", pid+1, epoch, tpA0)
	wantErr(t, "other producer id", err, txncoord.ErrInvalidProducerIDMapping)
	_, err = e.c.BeginProduce("t", pid, epoch+1, tpA0)
	wantErr(t, "other epoch", err, txncoord.ErrInvalidProducerEpoch)
	rel1, err := e.c.BeginProduce("t", pid, epoch, tpA0)
	if err != nil {
		t.Fatal(err)
	}
	rel2, err := e.c.BeginProduce("t", pid, epoch, tpA0) // shared
	if err != nil {
		t.Fatal(err)
	}
	rel1()
	rel1() // twice is harmless
	rel2()
	e.end("t", pid, epoch, true)
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "after commit", err, txncoord.ErrInvalidTxnState)
	// A newer producer fences the old one's produces.
	e.add("t", pid, epoch, tpA0)
	e.init("t")
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "fenced", err, txncoord.ErrInvalidProducerEpoch)
}

// TestBeginProduceBlocksEndTxn: a produce admitted holds the markers of
// its transaction back until it releases; EndTxn waits for it, and a
// produce arriving while the markers are written waits for them and is
// refused.
func TestBeginProduceBlocksEndTxn(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	release, err := e.c.BeginProduce("t", pid, epoch, tpA0)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- e.c.EndTxn("t", pid, epoch, true) }()
	// Wait until EndTxn has taken the decision (the id is busy). Adding
	// a partition already added checks that without changing anything.
	for {
		err := e.c.AddPartitions("t", pid, epoch, []txncoord.TopicPartition{tpA0})
		if errors.Is(err, txncoord.ErrConcurrentTransactions) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-ended:
			t.Fatalf("EndTxn returned while a produce was admitted: %v", err)
		default:
		}
		time.Sleep(time.Millisecond) // a poll, not an assertion
	}
	// EndTxn is waiting for the produce: no marker yet.
	if got := e.markers.take(); len(got) != 0 {
		t.Fatalf("markers written while a produce was admitted: %v", got)
	}
	select {
	case err := <-ended:
		t.Fatalf("EndTxn returned while a produce was admitted: %v", err)
	default:
	}
	release()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if got := e.markers.take(); len(got) == 0 || got[0] != (marker{tpA0, pid, epoch, true, e.c.CoordinatorEpoch()}) {
		t.Fatalf("markers after release: %v", got)
	}

	// A produce arriving while the markers are being written waits for
	// them, then is refused.
	e.add("t", pid, epoch, tpA0)
	e.markers.mu.Lock()
	e.markers.entered = make(chan marker)
	e.markers.block = make(chan struct{})
	e.markers.mu.Unlock()
	go func() { ended <- e.c.EndTxn("t", pid, epoch, false) }()
	<-e.markers.entered // the ABORT marker is being written
	produced := make(chan error, 1)
	go func() {
		rel, err := e.c.BeginProduce("t", pid, epoch, tpA0)
		if err == nil {
			rel()
		}
		produced <- err
	}()
	close(e.markers.block)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	wantErr(t, "produce during the markers", <-produced, txncoord.ErrInvalidTxnState)
}

// TestConcurrentEndTxn: while one EndTxn writes its markers, a second
// call for the id gets ErrConcurrentTransactions; once done, the retry
// succeeds.
func TestConcurrentEndTxn(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.markers.mu.Lock()
	e.markers.entered = make(chan marker, 1)
	e.markers.block = make(chan struct{})
	e.markers.mu.Unlock()
	ended := make(chan error, 1)
	go func() { ended <- e.c.EndTxn("t", pid, epoch, true) }()
	<-e.markers.entered
	wantErr(t, "second EndTxn", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrConcurrentTransactions)
	_, _, err := e.c.InitProducerID("t", testTimeout, -1, -1)
	wantErr(t, "init during EndTxn", err, txncoord.ErrConcurrentTransactions)
	wantErr(t, "add during EndTxn", e.c.AddPartitions("t", pid, epoch, []txncoord.TopicPartition{tpB0}), txncoord.ErrConcurrentTransactions)
	if tx := e.state("t"); tx.State != "PrepareCommit" {
		t.Fatalf("during the markers: %+v", tx)
	}
	close(e.markers.block)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	e.end("t", pid, epoch, true)
}

func TestTimeout(t *testing.T) {
	e := newEnv(t)
	pid, epoch, err := e.c.InitProducerID("t", 10*time.Second, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	e.add("t", pid, epoch, tpA0, tpA1)
	other, otherEpoch := e.init("u") // a minute: not due
	e.add("u", other, otherEpoch, tpB0)
	e.events.take()
	e.clock.Advance(10 * time.Second)
	e.c.CheckTimeouts()
	e.wantState("t", "Ongoing") // start + timeout is not before now
	e.clock.Advance(time.Millisecond)
	e.c.CheckTimeouts()
	tx := e.wantState("t", "CompleteAbort")
	if tx.Epoch != epoch+1 {
		t.Fatalf("timed out: epoch %d, want %d", tx.Epoch, epoch+1)
	}
	ce := e.c.CoordinatorEpoch()
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch + 1, false, ce}, marker{tpA1, pid, epoch + 1, false, ce})
	wantEvents(t, e.events.take(), txncoord.EventTimedOut, txncoord.EventAborted)
	e.wantState("u", "Ongoing")
	// The timed-out producer is fenced: 90 on EndTxn, 47 on produce.
	wantErr(t, "end after timeout", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrProducerFenced)
	wantErr(t, "abort after timeout", e.c.EndTxn("t", pid, epoch, false), txncoord.ErrProducerFenced)
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "produce after timeout", err, txncoord.ErrInvalidProducerEpoch)
	// The next producer of the id carries on.
	if _, ep := e.init("t"); ep != epoch+2 {
		t.Fatalf("init after the timeout: epoch %d", ep)
	}
}

// TestTimeoutScanRuns: the scan runs on its own every CheckInterval.
func TestTimeoutScanRuns(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	timedOut := make(chan struct{}, 1)
	e.cfg.CheckInterval = time.Millisecond
	e.cfg.Events = func(ev txncoord.Event) {
		if ev == txncoord.EventAborted {
			select {
			case timedOut <- struct{}{}:
			default:
			}
		}
	}
	e.open()
	pid, epoch, err := e.c.InitProducerID("t", time.Second, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	e.add("t", pid, epoch, tpA0)
	e.clock.Advance(time.Hour)
	<-timedOut
	e.wantState("t", "CompleteAbort")
}

func TestClosed(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	_, _, err := e.c.InitProducerID("t", testTimeout, -1, -1)
	wantErr(t, "init", err, txncoord.ErrClosed)
	wantErr(t, "add", e.c.AddPartitions("t", pid, epoch, []txncoord.TopicPartition{tpA1}), txncoord.ErrClosed)
	wantErr(t, "end", e.c.EndTxn("t", pid, epoch, true), txncoord.ErrClosed)
	_, err = e.c.BeginProduce("t", pid, epoch, tpA0)
	wantErr(t, "produce", err, txncoord.ErrClosed)
}

// TestTimeoutCountedOnce: a timed-out transaction whose abort decision
// fails to be written stays Ongoing and the next scan aborts it; it is
// reported timed out once, when its decision is durable, not at each
// attempt.
func TestTimeoutCountedOnce(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.events.take()
	e.clock.Advance(testTimeout + time.Millisecond)
	failed, restore := failAppendOnce()
	e.c.CheckTimeouts()
	restore()
	if !failed() {
		t.Fatal("the scan wrote nothing")
	}
	e.wantState("t", "Ongoing")
	e.c.CheckTimeouts()
	e.wantState("t", "CompleteAbort")
	wantEvents(t, e.events.take(), txncoord.EventTimedOut, txncoord.EventAborted)
}
