package logstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/snapshot"
)

// recent is a record timestamp the default producer expiry (1 day,
// against the clock) keeps.
var recent = time.Now().UnixMilli()

// producerBatch builds an idempotent client batch of n records.
func producerBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, ts, false)
}

// outcome runs one append and names its outcome as the CLI does.
func outcome(p *logstore.Partition, batch []byte) (string, logstore.AppendResult) {
	res, err := p.Append(batch)
	switch {
	case err == nil && res.Duplicate:
		return "DUPLICATE", res
	case err == nil:
		return "OK", res
	case errors.Is(err, logstore.ErrOutOfOrder):
		return "OUT_OF_ORDER", res
	case errors.Is(err, logstore.ErrFenced):
		return "FENCED", res
	case errors.Is(err, logstore.ErrInvalidBatch):
		return "INVALID", res
	default:
		return "ERROR " + err.Error(), res
	}
}

// TestAcceptanceTrace runs the trace of issue 4 through the store, once
// straight and once with a close and reopen between every two steps.
func TestAcceptanceTrace(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	steps := []struct {
		epoch      int16
		seq        int32
		n          int
		want       string
		base, last int64
		end        int64
	}{
		{0, 0, 3, "OK", 0, 2, 3},
		{0, 3, 2, "OK", 3, 4, 5},
		{0, 3, 2, "DUPLICATE", 3, 4, 5},
		{0, 7, 1, "OUT_OF_ORDER", 0, 0, 5},
		{1, 7, 1, "OUT_OF_ORDER", 0, 0, 5},
		{1, 0, 1, "OK", 5, 5, 6},
		{0, 5, 1, "FENCED", 0, 0, 6},
	}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%t", restart), func(t *testing.T) {
			dir := t.TempDir()
			opts := logstore.Options{}.WithClock(func() time.Time { return now })
			s := openStore(t, dir, opts)
			p := openPartition(t, s, "trace", 0)
			for i, st := range steps {
				got, res := outcome(p, producerBatch(31, st.epoch, st.seq, st.n, now.UnixMilli()))
				if got != st.want {
					t.Fatalf("step %d: %s, want %s", i+1, got, st.want)
				}
				if (got == "OK" || got == "DUPLICATE") && (res.BaseOffset != st.base || res.LastOffset != st.last) {
					t.Fatalf("step %d: base %d last %d, want %d %d", i+1, res.BaseOffset, res.LastOffset, st.base, st.last)
				}
				if p.EndOffset() != st.end {
					t.Fatalf("step %d: log end %d, want %d", i+1, p.EndOffset(), st.end)
				}
				if restart {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = openStore(t, dir, opts)
					p = openPartition(t, s, "trace", 0)
					if rep := p.Startup(); rep.ReplayedBatches != 0 || rep.SnapshotOffset != p.EndOffset() {
						t.Fatalf("step %d: after a clean close the state should come from the close snapshot alone: %+v", i+1, rep)
					}
				}
			}
		})
	}
}

// TestSnapshotsOnRollAndClose: exactly one snapshot per roll, at the new
// segment's base offset, plus one at the log end on a clean close.
func TestSnapshotsOnRollAndClose(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever, SegmentBytes: 600})
	p := openPartition(t, s, "rolls", 0)
	for i := range 20 {
		if _, err := p.Append(producerBatch(7, 0, int32(i*2), 2, recent)); err != nil {
			t.Fatal(err)
		}
	}
	end := p.EndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "rolls-0")
	l, _, err := segment.Open(pdir, segment.Config{SegmentBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	l.Close()
	snaps, _, err := snapshot.Open(pdir, snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snaps.Close()
	offsets, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]int64(nil), segs[1:]...), end)
	if fmt.Sprint(offsets) != fmt.Sprint(want) {
		t.Fatalf("snapshots at %v, want %v (segments %v, end %d)", offsets, want, segs, end)
	}
}

// TestSnapshotAboveLogEndRemoved: a crash that loses the log's tail
// (here: the last segment's bytes cut) leaves a snapshot above the
// recovered end; it is removed, and the state comes from the older one
// plus replay, so the producer continues right after what survived.
func TestSnapshotAboveLogEndRemoved(t *testing.T) {
	dir := t.TempDir()
	opts := logstore.Options{SegmentBytes: 600}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "cut", 0)
	for i := range 20 {
		if _, err := p.Append(producerBatch(7, 0, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "cut-0")
	// Lose the clean mark and cut the last segment to nothing but a
	// torn half batch.
	if err := os.Remove(filepath.Join(pdir, "logstore.checkpoint")); err != nil {
		t.Fatal(err)
	}
	last, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	name := last[len(last)-1]
	if err := os.Truncate(name, 30); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "cut", 0)
	end := p.EndOffset()
	if rep := p.Startup(); rep.DeletedAbove == 0 || rep.SnapshotOffset > end {
		t.Fatalf("startup %+v, end %d", rep, end)
	}
	// The producer's next sequence is the one after the last surviving batch.
	if got, _ := outcome(p, producerBatch(7, 0, int32(end), 1, recent)); got != "OK" {
		t.Fatalf("next batch after recovery: %s", got)
	}
	if got, _ := outcome(p, producerBatch(7, 0, int32(end-1), 1, recent)); got != "DUPLICATE" {
		t.Fatalf("retry of the last surviving batch: %s", got)
	}
}

// TestGarbageSnapshotDB: a snapshot db that bbolt cannot open is set
// aside, and startup rebuilds the same state from the log.
func TestGarbageSnapshotDB(t *testing.T) {
	dir := t.TempDir()
	opts := logstore.Options{SegmentBytes: 600}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "g", 0)
	var last logstore.AppendResult
	for i := range 15 {
		var err error
		if last, err = p.Append(producerBatch(9, 2, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "g-0", snapshot.FileName)
	if err := os.WriteFile(db, []byte("this is not a bbolt file, not at all, no"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "g", 0)
	if rep := p.Startup(); rep.Snapshots.SetAside == "" || rep.SnapshotOffset != -1 || rep.ReplayedBatches != 15 {
		t.Fatalf("startup %+v", rep)
	}
	got, res := outcome(p, producerBatch(9, 2, 14, 1, recent))
	if got != "DUPLICATE" || res.BaseOffset != last.BaseOffset {
		t.Fatalf("retry after rebuild: %s %+v", got, res)
	}
}

// TestSnapshotPlusTailEqualsFullReplay is the invariant as a property
// test: random workloads of several producers (epoch bumps, retries,
// duplicates, out-of-order attempts) with rolls and restarts, clean and
// unclean. After each restart the state (newest snapshot + tail) equals
// a full replay of the log, and a retry of any of a producer's last 5
// batches returns its original offsets.
func TestSnapshotPlusTailEqualsFullReplay(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			dir := t.TempDir()
			opts := logstore.Options{Sync: logstore.SyncNever, ProducerExpiry: -1, SegmentBytes: 900}
			s := openStore(t, dir, opts)
			p := openPartition(t, s, "prop", 0)
			type sent struct {
				epoch      int16
				seq        int32
				n          int
				base, last int64
			}
			type prod struct {
				epoch int16
				next  int32
				sent  []sent // accepted, newest last, current epoch only
			}
			prods := map[int64]*prod{}
			for op := range 600 {
				pid := int64(1 + rng.IntN(4))
				pr := prods[pid]
				if pr == nil {
					pr = &prod{}
					prods[pid] = pr
				}
				switch r := rng.IntN(10); {
				case r < 6 || len(pr.sent) == 0: // next batch
					n := 1 + rng.IntN(3)
					got, res := outcome(p, producerBatch(pid, pr.epoch, pr.next, n, recent))
					if got != "OK" {
						t.Fatalf("op %d: pid %d next batch: %s", op, pid, got)
					}
					pr.sent = append(pr.sent, sent{pr.epoch, pr.next, n, res.BaseOffset, res.LastOffset})
					if len(pr.sent) > producerstate.WindowSize {
						pr.sent = pr.sent[1:]
					}
					pr.next = recordbatch.IncrementSequence(pr.next, int32(n))
				case r < 8: // retry of one of the last 5
					b := pr.sent[rng.IntN(len(pr.sent))]
					got, res := outcome(p, producerBatch(pid, b.epoch, b.seq, b.n, recent))
					if got != "DUPLICATE" || res.BaseOffset != b.base || res.LastOffset != b.last {
						t.Fatalf("op %d: pid %d retry of seq %d: %s %+v, want DUPLICATE %d..%d", op, pid, b.seq, got, res, b.base, b.last)
					}
				case r < 9: // a gap
					if got, _ := outcome(p, producerBatch(pid, pr.epoch, pr.next+1, 1, recent)); got != "OUT_OF_ORDER" {
						t.Fatalf("op %d: gap: %s", op, got)
					}
				default: // epoch bump
					pr.epoch++
					pr.next, pr.sent = 0, nil
				}
				if rng.IntN(40) == 0 {
					clean := rng.IntN(2) == 0
					if clean {
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						// Killed, and the checkpoint lost: the next open
						// recovers and replays.
						dir = killedCopy(t, s, p, dir)
						os.Remove(filepath.Join(dir, "prop-0", "logstore.checkpoint"))
					}
					s = openStore(t, dir, opts)
					p = openPartition(t, s, "prop", 0)
					checkAgainstFullReplay(t, p)
				}
			}
		})
	}
}

// checkAgainstFullReplay replays the partition's whole log into a fresh
// state and compares it with the producers the partition knows, through
// the snapshot of its state. The store ran on the real clock, which the
// log does not hold: seen times are compared only with the clock (known,
// and not in the future).
func checkAgainstFullReplay(t *testing.T, p *logstore.Partition) {
	t.Helper()
	full := producerstate.New(producerstate.Config{})
	var all []byte
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
		for len(data) > 0 {
			b, _ := recordbatch.Parse(data, 0)
			off = b.LastOffset() + 1
			data = data[b.Size():]
		}
	}
	for len(all) > 0 {
		b, err := recordbatch.Parse(all, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := full.Apply(b, time.Now()); err != nil {
			t.Fatal(err)
		}
		all = all[b.Size():]
	}
	got := p.ProducerSnapshot()
	want := full.Snapshot()
	for _, e := range got.Producers {
		if e.LastSeen == producerstate.SeenUnknown || e.LastSeen > time.Now().UnixMilli() {
			t.Fatalf("producer %d seen at %d, not a time of the store's clock", e.ProducerID, e.LastSeen)
		}
	}
	if !got.EqualIgnoringSeen(want) {
		t.Fatalf("state after open (snapshot at %d + %d batches) differs from a full replay:\n got %+v\nwant %+v", p.Startup().SnapshotOffset, p.Startup().ReplayedBatches, got, want)
	}
}

// TestSnapshotsPrunedByRetention: when retention deletes segments, the
// snapshots below the new log start go with them.
func TestSnapshotsPrunedByRetention(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever, SegmentBytes: 600, RetentionBytes: 1500})
	p := openPartition(t, s, "ret", 0)
	for i := range 40 {
		if _, err := p.Append(producerBatch(3, 0, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flushed(); err != nil { // retention runs after each roll's flush
		t.Fatal(err)
	}
	start := p.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _, err := snapshot.Open(filepath.Join(dir, "ret-0"), snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snaps.Close()
	offsets, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets) == 0 || offsets[0] < start {
		t.Fatalf("snapshots %v with log start %d", offsets, start)
	}
}
