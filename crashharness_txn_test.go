package logstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/segment"
)

// txnCrashPoint is one moment of the transactional workload: the files,
// the snapshot db, and the ABORT entries acknowledged by then.
type txnCrashPoint struct {
	what    string
	fs      *crashfs.FS
	db      []byte
	aborted int // len(acked aborts) then
}

// TestTxnIndexCrashRecovery runs transactions (data, COMMIT and ABORT
// markers, plain batches, small segments so the markers land in several)
// on a crashfs, and crashes after every filesystem operation, in a mode
// the seed picks. After each open of the image: every acknowledged ABORT
// has its entry, the LSO is the one the recovered log gives, and after a
// clean close `check` finds nothing wrong: each .txnindex equals the
// rebuild from the log.
func TestTxnIndexCrashRecovery(t *testing.T) {
	env := crashtest.Env{Root: t.TempDir(), Topic: "txn", Opts: crashtest.WithSegments(logstore.Options{Sync: logstore.SyncAlways, ProducerExpiry: -1}, 400, 0)}
	if err := env.SetDB(nil); err != nil {
		t.Fatal(err)
	}
	fs := crashfs.New(env.Root)
	s, p, err := env.ReopenAsIs(fs)
	if err != nil {
		t.Fatal(err)
	}
	var acked []segment.AbortedTxn
	var points []txnCrashPoint
	what := "open"
	// mu is held by the workload except while it calls the store: the
	// store's background work (a roll's flush and snapshot save) calls
	// the hook from its own goroutines, and must see the acknowledgements
	// as they were before the call in flight.
	var mu sync.Mutex
	mu.Lock()
	outside := func(fn func()) {
		mu.Unlock()
		defer mu.Lock()
		fn()
	}
	fs.SetHook(func(op crashfs.Op) {
		mu.Lock()
		defer mu.Unlock()
		n := len(acked)
		db, err := env.ReadDB()
		if err != nil {
			t.Error(err)
			return
		}
		points = append(points, txnCrashPoint{what: what + ": after " + op.String(), fs: fs.Clone(), db: db, aborted: n})
	})
	rng := rand.New(rand.NewPCG(7, 14))
	type txnProducer struct {
		pid   int64
		seq   int32
		first int64 // -1: no transaction open
	}
	prods := []*txnProducer{{pid: 1, first: -1}, {pid: 2, first: -1}, {pid: 3, first: -1}}
	plainSeq := int32(0)
	for step := range 120 {
		pr := prods[rng.IntN(len(prods))]
		switch x := rng.IntN(10); {
		case x < 5:
			what = fmt.Sprintf("step %d: producer %d sends", step, pr.pid)
			var res logstore.AppendResult
			var err error
			outside(func() { res, err = p.Append(txnDataBatch(pr.pid, 0, pr.seq, 1)) })
			if err != nil {
				t.Fatal(err)
			}
			pr.seq++
			if pr.first < 0 {
				pr.first = res.BaseOffset
			}
		case x < 8 && pr.first >= 0:
			commit := x == 7 && rng.IntN(2) == 0
			what = fmt.Sprintf("step %d: producer %d ends (commit %v)", step, pr.pid, commit)
			lso := int64(-1)
			for _, o := range prods {
				if o != pr && o.first >= 0 && (lso < 0 || o.first < lso) {
					lso = o.first
				}
			}
			var res logstore.AppendResult
			var err error
			outside(func() { res, err = p.AppendMarker(pr.pid, 0, commit, 0) })
			if err != nil {
				t.Fatal(err)
			}
			if lso < 0 {
				lso = res.LastOffset + 1
			}
			if !commit {
				acked = append(acked, segment.AbortedTxn{ProducerID: pr.pid, FirstOffset: pr.first, LastOffset: res.LastOffset, LastStableOffset: lso})
			}
			pr.first = -1
		default:
			what = fmt.Sprintf("step %d: a plain idempotent batch", step)
			var err error
			outside(func() { _, err = p.Append(producerBatch(9, 0, plainSeq, 2, crashtest.Timestamp)) })
			if err != nil {
				t.Fatal(err)
			}
			plainSeq += 2
		}
	}
	what = "close"
	var cerr error
	outside(func() { cerr = s.Close() })
	mu.Unlock()
	if cerr != nil {
		t.Fatal(cerr)
	}
	fs.SetHook(nil)
	if len(acked) < 3 {
		t.Fatalf("only %d aborts", len(acked))
	}
	got, err := p.AbortedTransactions(0, 1<<62)
	if err == nil {
		t.Fatalf("closed partition answered %v", got)
	}
	// Every other point (a third in -short), in a mode the seed picks,
	// keeps the test within seconds; the last point always.
	every := 2
	if testing.Short() {
		every = 3
	}
	for i, cp := range points {
		mode := crashfs.Modes[rng.IntN(len(crashfs.Modes))]
		if i%every != 0 && i != len(points)-1 {
			continue
		}
		img := cp.fs.Crash(mode, rand.New(rand.NewPCG(uint64(i), 1)))
		if err := checkTxnImage(env, img, cp, acked[:cp.aborted]); err != nil {
			t.Fatalf("point %d (%s), crash %s: %v", i, cp.what, mode, err)
		}
	}
}

func checkTxnImage(env crashtest.Env, img *crashfs.FS, cp txnCrashPoint, acked []segment.AbortedTxn) error {
	s, p, err := env.Open(img, cp.db)
	if err != nil {
		return err
	}
	got, err := p.AbortedTransactions(p.StartOffset(), p.EndOffset())
	if err != nil {
		return err
	}
	for _, a := range acked {
		if !slices.Contains(got, a) {
			return fmt.Errorf("acknowledged abort %+v missing from %+v (end %d, recovery %+v, startup snapshot %d, replayed %d)", a, got, p.EndOffset(), p.Recovery(), p.Startup().SnapshotOffset, p.Startup().ReplayedBatches)
		}
	}
	batches, err := crashtest.ReadLog(p)
	if err != nil {
		return err
	}
	open := map[int64]int64{}
	for _, b := range batches {
		if !b.Attributes().Transactional() {
			continue
		}
		if b.Attributes().Control() {
			delete(open, b.ProducerID())
		} else if _, ok := open[b.ProducerID()]; !ok {
			open[b.ProducerID()] = b.BaseOffset()
		}
	}
	want := p.EndOffset()
	for _, f := range open {
		want = min(want, f)
	}
	if lso := p.LastStableOffset(); lso != want {
		return fmt.Errorf("LSO %d, the recovered log gives %d", lso, want)
	}
	if err := s.Close(); err != nil {
		return err
	}
	var problems []logstore.Problem
	c := logstore.Checker{FS: img, Report: func(pr logstore.Problem) {
		if pr.Kind != logstore.ProblemNote {
			problems = append(problems, pr)
		}
	}}
	if _, err := c.Check(env.Root); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("check after recovery:\n%s", chkText(problems))
	}
	return nil
}
