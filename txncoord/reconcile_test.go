package txncoord_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// crashCopy is the coordinator's file as a crash now would leave it
// (every commit is synced, so the file as it is), in a new directory.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := txncoord.DecodeLog(data)
	if err != nil || st.Closed {
		t.Fatalf("the running coordinator's file: closed %v, %v", st.Closed, err)
	}
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, txncoord.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLostAddPartitionsAborted: AddPartitions answers before its write
// is durable. A crash that loses it while the partition holds the
// producer's data leaves a transaction no record lists: Open aborts it
// with the epoch bumped, so the producer is fenced (its EndTxn is
// refused, not taken for a retry), and the partition is left with no
// open transaction.
func TestLostAddPartitionsAborted(t *testing.T) {
	defer txncoord.SetLazyDelay(time.Hour)()
	for _, previous := range []string{"none", "committed"} {
		t.Run(previous, func(t *testing.T) {
			e := newEnv(t)
			pid, epoch := e.init("t")
			if previous == "committed" {
				// The last record on disk is then the previous
				// transaction's PrepareCommit (its Complete held, then
				// replaced by the next AddPartitions).
				e.add("t", pid, epoch, tpA0, tpA1)
				e.markers.setOpen(tpA0, pid, 0)
				e.markers.setOpen(tpA1, pid, 0)
				e.end("t", pid, epoch, true)
				e.markers.take()
			}
			e.add("t", pid, epoch, tpA0, tpB0)
			e.markers.setOpen(tpA0, pid, 10) // the data the producer wrote
			e.markers.setOpen(tpB0, pid, 3)
			dir := crashCopy(t, e.dir)

			markers := &fakeMarkers{open: map[openKey]int64{{tpA0, pid}: 10, {tpB0, pid}: 3, {tpA1, 99}: 5}}
			logs := &testutil.LockedBuffer{}
			c, err := txncoord.Open(dir, e.ids, markers, txncoord.Config{CheckInterval: time.Hour, Now: e.clock.Now, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ce := c.CoordinatorEpoch()
			// Only the abort: the previous decision's markers are
			// written already where it had data, and would end the
			// new transaction in A0.
			wantMarkers(t, markers.take(), marker{tpA0, pid, epoch + 1, false, ce}, marker{tpB0, pid, epoch + 1, false, ce})
			tx, _ := c.Describe("t")
			if tx.State != "CompleteAbort" || tx.Epoch != epoch+1 {
				t.Fatalf("after Open: %+v, want CompleteAbort at epoch %d", tx, epoch+1)
			}
			wantErr(t, "EndTxn of the fenced producer", c.EndTxn("t", pid, epoch, true), txncoord.ErrProducerFenced)
			// Producer 99 is no transactional id's: logged, left open.
			if _, ok := markers.open[openKey{tpA1, 99}]; !ok || !strings.Contains(logs.String(), "no transactional id maps to") {
				t.Fatalf("the foreign transaction: open %v; log:\n%s", markers.open, logs.String())
			}
		})
	}
}

// TestCleanCloseKeepsOngoing: after a clean Close (every lazy write
// committed, then the close record) Open does not list the partitions'
// open transactions: an ongoing transaction is kept and can commit.
// After a crash it lists them, and keeps a transaction its record lists.
func TestCleanCloseKeepsOngoing(t *testing.T) {
	defer txncoord.SetLazyDelay(time.Hour)()
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.markers.setOpen(tpA0, pid, 4)
	crashed := crashCopy(t, e.dir)
	listed := e.markers.listed
	e.reopen()
	if n := e.markers.listed - listed; n != 0 {
		t.Fatalf("Open after a clean close listed open transactions %d times", n)
	}
	e.wantState("t", "Ongoing")
	e.end("t", pid, epoch, true)
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, true, e.c.CoordinatorEpoch()})

	// The crash copy lost the AddPartitions: it is aborted.
	markers := &fakeMarkers{open: map[openKey]int64{{tpA0, pid}: 4}}
	c, err := txncoord.Open(crashed, e.ids, markers, txncoord.Config{CheckInterval: time.Hour, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if markers.listed != 1 || len(markers.take()) != 1 {
		t.Fatalf("Open after a crash: listed %d times", markers.listed)
	}
	// A transaction its record lists stays ongoing through a crash.
	pid, epoch, err = c.InitProducerID("u", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitionsDurable("u", pid, epoch, []txncoord.TopicPartition{tpB0}); err != nil {
		t.Fatal(err)
	}
	markers.setOpen(tpB0, pid, 0)
	again := crashCopy(t, crashed)
	c.Close()
	c, err = txncoord.Open(again, e.ids, markers, txncoord.Config{CheckInterval: time.Hour, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tx, _ := c.Describe("u"); tx.State != "Ongoing" || len(markers.take()) != 0 {
		t.Fatalf("u after the crash: %+v", tx)
	}
	if err := c.EndTxn("u", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
}

// TestPreparedMarkersWhereDue: Open finishes a decision on disk by
// writing its marker only where it is due: where the producer's open
// transaction still begins at the first offset the decision recorded,
// or, where it recorded none (-1), where none is open. A decision
// recorded before first offsets were kept writes every marker.
func TestPreparedMarkersWhereDue(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	start := e.clock.Now().UnixMilli()
	tpB1 := txncoord.TopicPartition{Topic: "b", Partition: 1}
	if err := txncoord.Seed(e.dir, map[string]txncoord.SeedRecord{
		"t": {State: "PrepareCommit", ProducerID: 5, PrevProducerID: -1, Epoch: 3, LastEpoch: -1, TimeoutMs: 1000, StartMs: start, LastUpdateMs: start,
			Partitions: []txncoord.TopicPartition{tpA0, tpA1, tpB0, tpB1}, FirstOffsets: []int64{10, 20, -1, -1}},
		"old": {State: "PrepareAbort", ProducerID: 6, PrevProducerID: -1, Epoch: 0, LastEpoch: -1, TimeoutMs: 1000, StartMs: start, LastUpdateMs: start,
			Partitions: []txncoord.TopicPartition{tpA0, tpB0}},
	}); err != nil {
		t.Fatal(err)
	}
	e.markers.setOpen(tpA0, 5, 10) // due
	e.markers.setOpen(tpA1, 5, 25) // a later transaction: not due
	e.markers.setOpen(tpB1, 5, 7)  // a later transaction where it had none
	e.markers.setOpen(tpA0, 6, 2)  // "old" has no first offsets: every marker
	e.open()
	ce := e.c.CoordinatorEpoch()
	wantMarkers(t, e.markers.take(),
		marker{tpA0, 6, 0, false, ce}, marker{tpB0, 6, 0, false, ce}, // "old", in id order
		marker{tpA0, 5, 3, true, ce}, marker{tpB0, 5, 3, true, ce},
		// The later transactions of producer 5 no record lists: aborted,
		// fenced.
		marker{tpA1, 5, 4, false, ce}, marker{tpB1, 5, 4, false, ce})
	e.wantState("old", "CompleteAbort")
	if tx := e.wantState("t", "CompleteAbort"); tx.Epoch != 4 {
		t.Fatalf("t at epoch %d, want 4", tx.Epoch)
	}
}
