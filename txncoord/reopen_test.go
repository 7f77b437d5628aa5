package txncoord_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/txncoord"
)

// TestReopenEachState: every state survives Close and Open as it was,
// and the coordinator epoch goes up by one at every Open.
func TestReopenEachState(t *testing.T) {
	e := newEnv(t)
	if got := e.c.CoordinatorEpoch(); got != 1 {
		t.Fatalf("first coordinator epoch %d, want 1", got)
	}
	pe, epe := e.init("empty")
	po, epo := e.init("ongoing")
	e.add("ongoing", po, epo, tpA1, tpA0)
	pc, epc := e.init("committed")
	e.add("committed", pc, epc, tpA0)
	e.end("committed", pc, epc, true)
	pa, epa := e.init("aborted")
	e.add("aborted", pa, epa, tpB0)
	e.end("aborted", pa, epa, false)
	before := e.c.List()
	e.markers.take()
	e.reopen()
	if got := e.c.CoordinatorEpoch(); got != 2 {
		t.Fatalf("coordinator epoch after a reopen %d, want 2", got)
	}
	after := e.c.List()
	if !slices.EqualFunc(before, after, equalTxn) {
		t.Fatalf("after reopen\n%+v\nwant\n%+v", after, before)
	}
	wantMarkers(t, e.markers.take()) // nothing to finish
	// Each carries on from where it was.
	e.add("empty", pe, epe, tpA0)
	e.end("ongoing", po, epo, true)
	wantMarkers(t, e.markers.take(), marker{tpA0, po, epo, true, 2}, marker{tpA1, po, epo, true, 2})
	e.end("committed", pc, epc, true)
	e.end("aborted", pa, epa, false)
	// Ongoing keeps its start for the timeout.
	e.reopen()
	e.clock.Advance(testTimeout + time.Millisecond)
	e.c.CheckTimeouts()
	e.wantState("empty", "CompleteAbort")
}

func equalTxn(a, b txncoord.Transaction) bool {
	return a.TransactionalID == b.TransactionalID && a.ProducerID == b.ProducerID && a.Epoch == b.Epoch &&
		a.State == b.State && a.Timeout == b.Timeout && a.Start.Equal(b.Start) && slices.Equal(a.Partitions, b.Partitions)
}

// TestOpenFinishesPrepared: a decision whose markers were not all
// written (a crash, here a failing marker write then Close) is finished
// by Open, with the new coordinator epoch, before it returns; if the
// markers still fail, Open fails and says which transaction.
func TestOpenFinishesPrepared(t *testing.T) {
	for _, commit := range []bool{true, false} {
		e := newEnv(t)
		pid, epoch := e.init("t")
		e.add("t", pid, epoch, tpA0, tpB0)
		e.markers.setFail(errors.New("down"))
		if err := e.c.EndTxn("t", pid, epoch, commit); err == nil {
			t.Fatal("EndTxn with failing markers succeeded")
		}
		if err := e.c.Close(); err != nil {
			t.Fatal(err)
		}
		// Still failing: Open refuses.
		_, err := txncoord.Open(e.dir, e.ids, e.markers, e.cfg)
		if err == nil || !strings.Contains(err.Error(), `"t"`) {
			t.Fatalf("open with failing markers: %v", err)
		}
		e.markers.setFail(nil)
		e.open()
		ce := e.c.CoordinatorEpoch()
		if ce != 3 {
			t.Fatalf("coordinator epoch %d, want 3", ce)
		}
		wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, commit, ce}, marker{tpB0, pid, epoch, commit, ce})
		want := "CompleteAbort"
		if commit {
			want = "CompleteCommit"
		}
		e.wantState("t", want)
		e.end("t", pid, epoch, commit) // the client's retry succeeds
		// Complete is durable after Open's repair: nothing to redo.
		e.reopen()
		wantMarkers(t, e.markers.take())
		e.wantState("t", want)
	}
}

// TestLazyCompleteRedone: a prepared record on disk whose markers were
// written already (the lazy Complete was lost in a crash) is finished
// again: the markers are written a second time, which the partitions
// take as a no-op (see the package doc; the crash test checks it on a
// real store).
func TestLazyCompleteRedone(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	start := e.clock.Now().UnixMilli()
	if err := txncoord.Seed(e.dir, map[string]txncoord.SeedRecord{
		"t": {State: "PrepareCommit", ProducerID: 5, PrevProducerID: -1, Epoch: 3, LastEpoch: -1, TimeoutMs: 1000, StartMs: start, Partitions: []txncoord.TopicPartition{tpA0}},
	}); err != nil {
		t.Fatal(err)
	}
	e.open()
	wantMarkers(t, e.markers.take(), marker{tpA0, 5, 3, true, e.c.CoordinatorEpoch()})
	e.wantState("t", "CompleteCommit")
}

func TestDamaged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
		key   string // a *DamagedError naming this key
	}{
		{"garbage file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, txncoord.FileName), []byte(strings.Repeat("not a bbolt file ", 1000)), 0o644)
		}, ""},
		{"truncated file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, txncoord.FileName), []byte{1, 2, 3}, 0o644)
		}, ""},
		{"bad record", func(dir string) error {
			return txncoord.PutRaw(dir, "transactions", []byte("tx-9"), []byte{1, 0, 0})
		}, "tx-9"},
		{"unknown record version", func(dir string) error {
			return txncoord.PutRaw(dir, "transactions", []byte("tx-8"), []byte{9})
		}, "tx-8"},
		{"unknown format version", func(dir string) error {
			return txncoord.PutRaw(dir, "meta", []byte("version"), []byte{2})
		}, "version"},
		{"bad coordinator epoch", func(dir string) error {
			return txncoord.PutRaw(dir, "meta", []byte("coordinator-epoch"), []byte{1, 2})
		}, "coordinator-epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			_, err := txncoord.Open(dir, &fakeIDs{}, &fakeMarkers{}, txncoord.Config{})
			if !errors.Is(err, txncoord.ErrDamaged) {
				t.Fatalf("open: %v, want ErrDamaged", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, txncoord.FileName)) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			if tc.key != "" {
				var de *txncoord.DamagedError
				if !errors.As(err, &de) || de.Key != tc.key {
					t.Fatalf("error %v, want a *DamagedError for key %q", err, tc.key)
				}
			}
			// The read-only Read refuses it too.
			if _, err := txncoord.Read(dir, time.Second); !errors.Is(err, txncoord.ErrDamaged) {
				t.Fatalf("read: %v, want ErrDamaged", err)
			}
		})
	}
}
