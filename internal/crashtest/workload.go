package crashtest

// The crash workloads: small, seeded client histories run against a
// store on a crashfs.FS, recording a crash point after every filesystem
// operation.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// Workload is the shape of a workload; the seed fills it in.
type Workload struct {
	Name      string
	Steps     int
	Producers int
	Sync      logstore.SyncMode
	SegBytes  int64
	Retention int64 // RetentionBytes, 0 for none
	Restarts  bool  // clean and unclean closes and reopens along the way
	Sample    int   // check one crash point in Sample, chosen by the seed (0, 1: all)
}

// crashPoint is one moment a crash is tried at: the filesystem as it was
// then (unsynced state included), the snapshot db as last committed, and
// what the oracle must find.
type crashPoint struct {
	n    int    // index among the run's points: what LOGSTORE_CRASH_POINT names
	what string // the workload step and the operation
	fs   *crashfs.FS
	db   []byte
	tl   int // len(timeline) then
	ack  int // acknowledged batches then
}

// crashProducer is a client's view of one idempotent producer.
type crashProducer struct {
	pid        int64
	epoch      int16 // the epoch it sends with
	storeEpoch int16 // the newest epoch the store accepted from it
	next       int32
	window     []int // timeline indices of its newest accepted batches in epoch, oldest first
	registered bool  // the store accepted a batch of epoch
}

// Run is one workload being run.
type Run struct {
	t    testing.TB
	w    Workload
	seed uint64
	rng  *rand.Rand
	env  Env

	fs    *crashfs.FS
	store *logstore.Store
	p     *logstore.Partition

	tl     Timeline
	acked  int
	prods  []*crashProducer
	step   int
	what   string
	points []crashPoint
	lastDB []byte
	record bool
	err    error // the first failure seen inside a hook

	// mu is held by the workload's goroutine except while it calls the
	// store. The store's background work (a roll's flush and snapshot
	// save) calls hook from its own goroutines: taking mu, it sees the
	// workload's state (step, timeline, acknowledgements) as it is
	// during a store call, never half changed.
	mu sync.Mutex
}

// outside calls fn, a call into the store, without mu held.
func (r *Run) outside(fn func()) {
	r.mu.Unlock()
	defer r.mu.Lock()
	fn()
}

// NewRun prepares workload w with seed, in a temporary directory of t.
func NewRun(t testing.TB, w Workload, seed uint64) *Run {
	r := &Run{
		t: t, w: w, seed: seed,
		rng: rand.New(rand.NewPCG(seed, 0x10657)),
		env: Env{
			Root:  t.TempDir(),
			Topic: "crash",
			Opts:  WithSegments(logstore.Options{Sync: w.Sync, ProducerExpiry: -1}, w.SegBytes, w.Retention),
		},
		record: true,
	}
	for i := range w.Producers {
		r.prods = append(r.prods, &crashProducer{pid: int64(100 + i)})
	}
	return r
}

// fail reports a failure of the workload itself (not of a crash image)
// with what replays it.
func (r *Run) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("workload %s seed %d step %d (%s): %s\nreplay: LOGSTORE_CRASH_SEED=%d go test -run 'TestCrashRecovery/%s' .",
		r.w.Name, r.seed, r.step, r.what, fmt.Sprintf(format, args...), r.seed, r.w.Name)
}

// hook records a crash point after every filesystem operation. The db is
// read here: bbolt commits happen between operations, and each returns
// only once it is durable, so the file read is the last committed state.
// When a commit came since the previous operation, the moment just after
// it (the previous filesystem state, the new db) is a point too.
func (r *Run) hook(op crashfs.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.record || r.err != nil {
		return
	}
	db, err := r.env.ReadDB()
	if err != nil {
		r.err = err
		return
	}
	r.commitPoint(db)
	r.points = append(r.points, crashPoint{
		n:    len(r.points),
		what: fmt.Sprintf("step %d %s: after %s", r.step, r.what, op),
		fs:   r.fs.Clone(), // after the reads above: nothing acknowledged is missing from it
		db:   db,
		tl:   len(r.tl),
		ack:  r.acked,
	})
}

// open opens the store on fs and the partition.
func (r *Run) open() {
	r.t.Helper()
	r.fs.SetHook(r.hook)
	var s *logstore.Store
	var p *logstore.Partition
	var err error
	r.outside(func() { s, p, err = r.env.ReopenAsIs(r.fs) })
	if err != nil {
		r.fail("open: %v", err)
	}
	r.store, r.p = s, p
}

// Run runs the workload and closes the store cleanly at the end.
func (r *Run) Run() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.env.SetDB(nil); err != nil {
		r.t.Fatal(err)
	}
	r.fs = crashfs.New(r.env.Root)
	r.what = "open"
	r.open()
	for r.step = 1; r.step <= r.w.Steps; r.step++ {
		r.doStep()
		if r.err != nil {
			r.fail("%v", r.err)
		}
	}
	r.what = "close"
	r.closeStore()
	r.finish()
}

// finish records the point after the last operation with the final db.
func (r *Run) finish() {
	db, err := r.env.ReadDB()
	if err != nil {
		r.t.Fatal(err)
	}
	r.commitPoint(db)
	r.fs.SetHook(nil)
}

// commitPoint records, when a snapshot commit came since the last point
// (db differs from the db then), the moment just after it: the previous
// filesystem state with the new db.
func (r *Run) commitPoint(db []byte) {
	if !bytes.Equal(db, r.lastDB) && len(r.points) > 0 {
		prev := r.points[len(r.points)-1]
		prev.n, prev.db, prev.what = len(r.points), db, prev.what+", then a snapshot commit"
		r.points = append(r.points, prev)
	}
	r.lastDB = db
}

func (r *Run) doStep() {
	r.t.Helper()
	pr := r.prods[r.rng.IntN(len(r.prods))]
	switch x := r.rng.IntN(100); {
	case x < 55 || !pr.registered:
		r.what = fmt.Sprintf("producer %d sends seq %d", pr.pid, pr.next)
		r.sendNext(pr)
		if r.rng.IntN(5) == 0 {
			// The ack was lost on the way: the producer retries the
			// batch in flight.
			r.what += ", retried"
			r.retry(pr, len(pr.window)-1)
		}
	case x < 68:
		i := r.rng.IntN(len(pr.window))
		r.what = fmt.Sprintf("producer %d retries window entry %d", pr.pid, i)
		r.retry(pr, i)
	case x < 74:
		r.what = fmt.Sprintf("producer %d bumps its epoch to %d", pr.pid, pr.epoch+1)
		pr.epoch++
		pr.next, pr.window, pr.registered = 0, nil, false
		r.sendNext(pr)
	case x < 79:
		if pr.storeEpoch == 0 {
			r.what = fmt.Sprintf("producer %d leaves a gap", pr.pid)
			r.expectRefused(ProducerBatch(pr.pid, pr.epoch, pr.next+1, 1, Timestamp), logstore.ErrOutOfOrder)
			return
		}
		r.what = fmt.Sprintf("zombie of producer %d sends with epoch %d", pr.pid, pr.storeEpoch-1)
		r.expectRefused(ProducerBatch(pr.pid, pr.storeEpoch-1, 1000, 1, Timestamp), logstore.ErrFenced)
	case x < 85:
		r.what = "a batch without a producer"
		r.send(PlainBatch(fmt.Sprintf("plain %d", r.step)), nil)
	case x < 92 && r.w.Restarts:
		r.what = "clean close and reopen"
		r.closeStore()
		r.open()
	case x < 100 && r.w.Restarts:
		r.crashAndReopen()
	default:
		r.what = fmt.Sprintf("producer %d sends seq %d", pr.pid, pr.next)
		r.sendNext(pr)
	}
}

func (r *Run) closeStore() {
	r.t.Helper()
	var err error
	r.outside(func() { err = r.store.Close() })
	if err != nil {
		r.fail("close: %v", err)
	}
}

// append calls Partition.Append outside mu.
func (r *Run) append(b []byte) (res logstore.AppendResult, err error) {
	r.outside(func() { res, err = r.p.Append(b) })
	return res, err
}

// sendNext sends pr's next batch of 1 to 5 records: it must be accepted.
func (r *Run) sendNext(pr *crashProducer) {
	n := 1 + r.rng.IntN(5)
	b := ProducerBatch(pr.pid, pr.epoch, pr.next, n, Timestamp+int64(r.step))
	r.send(b, pr)
	pr.next = recordbatch.IncrementSequence(pr.next, int32(n))
	pr.storeEpoch, pr.registered = pr.epoch, true
}

// send appends b, which must be accepted at the log end. The batch joins
// the timeline before the append, as the batch in flight.
func (r *Run) send(b []byte, pr *crashProducer) {
	r.t.Helper()
	base := r.p.EndOffset()
	r.tl = append(r.tl, NewWritten(b, base))
	res, err := r.append(b)
	if err != nil || res.Duplicate || res.BaseOffset != base {
		r.fail("append: %+v, %v; want OK at %d", res, err, base)
	}
	r.acked = len(r.tl)
	if pr != nil {
		pr.window = append(pr.window, len(r.tl)-1)
		if len(pr.window) > producerstate.WindowSize {
			pr.window = pr.window[1:]
		}
	}
}

// retry sends again the batch of pr's window at i: a DUPLICATE with its
// offsets.
func (r *Run) retry(pr *crashProducer, i int) {
	r.t.Helper()
	w := r.tl[pr.window[i]]
	res, err := r.append(bytes.Clone(w.Data))
	if err != nil || !res.Duplicate || res.BaseOffset != w.Base || res.LastOffset != w.Last {
		r.fail("retry of seq %d: %+v, %v; want DUPLICATE %d..%d", w.Seq, res, err, w.Base, w.Last)
	}
}

func (r *Run) expectRefused(b []byte, want error) {
	r.t.Helper()
	end := r.p.EndOffset()
	if _, err := r.append(b); !errors.Is(err, want) {
		r.fail("got %v, want %v", err, want)
	}
	if r.p.EndOffset() != end {
		r.fail("a refused batch moved the log end")
	}
}

// crashAndReopen crashes the workload's own machine mid-run: the store is
// abandoned, a crashed image of its files (and the db as committed) is
// opened, checked, and the lost batches are sent again, so the run goes
// on from the same timeline. The recovery's own operations are crash
// points too.
func (r *Run) crashAndReopen() {
	r.t.Helper()
	mode := crashfs.Modes[r.rng.IntN(len(crashfs.Modes))]
	r.what = "crash (" + mode.String() + ") and reopen"
	img := r.fs.Crash(mode, rand.New(rand.NewPCG(r.seed, uint64(r.step))))
	db, err := r.env.ReadDB()
	if err != nil {
		r.t.Fatal(err)
	}
	// Let go of the old store: its close writes to the old filesystem,
	// which is gone, and commits a snapshot to the real db, which is put
	// back as it was at the crash.
	r.fs.SetHook(nil)
	r.outside(func() { r.store.Close() })
	if err := r.env.SetDB(db); err != nil {
		r.t.Fatal(err)
	}
	r.fs = img
	acked := r.acked
	durable := r.w.Sync == logstore.SyncAlways || mode == crashfs.KeepAll
	if !durable {
		// What survived is known once the store has opened; until then
		// (the crash points of the recovery itself) nothing acknowledged
		// is owed.
		r.acked = 0
	}
	r.open()
	if err := Oracle(r.p, Expect{Timeline: r.tl, Acked: acked, Durable: durable}, CheckOptions{}); err != nil {
		r.fail("after the crash: %v", err)
	}
	// What was lost is no longer acknowledged; its producers send it
	// again.
	r.acked = min(acked, r.tl.Index(r.p.EndOffset()))
	r.outside(func() { err = ResendLost(r.p, r.tl) })
	if err != nil {
		r.fail("%v", err)
	}
	r.acked = len(r.tl)
}

// Stats counts what a sweep did.
type Stats struct {
	Recorded, Points, Images, Checked, Skipped int
}

// CheckPoints crashes every recorded point in every mode and checks each
// distinct image. only, when >= 0, limits it to one point; mode, when
// set, to one mode.
func (r *Run) CheckPoints(only int, modes []crashfs.Mode, reopenEvery int) Stats {
	r.t.Helper()
	st := Stats{Recorded: len(r.points)}
	seen := map[[32]byte]bool{}
	for _, cp := range r.points {
		if only >= 0 && cp.n != only {
			continue
		}
		if only < 0 && r.w.Sample > 1 && RNG(r.seed, 0x5a4d91e+uint64(cp.n)).IntN(r.w.Sample) != 0 {
			continue
		}
		st.Points++
		for _, mode := range modes {
			st.Images++
			rng := rand.New(rand.NewPCG(r.seed, uint64(cp.n)<<8|uint64(mode)))
			img := cp.fs.Crash(mode, rng)
			key := imageKey(img, cp)
			if seen[key] {
				st.Skipped++
				continue
			}
			seen[key] = true
			st.Checked++
			ex := Expect{Timeline: r.tl[:cp.tl], Acked: cp.ack, Durable: r.w.Sync == logstore.SyncAlways || mode == crashfs.KeepAll}
			o := CheckOptions{Resend: true, NewAppend: true, Reopen: reopenEvery > 0 && st.Checked%reopenEvery == 0}
			if reopenEvery > 0 && st.Checked%reopenEvery == 1 {
				o = CheckOptions{Diverge: true}
			}
			if err := r.env.CheckImage(img, cp.db, ex, o); err != nil {
				r.t.Fatalf("workload %s seed %d, crash point %d (%s), mode %s: %v\nreplay: LOGSTORE_CRASH_SEED=%d LOGSTORE_CRASH_POINT=%d LOGSTORE_CRASH_MODE=%s go test -run 'TestCrashRecovery/%s' .",
					r.w.Name, r.seed, cp.n, cp.what, mode, err, r.seed, cp.n, mode, r.w.Name)
			}
		}
	}
	return st
}

// imageKey identifies what a check of img at cp sees: the files, the db,
// and the oracle's expectations.
func imageKey(img *crashfs.FS, cp crashPoint) [32]byte {
	h := sha256.New()
	d := img.Digest()
	h.Write(d[:])
	db := sha256.Sum256(cp.db)
	h.Write(db[:])
	fmt.Fprintf(h, "%t %d %d", cp.db == nil, cp.tl, cp.ack)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// EnvInt reads an integer environment variable, def when unset.
func EnvInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// RNG is the random source of one decision, seeded by what replays it.
func RNG(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }
