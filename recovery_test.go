package logstore_test

// The crash-recovery suite: the store's promise (no acknowledged batch is
// ever lost or written twice) under simulated power loss after every
// filesystem operation, real SIGKILLs of the CLI, injected I/O errors,
// damaged files, and concurrent appenders. See package internal/crashtest
// for the model, the oracle and the workloads, crashharness_*_test.go for
// the harnesses of the other tests, and internal/crashfs for the
// filesystem that crashes.
//
// LOGSTORE_CRASH_SWEEP=1 runs the long sweep (more seeds, longer
// workloads, more kills, more damage seeds); LOGSTORE_CRASH_SEEDS and
// LOGSTORE_CRASH_KILLS size it. LOGSTORE_CRASH_SEED, LOGSTORE_CRASH_POINT,
// LOGSTORE_CRASH_MODE and LOGSTORE_FAULT_AT replay one failure, as its
// message says.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// sweep reports whether the long, exhaustive sweep was asked for.
func sweep() bool { return os.Getenv("LOGSTORE_CRASH_SWEEP") != "" }

var crashWorkloads = []crashtest.Workload{
	{Name: "rolls", Steps: 40, Producers: 3, Sync: logstore.SyncAlways, SegBytes: 1024},
	{Name: "retention", Steps: 40, Producers: 3, Sync: logstore.SyncAlways, SegBytes: 900, Retention: 2000},
	{Name: "restarts", Steps: 40, Producers: 3, Sync: logstore.SyncAlways, SegBytes: 1024, Restarts: true},
	{Name: "sync-never", Steps: 30, Producers: 2, Sync: logstore.SyncNever, SegBytes: 1024, Restarts: true},
	// A longer history, crash points sampled (1 in 10, by the seed).
	{Name: "long", Steps: 250, Producers: 4, Sync: logstore.SyncAlways, SegBytes: 1500, Retention: 6000, Restarts: true, Sample: 10},
}

// TestCrashRecovery runs each workload, records a crash point after every
// filesystem operation (and after every snapshot commit), crashes each
// point in every mode of crashfs, reopens the store on the image and
// checks the oracle (see crashtest.Oracle): a valid prefix holding every
// acknowledged batch once, the producer state of a full replay, retries
// answered DUPLICATE with their offsets, lost batches accepted again at
// theirs, new appends working.
func TestCrashRecovery(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if sweep() {
		seeds = nil
		for s := range crashtest.EnvInt(t, "LOGSTORE_CRASH_SEEDS", 25) {
			seeds = append(seeds, uint64(s+1))
		}
	}
	if s := crashtest.EnvInt(t, "LOGSTORE_CRASH_SEED", -1); s >= 0 {
		seeds = []uint64{uint64(s)}
	}
	only := crashtest.EnvInt(t, "LOGSTORE_CRASH_POINT", -1)
	modes := crashfs.Modes
	if m := os.Getenv("LOGSTORE_CRASH_MODE"); m != "" {
		mode, ok := crashfs.ParseMode(m)
		if !ok {
			t.Fatalf("LOGSTORE_CRASH_MODE=%q: not a mode", m)
		}
		modes = []crashfs.Mode{mode}
	}
	reopenEvery := 5
	if sweep() {
		reopenEvery = 1
	}
	for _, w := range crashWorkloads {
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			if sweep() {
				w.Steps *= 2
			}
			var total crashtest.Stats
			seeds := seeds
			if w.Sample > 1 && !sweep() && crashtest.EnvInt(t, "LOGSTORE_CRASH_SEED", -1) < 0 {
				seeds = seeds[:1]
			}
			for _, seed := range seeds {
				r := crashtest.NewRun(t, w, seed)
				r.Run()
				st := r.CheckPoints(only, modes, reopenEvery)
				total.Recorded += st.Recorded
				total.Points += st.Points
				total.Images += st.Images
				total.Checked += st.Checked
				total.Skipped += st.Skipped
			}
			t.Logf("%s, %d seeds: %d crash points recorded, %d crashed x %d modes = %d images, %d distinct checked (%d identical skipped)",
				w.Name, len(seeds), total.Recorded, total.Points, len(modes), total.Images, total.Checked, total.Skipped)
		})
	}
}

// TestInjectedFaults fails each filesystem operation of a workload in
// turn (writes, fsyncs, renames, directory syncs, creations, removals),
// with EIO and ENOSPC by turns, as pebble's error tests do: the call
// that hit it returns the error; after a failed append (write or fsync)
// the partition is poisoned, so nothing later is acknowledged and it
// closes without its clean mark; and both a crash right after the
// failure and the files the process leaves reopen to what the oracle
// accepts.
func TestInjectedFaults(t *testing.T) {
	env := func() crashtest.Env {
		return crashtest.Env{Root: t.TempDir(), Topic: "faults", Opts: crashtest.WithSegments(logstore.Options{ProducerExpiry: -1}, 900, 2500)}
	}
	seeds := []uint64{7}
	modes := []crashfs.Mode(nil) // one per run, in turn
	if sweep() {
		seeds, modes = nil, crashfs.Modes
		for s := range crashtest.EnvInt(t, "LOGSTORE_CRASH_SEEDS", 25) {
			seeds = append(seeds, uint64(s+1))
		}
	}
	if s := crashtest.EnvInt(t, "LOGSTORE_CRASH_SEED", -1); s >= 0 {
		seeds = []uint64{uint64(s)}
	}
	counts := map[string]int{}
	runs, unreached := 0, 0
	for _, seed := range seeds {
		clean := &faultRun{t: t, env: env(), seed: seed}
		total := clean.run()
		from, to := 1, total
		if at := crashtest.EnvInt(t, "LOGSTORE_FAULT_AT", 0); at > 0 {
			from, to = at, at
		}
		for failAt := from; failAt <= to; failAt++ {
			r := &faultRun{t: t, env: env(), seed: seed, failAt: failAt, errno: faultErrno(failAt)}
			r.run()
			if r.failed == nil {
				// A roll's flush runs beside the appends, so how its
				// operations interleave with theirs (and so how many
				// there are before Close: retention after a flush that
				// Close overtook) varies a little from run to run.
				unreached++
				continue
			}
			r.crashAndCheck(modes)
			runs++
			counts[fmt.Sprintf("%s/%s", r.failed.Kind, r.errno)]++
		}
	}
	t.Logf("%d seeds, %d runs, each failing one operation: %v; %d fault points not reached", len(seeds), runs, counts, unreached)
	if unreached > runs/20 {
		t.Fatalf("%d of %d fault points were never reached: the runs differ from the run without faults", unreached, runs+unreached)
	}
}

// TestGarbageAfterLog is Kafka's testCorruptLog: bytes appended to the
// active segment. After a killed process they are a torn tail, cut and
// reported; after a clean close nothing can have torn, so they are
// corruption, reported with the file and position, and nothing is cut.
func TestGarbageAfterLog(t *testing.T) {
	killed := newDamageFixture(t, false)
	for _, g := range [][]byte{garbage(300), make([]byte, 300)} {
		f := killed.clone(t)
		logs := f.files(t, ".log")
		last := logs[len(logs)-1]
		modifyFile(t, last, func(b []byte) []byte { return append(b, g...) })
		p, err := f.open(t)
		if err != nil {
			t.Fatal(err)
		}
		rep := p.Recovery()
		if rep.TruncatedBytes != 300 || rep.TruncatedSegment != segmentBase(t, last) || rep.TruncatedAt != f.tl.End() || !errors.Is(rep.Reason, segment.ErrCorrupt) {
			t.Errorf("report %+v; want 300 bytes cut from %s at offset %d", rep, filepath.Base(last), f.tl.End())
		}
		if err := crashtest.Oracle(p, f.expectAll(), crashtest.CheckOptions{NewAppend: true}); err != nil {
			t.Fatal(err)
		}
	}

	f := newDamageFixture(t, true)
	logs := f.files(t, ".log")
	last := logs[len(logs)-1]
	fi, _ := os.Stat(last)
	modifyFile(t, last, func(b []byte) []byte { return append(b, garbage(300)...) })
	before, _ := os.ReadFile(last)
	_, err := f.open(t)
	var ce *segment.CorruptionError
	if !errors.As(err, &ce) || ce.File != last || ce.Offset != fi.Size() {
		t.Fatalf("open after garbage following a clean close: %v; want corruption in %s at byte %d", err, last, fi.Size())
	}
	if after, _ := os.ReadFile(last); !bytes.Equal(before, after) {
		t.Fatal("the damaged segment was changed")
	}
}

// TestDamagedIndexes: garbage after an index, a missing or empty index,
// and bytes flipped inside one. An index is derived data: the store
// rebuilds what it cannot trust, and every read finds the right batch.
func TestDamagedIndexes(t *testing.T) {
	type damage struct {
		name string
		fn   func(t *testing.T, f *damageFixture, rng *rand.Rand)
	}
	pick := func(f *damageFixture, t *testing.T, suffix string, rng *rand.Rand) string {
		files := f.files(t, suffix)
		return files[rng.IntN(len(files))]
	}
	damages := []damage{
		{"garbage-after-index", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			modifyFile(t, pick(f, t, ".index", rng), func(b []byte) []byte { return append(b, garbage(1+rng.IntN(30))...) })
		}},
		{"garbage-after-timeindex", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			modifyFile(t, pick(f, t, ".timeindex", rng), func(b []byte) []byte { return append(b, garbage(1+rng.IntN(30))...) })
		}},
		{"missing-indexes", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			name := pick(f, t, ".index", rng)
			for _, n := range []string{name, strings.TrimSuffix(name, ".index") + ".timeindex"} {
				if err := os.Remove(n); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"empty-index", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			modifyFile(t, pick(f, t, ".index", rng), func([]byte) []byte { return nil })
		}},
		{"byte-flipped-in-index", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			modifyFile(t, pick(f, t, ".index", rng), func(b []byte) []byte {
				if len(b) > 0 {
					b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
				}
				return b
			})
		}},
		{"byte-flipped-in-timeindex", func(t *testing.T, f *damageFixture, rng *rand.Rand) {
			modifyFile(t, pick(f, t, ".timeindex", rng), func(b []byte) []byte {
				if len(b) > 0 {
					b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
				}
				return b
			})
		}},
	}
	seeds := 6
	if sweep() {
		seeds = 100
	}
	fixtures := map[bool]*damageFixture{true: newDamageFixture(t, true), false: newDamageFixture(t, false)}
	for _, d := range damages {
		for _, clean := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clean=%t", d.name, clean), func(t *testing.T) {
				for seed := range uint64(seeds) {
					f := fixtures[clean].clone(t)
					d.fn(t, f, rand.New(rand.NewPCG(seed, 5)))
					p, err := f.open(t)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if err := crashtest.Oracle(p, f.expectAll(), crashtest.CheckOptions{NewAppend: true}); err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if _, err := p.Read(f.tl[len(f.tl)/2].Base+1, 1); err != nil {
						t.Fatalf("seed %d: read from the middle of a batch: %v", seed, err)
					}
				}
			})
		}
	}
}

// TestBitFlipInSealedSegment: a flipped bit inside a segment below the
// recovery point is durable data gone bad: it must never be cut away.
// When an index must be rebuilt, open reports it as corruption with the
// file and the position of the damaged batch. With intact indexes, open
// does not read sealed segments batch by batch, so the flip goes
// unnoticed until something validates the batch (the oracle's reader
// does): that gap is logged, not hidden.
func TestBitFlipInSealedSegment(t *testing.T) {
	for _, clean := range []bool{true, false} {
		for _, dropIndex := range []bool{true, false} {
			t.Run(fmt.Sprintf("clean=%t/index-missing=%t", clean, dropIndex), func(t *testing.T) {
				f := newDamageFixture(t, clean)
				first := f.files(t, ".log")[0]
				spans := batchSpans(t, first)
				hit := spans[len(spans)/2]
				base := baseAt(t, first, hit[0])
				modifyFile(t, first, func(b []byte) []byte { b[hit[0]+recordbatch.HeaderSize+3] ^= 0x10; return b })
				if dropIndex {
					if err := os.Remove(strings.TrimSuffix(first, ".log") + ".index"); err != nil {
						t.Fatal(err)
					}
				}
				before, _ := os.ReadFile(first)
				p, err := f.open(t)
				after, _ := os.ReadFile(first)
				if !bytes.Equal(before, after) {
					t.Fatal("the damaged sealed segment was changed")
				}
				if dropIndex {
					var ce *segment.CorruptionError
					if !errors.As(err, &ce) || ce.File != first || ce.Offset != int64(hit[0]) {
						t.Fatalf("open: %v; want corruption in %s at byte %d", err, first, hit[0])
					}
					return
				}
				if err != nil {
					var ce *segment.CorruptionError
					if !errors.As(err, &ce) || ce.File != first || ce.Offset != int64(hit[0]) {
						t.Fatalf("open: %v; want nil or corruption in %s at byte %d", err, first, hit[0])
					}
					return
				}
				if got := p.EndOffset(); got != f.tl.End() {
					t.Fatalf("log end %d after the flip; want %d: nothing cut", got, f.tl.End())
				}
				_, rerr := crashtest.ReadLog(p)
				if !errors.Is(rerr, recordbatch.ErrCRC) {
					t.Fatalf("reading the log: %v; want the CRC mismatch of the batch at %d", rerr, base)
				}
				t.Logf("GAP: open (clean=%t) accepted %s with a bit flipped in the batch at byte %d (offset %d); only a validating read finds it: %v",
					clean, filepath.Base(first), hit[0], base, rerr)
			})
		}
	}
}

// TestBitFlipWithCheckpointLost: with the checkpoint missing or damaged,
// open takes the shutdown as unclean with a recovery point of 0 and
// scans every segment as a possible torn tail, so a flipped bit in the
// first (sealed, fsynced at its roll) segment cuts the log there and
// deletes every later segment. The report says so; the loss is logged as
// a gap: a segment with a successor was fsynced before the successor was
// created, so only the last segment can hold a torn write.
func TestBitFlipWithCheckpointLost(t *testing.T) {
	for _, how := range []string{"missing", "damaged"} {
		t.Run(how, func(t *testing.T) {
			f := newDamageFixture(t, true)
			first := f.files(t, ".log")[0]
			hit := batchSpans(t, first)[1]
			base := baseAt(t, first, hit[0])
			modifyFile(t, first, func(b []byte) []byte { b[hit[0]+recordbatch.HeaderSize+3] ^= 0x10; return b })
			ck := filepath.Join(f.pdir, "logstore.checkpoint")
			if how == "missing" {
				if err := os.Remove(ck); err != nil {
					t.Fatal(err)
				}
			} else {
				modifyFile(t, ck, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
			}
			p, err := f.open(t)
			if err != nil {
				var ce *segment.CorruptionError
				if !errors.As(err, &ce) || ce.File != first || ce.Offset != int64(hit[0]) {
					t.Fatalf("open: %v; want nil or corruption in %s at byte %d", err, first, hit[0])
				}
				return
			}
			rep := p.Recovery()
			if p.EndOffset() == f.tl.End() {
				return // nothing lost
			}
			if rep.TruncatedAt != base || !errors.Is(rep.Reason, recordbatch.ErrCRC) {
				t.Fatalf("log cut to %d without saying so: %+v", p.EndOffset(), rep)
			}
			if err := crashtest.Oracle(p, crashtest.Expect{Timeline: f.tl, Acked: f.tl.Index(base), Durable: true}, crashtest.CheckOptions{Resend: true}); err != nil {
				t.Fatal(err)
			}
			t.Logf("GAP: checkpoint %s and one bit flipped in the first segment: the log was cut at offset %d of %d",
				how, base, f.tl.End())
		})
	}
}

// TestBitFlipInActiveSegment: after a killed process the active segment is
// scanned, and the scan stops at the first invalid batch: a flipped bit
// there cuts the log at that batch, and the report says so (bytes,
// offset, reason). The batches after it were acknowledged under
// SyncAlways, so they are lost: that is logged as a gap.
func TestBitFlipInActiveSegment(t *testing.T) {
	f := newDamageFixture(t, false)
	logs := f.files(t, ".log")
	last := logs[len(logs)-1]
	spans := batchSpans(t, last)
	hit := spans[1]
	base := baseAt(t, last, hit[0])
	modifyFile(t, last, func(b []byte) []byte { b[hit[0]+recordbatch.HeaderSize+3] ^= 0x10; return b })
	p, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	rep := p.Recovery()
	if rep.TruncatedAt != base || rep.TruncatedBytes != int64(spans[len(spans)-1][1]-hit[0]) || !errors.Is(rep.Reason, recordbatch.ErrCRC) {
		t.Fatalf("report %+v; want a cut at offset %d for a CRC mismatch", rep, base)
	}
	lost := f.tl.Index(base)
	if err := crashtest.Oracle(p, crashtest.Expect{Timeline: f.tl, Acked: lost, Durable: true}, crashtest.CheckOptions{Resend: true, NewAppend: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("GAP: one flipped bit in the active segment after an unclean shutdown cut %d acknowledged batches (offsets %d..%d, %d bytes); the recovery report says so, but they were fsynced",
		len(f.tl)-lost, base, f.tl.End()-1, rep.TruncatedBytes)
}

// TestDamagedSnapshotDB: a snapshot db that is garbage, truncated, empty,
// missing, or has bytes flipped. The store sets an unusable file aside
// or skips bad snapshots, and rebuilds the same producer state from the
// log: retries are still answered DUPLICATE with their offsets.
func TestDamagedSnapshotDB(t *testing.T) {
	damages := map[string]func(t *testing.T, path string, rng *rand.Rand){
		"garbage": func(t *testing.T, path string, _ *rand.Rand) {
			if err := os.WriteFile(path, garbage(10000), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"truncated": func(t *testing.T, path string, rng *rand.Rand) {
			modifyFile(t, path, func(b []byte) []byte { return b[:rng.IntN(len(b))] })
		},
		"empty": func(t *testing.T, path string, _ *rand.Rand) {
			modifyFile(t, path, func([]byte) []byte { return nil })
		},
		"missing": func(t *testing.T, path string, _ *rand.Rand) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"bytes-flipped": func(t *testing.T, path string, rng *rand.Rand) {
			modifyFile(t, path, func(b []byte) []byte {
				for range 1 + rng.IntN(4) {
					b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
				}
				return b
			})
		},
	}
	seeds := 4
	if sweep() {
		seeds = 100
	}
	fixtures := map[bool]*damageFixture{true: newDamageFixture(t, true), false: newDamageFixture(t, false)}
	for _, name := range slices.Sorted(maps.Keys(damages)) {
		for _, clean := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/clean=%t", name, clean), func(t *testing.T) {
				for seed := range uint64(seeds) {
					f := fixtures[clean].clone(t)
					damages[name](t, f.dbPath(), rand.New(rand.NewPCG(seed, 9)))
					p, err := f.open(t)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if err := crashtest.Oracle(p, f.expectAll(), crashtest.CheckOptions{NewAppend: true}); err != nil {
						t.Fatalf("seed %d (startup %+v): %v", seed, p.Startup(), err)
					}
				}
			})
		}
	}
}

// TestSnapshotNewerThanLog: the log loses its tail after a clean close
// (cut at a batch boundary, or its newest segment deleted), so the close
// snapshot lies above the log end. It is deleted; the state comes from an
// older snapshot plus replay, and the producers' lost batches are
// accepted again at their offsets. A cut inside a batch after a clean
// close is not a torn write but damage: open reports it where it is.
func TestSnapshotNewerThanLog(t *testing.T) {
	t.Run("cut-at-batch", func(t *testing.T) {
		f := newDamageFixture(t, true)
		logs := f.files(t, ".log")
		last := logs[len(logs)-1]
		spans := batchSpans(t, last)
		cut := spans[len(spans)-2][0]
		if err := os.Truncate(last, int64(cut)); err != nil {
			t.Fatal(err)
		}
		p, err := f.open(t)
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Startup(); st.DeletedAbove == 0 || st.SnapshotOffset > p.EndOffset() {
			t.Fatalf("startup %+v with the log ending at %d", st, p.EndOffset())
		}
		if err := crashtest.Oracle(p, crashtest.Expect{Timeline: f.tl, Acked: f.tl.Index(p.EndOffset()), Durable: true}, crashtest.CheckOptions{Resend: true, NewAppend: true}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("newest-segment-deleted", func(t *testing.T) {
		f := newDamageFixture(t, true)
		logs := f.files(t, ".log")
		last := strings.TrimSuffix(logs[len(logs)-1], ".log")
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			if err := os.Remove(last + suf); err != nil {
				t.Fatal(err)
			}
		}
		p, err := f.open(t)
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Startup(); st.DeletedAbove == 0 {
			t.Fatalf("startup %+v with the log ending at %d", st, p.EndOffset())
		}
		if err := crashtest.Oracle(p, crashtest.Expect{Timeline: f.tl, Acked: f.tl.Index(p.EndOffset()), Durable: true}, crashtest.CheckOptions{Resend: true, NewAppend: true}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cut-inside-batch", func(t *testing.T) {
		f := newDamageFixture(t, true)
		logs := f.files(t, ".log")
		last := logs[len(logs)-1]
		spans := batchSpans(t, last)
		cut := spans[len(spans)-1][0] + 10
		if err := os.Truncate(last, int64(cut)); err != nil {
			t.Fatal(err)
		}
		_, err := f.open(t)
		var ce *segment.CorruptionError
		if !errors.As(err, &ce) || ce.File != last || ce.Offset != int64(spans[len(spans)-1][0]) {
			t.Fatalf("open: %v; want corruption in %s at byte %d", err, last, spans[len(spans)-1][0])
		}
	})
}

// TestConcurrentAppendsAndCrash: producers append from many goroutines to
// several partitions of one store under SyncAlways (so fsyncs are shared
// by group commit), some retrying, while readers read; crash images are
// taken while they run. Every image, and the store after its clean close,
// holds every batch acknowledged before it exactly once at its offsets,
// each producer's batches in order without gaps, and the producer state
// of a full replay. Run it with -race.
func TestConcurrentAppendsAndCrash(t *testing.T) {
	const parts, producers = 3, 4
	batches := 60
	if sweep() {
		batches = 300
	}
	root := t.TempDir()
	topics := make([]string, parts)
	var dbPaths []string
	for i := range topics {
		topics[i] = fmt.Sprintf("conc%d", i)
		pdir := filepath.Join(root, topics[i]+"-0")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		dbPaths = append(dbPaths, filepath.Join(pdir, "producer-snapshots.db"))
	}
	fs := crashfs.New(root)
	opts := crashtest.WithSegments(logstore.Options{ProducerExpiry: -1}, 2048, 0)
	run := opts.WithFS(fs)
	s := openStore(t, root, run)
	ps := make([]*logstore.Partition, parts)
	for i, topic := range topics {
		ps[i] = openPartition(t, s, topic, 0)
	}

	total := parts * producers * batches
	rounds := 1
	if sweep() {
		rounds = 6
	}
	var modes []crashfs.Mode
	for range rounds {
		modes = append(modes, crashfs.Modes...)
	}
	rec := &concRecorder{triggers: map[int]bool{}, fire: make(chan struct{}, len(modes))}
	for i := range modes {
		rec.triggers[total*(i+1)/(len(modes)+1)] = true
	}
	var images []concImage
	var crashErr error
	crasherDone := make(chan struct{})
	go func() {
		defer close(crasherDone)
		for i, m := range modes {
			<-rec.fire
			img, err := rec.image(fs, dbPaths, m, uint64(i))
			if err != nil {
				crashErr = err
				return
			}
			images = append(images, img)
		}
	}()

	done := make(chan struct{})
	var readers sync.WaitGroup
	readErrs := make([]error, parts)
	for i, p := range ps {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := crashtest.ReadLog(p); err != nil {
					readErrs[i] = err
					return
				}
			}
		}()
	}

	var wg sync.WaitGroup
	errs := make(chan error, parts*producers)
	for part := range parts {
		for k := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pid := int64(1000 + part*producers + k)
				rng := crashtest.RNG(uint64(pid), 3)
				var seq int32
				for range batches {
					n := 1 + rng.IntN(5)
					res, err := ps[part].Append(concBatch(pid, seq, n))
					if err != nil || res.Duplicate {
						errs <- fmt.Errorf("producer %d seq %d: %+v, %v", pid, seq, res, err)
						return
					}
					rec.ack(concAck{part: part, pid: pid, seq: seq, n: n, base: res.BaseOffset, last: res.LastOffset})
					if rng.IntN(5) == 0 {
						again, err := ps[part].Append(concBatch(pid, seq, n))
						if err != nil || !again.Duplicate || again.BaseOffset != res.BaseOffset {
							errs <- fmt.Errorf("producer %d retry of seq %d: %+v, %v; want DUPLICATE at %d", pid, seq, again, err, res.BaseOffset)
							return
						}
					}
					seq += int32(n)
				}
			}()
		}
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, err := range readErrs {
		if err != nil {
			t.Fatalf("concurrent reader: %v", err)
		}
	}
	<-crasherDone
	if crashErr != nil {
		t.Fatal(crashErr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	final := concImage{mode: crashfs.DropUnsynced, acks: rec.acks}
	final.fs = fs.Crash(crashfs.DropUnsynced, nil)
	for _, p := range dbPaths {
		db, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		final.dbs = append(final.dbs, db)
	}
	for i, img := range append(images, final) {
		if err := checkConcurrent(root, topics, opts, img); err != nil {
			t.Fatalf("image %d (%s, %d acks before it): %v", i, img.mode, len(img.acks), err)
		}
	}
	t.Logf("%d producers appended %d batches to %d partitions; %d crash images taken while they ran, and the closed store, checked", parts*producers, total, parts, len(images))
}

// TestKillDashNine runs the real logstore binary, appending JSON Lines
// from a pipe with replies read line by line, and kills it with SIGKILL
// after a seeded number of replies, with up to 4 lines in flight, under
// every --sync mode (a process crash loses nothing acknowledged in any).
// Each restart first sends again, in order and with the same sequences,
// what got no reply, as a producer retries. The replies are the record of
// truth: at the end every batch sent is in the log exactly once, at the
// offsets its OK (or the DUPLICATE of a retry) gave.
func TestKillDashNine(t *testing.T) {
	kills := 8
	if sweep() {
		kills = crashtest.EnvInt(t, "LOGSTORE_CRASH_KILLS", 200)
	}
	seed := uint64(crashtest.EnvInt(t, "LOGSTORE_CRASH_SEED", 1))
	k := &killTest{t: t, cli: buildCLI(t), dir: filepath.Join(t.TempDir(), "store"), seed: seed, rng: crashtest.RNG(seed, 9), ts: recent}
	// The kills are chosen from a stream of their own, so they do not
	// depend on how far each process got before it died.
	runs := crashtest.RNG(seed, 10)
	for i := range 4 {
		k.prods = append(k.prods, &procProducer{pid: int64(500 + i), part: int32(i % 2)})
	}
	for k.run = 1; k.run <= kills; k.run++ {
		sync := []string{"always", "always", "never", "interval"}[runs.IntN(4)]
		k.once(runs.IntN(30), 1+runs.IntN(4), true, sync)
	}
	k.once(len(k.queue)+3, 4, false, "always")
	k.verify()
	acked := 0
	for _, b := range k.sent {
		if b.acked {
			acked++
		}
	}
	t.Logf("seed %d: %d SIGKILLs and a clean run; %d batches sent, %d acknowledged, all in the log once; %d sent again after a kill: %d had been written (DUPLICATE), %d had not (OK)",
		seed, kills, len(k.sent), acked, k.resent, k.dupOnRetry, k.okOnRe)
}
