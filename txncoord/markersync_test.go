package txncoord_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// stateOnDisk is id's state in dir's transactions.db as a crash now
// would leave it ("" when the file has no record of it).
func stateOnDisk(t *testing.T, dir, id string) string {
	t.Helper()
	for _, tx := range readDir(t, crashCopy(t, dir)) {
		if tx.TransactionalID == id {
			return tx.State
		}
	}
	return ""
}

// TestEndTxnBeforeMarkersDurable: EndTxn answers once its decision is
// durable and its markers written; the markers become durable in the
// background. Until they are, the file keeps the decision (so Open
// would write the markers again) and no later record of the id reaches
// it: the next transaction's AddPartitions is not queued, and its
// EndTxn waits for the markers, trying their sync again when the
// background wait failed, and fails while they still fail.
func TestEndTxnBeforeMarkersDurable(t *testing.T) {
	defer txncoord.SetLazyDelay(time.Millisecond)()
	e := newEnv(t)
	syncs := make(chan error)
	e.markers.syncs = syncs
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.end("t", pid, epoch, true)
	e.wantState("t", "CompleteCommit")
	e.add("t", pid, epoch, tpA1) // the next transaction begins
	e.wantState("t", "Ongoing")
	syncs <- errors.New("fsync failed") // the background wait
	if got := stateOnDisk(t, e.dir, "t"); got != "PrepareCommit" {
		t.Fatalf("on disk while the markers are not durable: %s, want PrepareCommit", got)
	}
	ended := make(chan error)
	go func() { ended <- e.c.EndTxn("t", pid, epoch, false) }()
	syncs <- errors.New("fsync failed again") // its retry
	if err := <-ended; err == nil || !strings.Contains(err.Error(), "fsync failed again") {
		t.Fatalf("EndTxn while the last decision's markers fail: %v", err)
	}
	e.wantState("t", "Ongoing")
	if got := stateOnDisk(t, e.dir, "t"); got != "PrepareCommit" {
		t.Fatalf("on disk after the failed EndTxn: %s, want PrepareCommit", got)
	}
	go func() { ended <- e.c.EndTxn("t", pid, epoch, false) }()
	syncs <- nil // the retry works
	syncs <- nil // the abort's own markers
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, true, 1}, marker{tpA1, pid, epoch, false, 1})
	for stateOnDisk(t, e.dir, "t") != "CompleteAbort" {
		time.Sleep(time.Millisecond) // the lazy Complete, within lazyDelay
	}
}

// TestCloseWithMarkersNotDurable: a coordinator closed while a
// decision's markers are not durable does not write the close record,
// so the next Open writes them again and looks for data no record
// lists.
func TestCloseWithMarkersNotDurable(t *testing.T) {
	e := newEnv(t)
	logs := &testutil.LockedBuffer{}
	e.cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e.reopen()
	syncs := make(chan error, 1)
	e.markers.syncs = syncs
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.markers.setOpen(tpA0, pid, 0)
	syncs <- errors.New("fsync failed")
	e.end("t", pid, epoch, true)
	e.markers.setOpen(tpA0, pid, 0) // the marker was lost
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(e.dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := txncoord.DecodeLog(data); err != nil || st.Closed {
		t.Fatalf("closed %v, %v; want no close record", st.Closed, err)
	}
	if !strings.Contains(logs.String(), "not durable") {
		t.Fatalf("log:\n%s", logs.String())
	}
	e.markers.syncs = nil
	e.markers.take()
	listed := e.markers.listed
	e.open()
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch, true, e.c.CoordinatorEpoch()})
	if e.markers.listed != listed+1 {
		t.Fatal("Open did not look for unlisted transactions")
	}
	e.wantState("t", "CompleteCommit")
}
