package txncoord_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// ids lists the transactional ids List reports.
func ids(c *txncoord.Coordinator) []string {
	var out []string
	for _, tx := range c.List() {
		out = append(out, tx.TransactionalID)
	}
	return out
}

// replayed is the state the record file holds now: its ids.
func replayed(t *testing.T, dir string) map[string][]byte {
	data, err := os.ReadFile(filepath.Join(dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := txncoord.DecodeLog(data)
	if err != nil {
		t.Fatal(err)
	}
	return st.Records
}

// TestExpireIdleIDs: ids idle for the expiration (7 days by default) in
// Empty, CompleteCommit and CompleteAbort are forgotten, durably; an id
// with a transaction ongoing, or idle just under the expiration, stays.
func TestExpireIdleIDs(t *testing.T) {
	e := newEnv(t)
	e.init("empty")
	pid, epoch := e.init("commit")
	e.add("commit", pid, epoch, tpA0)
	e.end("commit", pid, epoch, true)
	pid, epoch = e.init("abort")
	e.add("abort", pid, epoch, tpA0)
	e.end("abort", pid, epoch, false)
	pid, epoch = e.init("ongoing")
	e.add("ongoing", pid, epoch, tpB0)
	e.clock.Advance(time.Millisecond)
	e.init("recent")
	e.events.take()

	// One millisecond short of the expiration for all but "recent".
	e.clock.Advance(txncoord.DefaultIDExpiration - 2*time.Millisecond)
	e.c.ExpireIDs()
	if got, want := ids(e.c), []string{"abort", "commit", "empty", "ongoing", "recent"}; !slices.Equal(got, want) {
		t.Fatalf("before the expiration: %v, want %v", got, want)
	}
	wantEvents(t, e.events.take())

	e.clock.Advance(time.Millisecond) // exactly the expiration: Kafka's <=
	e.c.ExpireIDs()
	if got, want := ids(e.c), []string{"ongoing", "recent"}; !slices.Equal(got, want) {
		t.Fatalf("after the expiration: %v, want %v", got, want)
	}
	wantEvents(t, e.events.take(), txncoord.EventExpired, txncoord.EventExpired, txncoord.EventExpired)
	for _, id := range []string{"empty", "commit", "abort"} {
		if tx, ok := e.c.Describe(id); ok {
			t.Fatalf("%s expired and still described: %+v", id, tx)
		}
	}
	// The tombstones are durable: the file replays without the ids.
	recs := replayed(t, e.dir)
	for _, id := range []string{"empty", "commit", "abort"} {
		if _, ok := recs[id]; ok {
			t.Fatalf("the file still holds %s", id)
		}
	}
	if _, ok := recs["ongoing"]; !ok {
		t.Fatal("the file lost the ongoing id")
	}

	e.reopen()
	if got, want := ids(e.c), []string{"ongoing", "recent"}; !slices.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
	e.wantState("ongoing", "Ongoing")
	// An ongoing transaction never expires, however old.
	e.clock.Advance(30 * txncoord.DefaultIDExpiration)
	e.c.ExpireIDs()
	if got, want := ids(e.c), []string{"ongoing"}; !slices.Equal(got, want) {
		t.Fatalf("a month on: %v, want %v", got, want)
	}
}

// TestExpiredIDReturns: an id that comes back after expiring gets a new
// producer id at epoch 0, never one handed out before; its old producer
// is unknown.
func TestExpiredIDReturns(t *testing.T) {
	e := newEnv(t)
	old, oldEpoch := e.init("x")
	e.init("x")
	pid, epoch := e.init("x")
	e.add("x", pid, epoch, tpA0)
	e.end("x", pid, epoch, true)
	e.clock.Advance(txncoord.DefaultIDExpiration)
	e.c.ExpireIDs()
	if _, ok := e.c.Describe("x"); ok {
		t.Fatal("x did not expire")
	}
	wantErr(t, "the old producer's AddPartitions", e.c.AddPartitions("x", pid, epoch, []txncoord.TopicPartition{tpA0}), txncoord.ErrInvalidProducerIDMapping)
	// KIP-360: the old producer naming its producer id and epoch is
	// treated as a new id, as Kafka does for an unknown one.
	npid, nepoch, err := e.c.InitProducerID("x", testTimeout, pid, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if npid <= max(old, pid) || nepoch != 0 {
		t.Fatalf("returning id: producer id %d epoch %d; before it had %d epoch %d, then %d", npid, nepoch, old, oldEpoch, pid)
	}
	e.reopen()
	if tx := e.wantState("x", "Empty"); tx.ProducerID != npid || tx.Epoch != 0 {
		t.Fatalf("after reopen: %+v", tx)
	}
}

// TestExpireTombstoneCompaction: a compaction drops the expired id and
// its tombstone; reopening keeps it forgotten.
func TestExpireTombstoneCompaction(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	e.cfg.CompactBytes = 1
	e.open()
	pid, epoch := e.init("gone-after-expiry")
	e.add("gone-after-expiry", pid, epoch, tpA0)
	e.end("gone-after-expiry", pid, epoch, false)
	e.init("kept")
	e.clock.Advance(txncoord.DefaultIDExpiration - time.Millisecond)
	e.init("kept")
	e.clock.Advance(time.Millisecond)
	e.c.ExpireIDs()
	data, err := os.ReadFile(filepath.Join(e.dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("gone-after-expiry")) {
		t.Fatal("the compaction after the tombstone kept the expired id")
	}
	if !bytes.Contains(data, []byte("kept")) {
		t.Fatal("the compaction lost the live id")
	}
	e.reopen()
	if got, want := ids(e.c), []string{"kept"}; !slices.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

// TestExpireNever: a negative IDExpiration expires nothing.
func TestExpireNever(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	e.cfg.IDExpiration = -1
	e.open()
	e.init("x")
	e.clock.Advance(100 * txncoord.DefaultIDExpiration)
	e.c.ExpireIDs()
	e.wantState("x", "Empty")
}

// TestExpireOlderRecord: a record written before last update times were
// kept (record version 1) counts as updated at the Open that reads it.
func TestExpireOlderRecord(t *testing.T) {
	dir := t.TempDir()
	if err := txncoord.Seed(dir, map[string]txncoord.SeedRecord{
		"old": {State: "CompleteCommit", ProducerID: 7, Epoch: 3, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: -1},
	}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, ids: &fakeIDs{next: 1000}, markers: &fakeMarkers{},
		clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), events: &eventLog{}}
	e.cfg = txncoord.Config{CheckInterval: 24 * time.Hour, Now: e.clock.Now, Events: e.events.add}
	e.open()
	e.clock.Advance(txncoord.DefaultIDExpiration - time.Millisecond)
	e.reopen() // the stamp of the first Open is durable
	e.c.ExpireIDs()
	e.wantState("old", "CompleteCommit")
	e.clock.Advance(time.Millisecond)
	e.c.ExpireIDs()
	if _, ok := e.c.Describe("old"); ok {
		t.Fatal("the older record did not expire an expiration after its first Open")
	}
}

// TestExpireScanRuns: the expiration rides the periodic scan.
func TestExpireScanRuns(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	expired := make(chan struct{}, 1)
	e.cfg.CheckInterval = time.Millisecond
	e.cfg.IDExpiration = time.Hour
	e.cfg.Events = func(ev txncoord.Event) {
		if ev == txncoord.EventExpired {
			select {
			case expired <- struct{}{}:
			default:
			}
		}
	}
	e.open()
	e.init("x")
	e.clock.Advance(time.Hour)
	<-expired
	if _, ok := e.c.Describe("x"); ok {
		t.Fatal("x expired and is still described")
	}
	if got := txncoord.EventExpired.String(); got != "expired" {
		t.Fatalf("EventExpired is %q", got)
	}
}

// TestExpirePendingAndFailed: while an id's tombstone is being committed
// a call for it gets ErrConcurrentTransactions (Kafka's pending Dead)
// and Describe still shows it; a tombstone whose commit fails leaves the
// id as it was, in memory and after reopen, and the next scan expires
// it.
func TestExpirePendingAndFailed(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("x")
	e.clock.Advance(txncoord.DefaultIDExpiration)

	entered, release := make(chan struct{}), make(chan struct{})
	fail := errors.New("disk full")
	restore := txncoord.SetStepHook(func(s string) error {
		if s != "appended" {
			return nil
		}
		entered <- struct{}{}
		<-release
		return fail
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.ExpireIDs()
	}()
	<-entered
	_, _, err := e.c.InitProducerID("x", testTimeout, -1, -1)
	wantErr(t, "init while the tombstone is committed", err, txncoord.ErrConcurrentTransactions)
	e.wantState("x", "Empty")
	close(release)
	<-done
	restore()
	if tx := e.wantState("x", "Empty"); tx.ProducerID != pid {
		t.Fatalf("after the failed tombstone: %+v", tx)
	}
	wantEvents(t, e.events.take())
	e.reopen()
	e.wantState("x", "Empty")
	e.c.ExpireIDs()
	if _, ok := e.c.Describe("x"); ok {
		t.Fatal("the next scan did not expire x")
	}
}
