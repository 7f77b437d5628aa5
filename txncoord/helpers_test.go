package txncoord_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// fakeIDs hands out producer ids from next upward.
type fakeIDs struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (f *fakeIDs) NewProducerID() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	id := f.next
	f.next++
	return id, nil
}

// marker is one marker of a WriteMarkers call.
type marker struct {
	TP               txncoord.TopicPartition
	ProducerID       int64
	Epoch            int16
	Commit           bool
	CoordinatorEpoch int32
}

func (m marker) String() string {
	return fmt.Sprintf("%s-%d pid %d epoch %d commit %v coord %d", m.TP.Topic, m.TP.Partition, m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch)
}

// fakeMarkers records markers; fail, when set, fails them (nothing
// recorded); block, when set, is received from before each write
// (entered is sent to first, when set). open plays the partitions'
// open transactions (setOpen; a marker written ends one), listed counts
// the OpenTransactions calls, and syncs, when set, decides when (and
// how) the markers' sync returns.
type fakeMarkers struct {
	mu      sync.Mutex
	written []marker
	fail    error
	entered chan marker
	block   chan struct{}
	open    map[openKey]int64
	listed  int
	// syncs, when set, is received from for the result of each wait
	// for markers' durability.
	syncs chan error
}

type openKey struct {
	tp  txncoord.TopicPartition
	pid int64
}

// setOpen makes producer pid's transaction open in tp from first on.
func (f *fakeMarkers) setOpen(tp txncoord.TopicPartition, pid, first int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[openKey]int64{}
	}
	f.open[openKey{tp, pid}] = first
}

func (f *fakeMarkers) firstOffset(tp txncoord.TopicPartition, pid int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if first, ok := f.open[openKey{tp, pid}]; ok {
		return first
	}
	return -1
}

func (f *fakeMarkers) WriteMarkers(d txncoord.Decision) (func() error, error) {
	for i, tp := range d.Partitions {
		if !d.Due(i, f.firstOffset(tp, d.ProducerID)) {
			continue
		}
		if err := f.writeMarker(tp, d.ProducerID, d.Epoch, d.Commit, d.CoordinatorEpoch); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	syncs := f.syncs
	f.mu.Unlock()
	return func() error {
		if syncs != nil {
			return <-syncs
		}
		return nil
	}, nil
}

func (f *fakeMarkers) TxnFirstOffsets(tps []txncoord.TopicPartition, pid int64) ([]int64, error) {
	firsts := make([]int64, len(tps))
	for i, tp := range tps {
		firsts[i] = f.firstOffset(tp, pid)
	}
	return firsts, nil
}

func (f *fakeMarkers) OpenTransactions() ([]txncoord.OpenTransaction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed++
	var out []txncoord.OpenTransaction
	for k, first := range f.open {
		out = append(out, txncoord.OpenTransaction{TP: k.tp, ProducerID: k.pid, FirstOffset: first})
	}
	return out, nil
}

func (f *fakeMarkers) writeMarker(tp txncoord.TopicPartition, pid int64, epoch int16, commit bool, ce int32) error {
	m := marker{tp, pid, epoch, commit, ce}
	f.mu.Lock()
	entered, block := f.entered, f.block
	f.mu.Unlock()
	if entered != nil {
		entered <- m
	}
	if block != nil {
		<-block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.written = append(f.written, m)
	delete(f.open, openKey{tp, pid})
	return nil
}

func (f *fakeMarkers) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

// take returns the markers written since the last take.
func (f *fakeMarkers) take() []marker {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.written
	f.written = nil
	return out
}

// env is a coordinator on a directory with fakes around it.
type env struct {
	t       *testing.T
	dir     string
	ids     *fakeIDs
	markers *fakeMarkers
	clock   *testutil.Clock
	events  *eventLog
	cfg     txncoord.Config
	c       *txncoord.Coordinator
}

type eventLog struct {
	mu  sync.Mutex
	got []txncoord.Event
}

func (l *eventLog) add(e txncoord.Event) {
	l.mu.Lock()
	l.got = append(l.got, e)
	l.mu.Unlock()
}

func (l *eventLog) take() []txncoord.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

const testTimeout = time.Minute

var (
	tpA0 = txncoord.TopicPartition{Topic: "a", Partition: 0}
	tpA1 = txncoord.TopicPartition{Topic: "a", Partition: 1}
	tpB0 = txncoord.TopicPartition{Topic: "b", Partition: 0}
)

// newEnv opens a coordinator in a new directory. The timeout scan runs
// only when a test calls CheckTimeouts (its interval is a day).
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), ids: &fakeIDs{next: 1000}, markers: &fakeMarkers{},
		clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), events: &eventLog{}}
	e.cfg = txncoord.Config{CheckInterval: 24 * time.Hour, Now: e.clock.Now, Events: e.events.add}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	c, err := txncoord.Open(e.dir, e.ids, e.markers, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
	e.t.Cleanup(func() { c.Close() })
}

func (e *env) reopen() {
	e.t.Helper()
	if err := e.c.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

func (e *env) init(id string) (int64, int16) {
	e.t.Helper()
	pid, epoch, err := e.c.InitProducerID(id, testTimeout, -1, -1)
	if err != nil {
		e.t.Fatalf("init %q: %v", id, err)
	}
	return pid, epoch
}

func (e *env) add(id string, pid int64, epoch int16, tps ...txncoord.TopicPartition) {
	e.t.Helper()
	if err := e.c.AddPartitions(id, pid, epoch, tps); err != nil {
		e.t.Fatalf("add partitions %q: %v", id, err)
	}
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) {
	e.t.Helper()
	if err := e.c.EndTxn(id, pid, epoch, commit); err != nil {
		e.t.Fatalf("end %q commit %v: %v", id, commit, err)
	}
}

// state returns the state of id, "" when unknown.
func (e *env) state(id string) txncoord.Transaction {
	e.t.Helper()
	tx, ok := e.c.Describe(id)
	if !ok {
		e.t.Fatalf("%q unknown", id)
	}
	return tx
}

func (e *env) wantState(id, want string) txncoord.Transaction {
	e.t.Helper()
	tx := e.state(id)
	if tx.State != want {
		e.t.Fatalf("%q is %s, want %s (%+v)", id, tx.State, want, tx)
	}
	return tx
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func wantMarkers(t *testing.T, got []marker, want ...marker) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("markers\n%v\nwant\n%v", got, want)
	}
}

func wantEvents(t *testing.T, got []txncoord.Event, want ...txncoord.Event) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// failAppendOnce makes the next commit of transactions.db fail after its
// append ("appended"), as an I/O error would; failed reports whether
// one did. restore undoes it.
func failAppendOnce() (failed func() bool, restore func()) {
	var mu sync.Mutex
	fails := 1
	restore = txncoord.SetStepHook(func(s string) error {
		mu.Lock()
		defer mu.Unlock()
		if s == "appended" && fails > 0 {
			fails--
			return errors.New("I/O error")
		}
		return nil
	})
	return func() bool { mu.Lock(); defer mu.Unlock(); return fails == 0 }, restore
}
