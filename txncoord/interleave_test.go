package txncoord_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore/txncoord"
)

// TestCloseAfterFailedLazyCommit: a lazy AddPartitions whose commit
// fails (here the one Close makes of the writes it holds) is not in the
// file, which is written anew from the state before it, while the
// partition keeps the producer's data. Close must then not write the
// close record: the next Open has to look for that data, and aborts the
// transaction no record lists, rather than leave it open in its
// partition, holding the last stable offset back forever.
func TestCloseAfterFailedLazyCommit(t *testing.T) {
	defer txncoord.SetLazyDelay(time.Hour)()
	e := newEnv(t)
	pid, epoch := e.init("t")
	e.add("t", pid, epoch, tpA0)
	e.markers.setOpen(tpA0, pid, 0) // the data the producer wrote
	failed, restore := failAppendOnce()
	e.c.Close() // commits the held AddPartitions: that commit fails
	restore()
	if !failed() {
		t.Fatal("Close made no commit")
	}
	data, err := os.ReadFile(filepath.Join(e.dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := txncoord.DecodeLog(data); err != nil || st.Closed {
		t.Fatalf("closed %v, %v; want no close record after a lost write", st.Closed, err)
	}
	e.open()
	wantMarkers(t, e.markers.take(), marker{tpA0, pid, epoch + 1, false, e.c.CoordinatorEpoch()})
	if tx := e.wantState("t", "CompleteAbort"); tx.Epoch != epoch+1 {
		t.Fatalf("t at epoch %d, want %d", tx.Epoch, epoch+1)
	}
}
