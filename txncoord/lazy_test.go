package txncoord_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// commitLog records the commits of transactions.db (Config.OnCommit)
// with a copy of the file as each left it.
type commitLog struct {
	t     *testing.T
	dir   string
	mu    sync.Mutex
	files [][]byte
	ch    chan struct{}
}

func newCommitLog(t *testing.T, dir string) *commitLog {
	return &commitLog{t: t, dir: dir, ch: make(chan struct{}, 64)}
}

func (l *commitLog) onCommit(err error) {
	if err != nil {
		l.t.Errorf("commit: %v", err)
	}
	data, rerr := os.ReadFile(filepath.Join(l.dir, txncoord.FileName))
	if rerr != nil {
		l.t.Errorf("read the file at a commit: %v", rerr)
	}
	l.mu.Lock()
	l.files = append(l.files, data)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func (l *commitLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.files)
}

// stateOnDisk is the state of id in the file as the last commit left it.
func (l *commitLog) stateOnDisk(id string) string {
	l.t.Helper()
	l.mu.Lock()
	data := l.files[len(l.files)-1]
	l.mu.Unlock()
	dir := l.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, txncoord.FileName), data, 0o644); err != nil {
		l.t.Fatal(err)
	}
	txns, err := txncoord.Read(dir, time.Second)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, tx := range txns {
		if tx.TransactionalID == id {
			return tx.State
		}
	}
	return ""
}

// TestLazyCompleteCostsNoCommit: the Complete state EndTxn records after
// its markers costs no commit of its own, nor does AddPartitions: the
// Complete is replaced by the next transaction's AddPartitions, which
// is replaced by its decision, the one commit of a transaction; with no
// write after it, the lazy timer commits the Complete.
func TestLazyCompleteCostsNoCommit(t *testing.T) {
	defer txncoord.SetLazyDelay(time.Hour)()
	e := &env{t: t, dir: t.TempDir(), ids: &fakeIDs{next: 1000}, markers: &fakeMarkers{},
		clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), events: &eventLog{}}
	commits := newCommitLog(t, e.dir)
	e.cfg = txncoord.Config{CheckInterval: 24 * time.Hour, Now: e.clock.Now, Events: e.events.add, OnCommit: commits.onCommit}
	e.open()
	base := commits.count() // Open's
	pid, epoch := e.init("t")
	for i := range 5 {
		e.add("t", pid, epoch, tpA0, tpA1)
		e.end("t", pid, epoch, i%2 == 0)
		// Give a committer that would commit the Complete on its own
		// the time to (nothing is asserted about time).
		time.Sleep(10 * time.Millisecond)
	}
	// Per transaction: PrepareX; the Complete and the AddPartitions
	// were replaced by the next write of the id.
	if got, want := commits.count()-base, 1+5; got != want {
		t.Fatalf("%d commits for init and 5 transactions, want %d", got, want)
	}
	if got := commits.stateOnDisk("t"); got != "PrepareCommit" {
		t.Fatalf("on disk before the lazy timer: %s, want PrepareCommit", got)
	}
	e.wantState("t", "CompleteCommit")
	// Close commits a Complete still held.
	e.add("t", pid, epoch, tpB0)
	e.end("t", pid, epoch, false)
	n := commits.count()
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if commits.count() != n+1 {
		t.Fatalf("close: %d commits, want 1", commits.count()-n)
	}
	if got := commits.stateOnDisk("t"); got != "CompleteAbort" {
		t.Fatalf("on disk after close: %s, want CompleteAbort", got)
	}

	// With no write after it, the lazy timer commits the Complete.
	txncoord.SetLazyDelay(time.Millisecond)
	e.open()
	e.add("t", pid, epoch, tpA0)
	e.end("t", pid, epoch, true)
	for commits.stateOnDisk("t") != "CompleteCommit" {
		select {
		case <-commits.ch:
		case <-time.After(testTimeout):
			t.Fatal("the lazy Complete was never committed")
		}
	}
}
