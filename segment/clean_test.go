package segment_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// rec is one record of the model: what was appended at offset.
type rec struct {
	offset int64
	ts     int64
	key    []byte // nil: no key
	value  []byte // nil: a tombstone
}

func (r rec) String() string {
	return fmt.Sprintf("%d:%q=%q@%d", r.offset, r.key, r.value, r.ts)
}

// keyedBatch builds a batch of recs (offsets from 0), compressed with
// codec, from producer pid (-1: none) at sequence seq.
func keyedBatch(t testing.TB, codec recordbatch.Codec, pid int64, seq int32, recs []rec) recordbatch.Batch {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	b.Compression = codec
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
	}
	for _, r := range recs {
		if err := b.Append(r.ts, r.key, r.value, nil); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := recordbatch.Parse(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var codecs = []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy, recordbatch.CodecLZ4, recordbatch.CodecZstd}

// workload appends n random keyed batches (keys from nkeys, a tenth of
// the values tombstones, some records without a key) and returns every
// record appended, by offset.
func workload(t testing.TB, l *segment.Log, rng *rand.Rand, n, nkeys int) []rec {
	t.Helper()
	var all []rec
	ts := int64(1700000000000)
	for i := range n {
		var recs []rec
		for range 1 + rng.IntN(5) {
			r := rec{ts: ts, value: fmt.Appendf(nil, "v%d-%s", i, bytes.Repeat([]byte{'x'}, rng.IntN(40)))}
			ts += int64(rng.IntN(3))
			switch x := rng.IntN(40); {
			case x == 0:
			case x < 4:
				r.key = fmt.Appendf(nil, "key-%03d", rng.IntN(nkeys))
				r.value = nil
			default:
				r.key = fmt.Appendf(nil, "key-%03d", rng.IntN(nkeys))
			}
			recs = append(recs, r)
		}
		pid := int64(-1)
		if i%7 == 0 {
			pid = 42
		}
		b := keyedBatch(t, codecs[rng.IntN(len(codecs))], pid, int32(i), recs)
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		for j := range recs {
			recs[j].offset = info.BaseOffset + int64(j)
		}
		all = append(all, recs...)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	return all
}

// logRecords reads every record of the log through Batches, checking
// each batch and that offsets only grow.
func logRecords(t testing.TB, l *segment.Log) []rec {
	t.Helper()
	var out []rec
	var rr recordbatch.RecordReader
	last := int64(-1)
	err := l.Batches(0, func(b recordbatch.Batch) error {
		if err := b.Validate(); err != nil {
			return err
		}
		if err := rr.ValidateRecords(b, 0); err != nil {
			return err
		}
		if b.BaseOffset() <= last {
			return fmt.Errorf("batch at %d after offset %d", b.BaseOffset(), last)
		}
		last = b.LastOffset()
		if err := rr.Reset(b, 0); err != nil {
			return err
		}
		for rr.Next() {
			r := rr.Record()
			out = append(out, rec{offset: r.Offset, ts: r.Timestamp, key: bytes.Clone(r.Key), value: bytes.Clone(r.Value)})
		}
		return rr.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expectClean is what a pass keeps of all below upper, with the map
// covering [0, end): the last record of each key below end, tombstones
// too when keepTombstones; records without a key, and every record at
// or above end.
func expectClean(all []rec, end int64, keepTombstones bool) []rec {
	last := map[string]int64{}
	for _, r := range all {
		if r.key != nil && r.offset < end {
			last[string(r.key)] = r.offset
		}
	}
	var out []rec
	for _, r := range all {
		switch {
		case r.offset >= end || r.key == nil:
			out = append(out, r)
		case last[string(r.key)] == r.offset && (r.value != nil || keepTombstones):
			out = append(out, r)
		}
	}
	return out
}

func sameRecords(t testing.TB, what string, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.offset != w.offset || g.ts != w.ts || !bytes.Equal(g.key, w.key) || !bytes.Equal(g.value, w.value) ||
			(g.key == nil) != (w.key == nil) || (g.value == nil) != (w.value == nil) {
			t.Fatalf("%s: record %d is %v, want %v", what, i, g, w)
		}
	}
}

// verifyDir runs Verify on a closed log and fails on any problem.
func verifyDir(t testing.TB, dir string, fsys vfs.FS) {
	t.Helper()
	var problems []segment.Problem
	if _, err := segment.Verify(dir, fsys, func(p segment.Problem) {
		if p.Kind != segment.ProblemNote {
			problems = append(problems, p)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("verify: %v", problems)
	}
}

// TestCleanModel cleans a log of random keyed records across many
// segments and compares it with the model: the latest value of every key
// below the cleaned bound, its tombstone while the delete horizon has
// not passed, every record above the bound untouched, offsets kept; a
// later pass past the horizon drops the tombstones. The result passes
// Verify and survives a reopen.
func TestCleanModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			dir := filepath.Join(t.TempDir(), "p-0")
			cfg := segment.Config{SegmentBytes: 3000, IndexIntervalBytes: 200}
			l, _ := open(t, dir, cfg)
			all := workload(t, l, rng, 300, 40)
			if len(l.Segments()) < 5 {
				t.Fatalf("only %d segments", len(l.Segments()))
			}
			now := time.UnixMilli(1800000000000)
			res, err := l.Clean(segment.CleanOptions{Now: now, DeleteRetention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			segs := l.Segments()
			if !res.Complete || res.End != segs[len(segs)-1] || len(res.Groups) == 0 {
				t.Fatalf("result %+v, segments %v", res, segs)
			}
			if res.BytesWritten >= res.BytesRead || res.RecordsWritten >= res.RecordsRead {
				t.Fatalf("nothing removed: %+v", res)
			}
			want := expectClean(all, res.End, true)
			sameRecords(t, "after the first pass", logRecords(t, l), want)

			// Past the horizon, with nothing new: the tombstones go.
			res2, err := l.Clean(segment.CleanOptions{FirstDirty: res.End, Now: now.Add(2 * time.Hour), DeleteRetention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			want = expectClean(all, res.End, false)
			sameRecords(t, fmt.Sprintf("after the second pass %+v", res2), logRecords(t, l), want)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			verifyDir(t, dir, nil)
			l, rep := open(t, dir, cfg)
			if !rep.Clean {
				t.Fatalf("reopen: %+v", rep)
			}
			sameRecords(t, "reopened", logRecords(t, l), want)
			// Reads from any offset work, the index entries agree.
			for _, r := range want {
				data, err := l.Read(r.offset, 1)
				if err != nil {
					t.Fatal(err)
				}
				b, err := recordbatch.Parse(data, 0)
				if err != nil || b.BaseOffset() > r.offset || b.LastOffset() < r.offset {
					t.Fatalf("read %d: batch %d..%d, %v", r.offset, b.BaseOffset(), b.LastOffset(), err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// An unclean open scans and keeps the same.
			l, _ = open(t, dir, cfg)
			sameRecords(t, "reopened twice", logRecords(t, l), want)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCleanBatchRules checks the batch-level rules on one segment: a
// batch whose records all go is dropped, except the last of the group
// and the last batch of an active producer, kept empty with its offsets,
// producer id, epoch and sequence; a partly kept batch keeps its base
// and last offset, sequence, codec and producer fields; control batches
// are kept; a kept tombstone stamps the delete horizon.
func TestCleanBatchRules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	cfg := segment.Config{SegmentBytes: 4000}
	l, _ := open(t, dir, cfg)
	k := func(s string) []byte { return []byte(s) }
	ts := int64(1700000000000)
	appendB := func(b recordbatch.Batch) segment.AppendInfo {
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	// 0..1: producer 7, both overwritten later: its last batch.
	p7 := appendB(keyedBatch(t, recordbatch.CodecNone, 7, 5, []rec{{ts: ts, key: k("a"), value: k("1")}, {ts: ts, key: k("b"), value: k("1")}}))
	// 2..4: one record kept (c), gzip, producer 8.
	p8 := appendB(keyedBatch(t, recordbatch.CodecGzip, 8, 100, []rec{{ts: ts + 1, key: k("a"), value: k("2")}, {ts: ts + 2, key: k("c"), value: k("1")}, {ts: ts + 3, key: k("b"), value: k("2")}}))
	// 5: a plain batch wholly overwritten: dropped.
	appendB(keyedBatch(t, recordbatch.CodecNone, -1, 0, []rec{{ts: ts + 4, key: k("a"), value: k("3")}}))
	// 6: a commit marker.
	marker, err := recordbatch.AppendEndTxnBatch(nil, 0, ts+5, 0, 9, 0, recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit})
	if err != nil {
		t.Fatal(err)
	}
	appendB(recordbatch.Batch(marker))
	// 7..8: a (latest) and b's tombstone: kept, with a horizon.
	tomb := appendB(keyedBatch(t, recordbatch.CodecLZ4, -1, 0, []rec{{ts: ts + 6, key: k("a"), value: k("4")}, {ts: ts + 7, key: k("b")}}))
	// 9: the group's last batch, overwritten below... by nothing: make
	// it a duplicate of c at 9 and c again at 10 in the same batch.
	last := appendB(keyedBatch(t, recordbatch.CodecNone, -1, 0, []rec{{ts: ts + 8, key: k("d"), value: k("1")}, {ts: ts + 9, key: k("d"), value: k("2")}}))
	// Roll: the rest is the active segment.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SegmentBytes = 300
	l, _ = open(t, dir, cfg)
	end := l.EndOffset()
	appendB(keyedBatch(t, recordbatch.CodecNone, -1, 0, []rec{{ts: ts + 10, key: k("z"), value: bytes.Repeat(k("z"), 150)}}))
	appendB(keyedBatch(t, recordbatch.CodecNone, -1, 0, []rec{{ts: ts + 10, key: k("z"), value: bytes.Repeat(k("z"), 150)}}))
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1800000000000)
	res, err := l.Clean(segment.CleanOptions{
		Now:             now,
		DeleteRetention: time.Minute,
		ActiveProducer: func(pid int64) (int64, bool) {
			return p7.LastOffset, pid == 7
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Upper != end+1 && res.Upper < end {
		t.Fatalf("result %+v, end %d", res, end)
	}
	var got []recordbatch.Batch
	if err := l.Batches(0, func(b recordbatch.Batch) error {
		got = append(got, append(recordbatch.Batch(nil), b...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		base, last int64
		n          int32
		codec      recordbatch.Codec
		pid        int64
		seq        int32
		horizon    bool
		control    bool
	}
	wants := []want{
		{p7.BaseOffset, p7.LastOffset, 0, recordbatch.CodecNone, 7, 5, false, false},
		{p8.BaseOffset, p8.LastOffset, 1, recordbatch.CodecGzip, 8, 100, false, false},
		{6, 6, 1, recordbatch.CodecNone, 9, -1, false, true},
		{tomb.BaseOffset, tomb.LastOffset, 2, recordbatch.CodecLZ4, -1, -1, true, false},
		{last.BaseOffset, last.LastOffset, 1, recordbatch.CodecNone, -1, -1, false, false},
	}
	if len(got) < len(wants) {
		t.Fatalf("%d batches, want %d and more", len(got), len(wants))
	}
	for i, w := range wants {
		b := got[i]
		h, hasH := b.DeleteHorizonMs()
		if b.BaseOffset() != w.base || b.LastOffset() != w.last || b.NumRecords() != w.n || b.Attributes().Codec() != w.codec ||
			b.ProducerID() != w.pid || b.BaseSequence() != w.seq || hasH != w.horizon || b.Attributes().Control() != w.control {
			t.Fatalf("batch %d: %+v, want %+v", i, b.Header(), w)
		}
		if hasH && h != now.Add(time.Minute).UnixMilli() {
			t.Fatalf("batch %d: horizon %d", i, h)
		}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// The tombstone batch's records keep their timestamps across the
	// horizon in the base timestamp.
	recs, err := got[3].DecodeRecords(0)
	if err != nil || len(recs) != 2 || recs[0].Timestamp != ts+6 || recs[1].Timestamp != ts+7 || recs[1].Value != nil {
		t.Fatalf("tombstone batch records %+v %v", recs, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir, nil)
}

// TestCleanBoundedMap cleans with a map too small for the dirty range:
// each pass stops where its keys fit and says so, the next goes on from
// there, and together they reach the model's result.
func TestCleanBoundedMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := filepath.Join(t.TempDir(), "p-0")
	cfg := segment.Config{SegmentBytes: 3000, IndexIntervalBytes: 300}
	l, _ := open(t, dir, cfg)
	all := workload(t, l, rng, 300, 200)
	m, err := segment.NewOffsetMap(40 * 24) // 36 keys
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1800000000000)
	dirty, passes := int64(0), 0
	for {
		res, err := l.Clean(segment.CleanOptions{FirstDirty: dirty, Map: m, Now: now, DeleteRetention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		passes++
		if res.Keys > 36 || res.End <= dirty && !res.Complete {
			t.Fatalf("pass %d: %+v", passes, res)
		}
		// Every key below dirty kept only at its last offset below it.
		dirty = res.End
		if res.Complete {
			break
		}
		if passes > 100 {
			t.Fatal("no end")
		}
	}
	if passes < 3 {
		t.Fatalf("%d passes", passes)
	}
	// Each pass kept the latest of each key it mapped; records of a key
	// whose later offsets lie in a later pass's range went there. The
	// result is the single-pass one.
	sameRecords(t, "after the bounded passes", logRecords(t, l), expectClean(all, dirty, true))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	verifyDir(t, dir, nil)
}

// TestCleanConcurrentReaders reads the log while it is cleaned: every
// read sees the whole range, before or after the swap.
func TestCleanConcurrentReaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, segment.Config{SegmentBytes: 3000})
	defer l.Close()
	all := workload(t, l, rng, 200, 30)
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			latest := map[string][]byte{}
			if err := l.Batches(0, func(b recordbatch.Batch) error {
				recs, err := b.DecodeRecords(0)
				for _, r := range recs {
					if r.Key != nil {
						latest[string(r.Key)] = r.Value
					}
				}
				return err
			}); err != nil {
				errs <- err
				return
			}
			want := map[string][]byte{}
			for _, r := range all {
				if r.key != nil {
					want[string(r.key)] = r.value
				}
			}
			for k, v := range want {
				if got, ok := latest[k]; (ok || v != nil) && !bytes.Equal(got, v) {
					errs <- fmt.Errorf("key %s: %q, want %q", k, got, v)
					return
				}
			}
		}
	}()
	for i := range 3 {
		if _, err := l.Clean(segment.CleanOptions{Now: time.UnixMilli(1800000000000 + int64(i)*7200000), DeleteRetention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// TestCleanCrash crashes the swap after every file operation, in every
// crash mode: the reopened log holds either the records before the pass
// or those after it, reads them whole, and passes Verify; appending and
// a second open work.
func TestCleanCrash(t *testing.T) {
	f := crashfs.New(t.TempDir())
	dir := filepath.Join(f.Root(), "p-0")
	cfg := segment.Config{FS: f, SegmentBytes: 2500, IndexIntervalBytes: 200}
	l, _ := open(t, dir, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	workload(t, l, rng, 60, 15)
	if err := f.SyncDir(f.Root()); err != nil {
		t.Fatal(err)
	}
	before := logRecords(t, l)
	type image struct {
		fs *crashfs.FS
		op crashfs.Op
	}
	var images []image
	f.SetHook(func(op crashfs.Op) {
		for _, m := range crashfs.Modes {
			images = append(images, image{f.Crash(m, rng), op})
		}
	})
	res, err := l.Clean(segment.CleanOptions{Now: time.UnixMilli(1800000000000)})
	f.SetHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) < 2 {
		t.Fatalf("groups %v: want at least 2", res.Groups)
	}
	after := logRecords(t, l)
	if len(after) >= len(before) {
		t.Fatal("the pass removed nothing")
	}
	images = append(images, image{f.Crash(crashfs.DropUnsynced, rng), crashfs.Op{}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A state is the records of each group: before or after, group by
	// group (a crash between two groups' swaps keeps the first).
	bounds := []int64{}
	for _, g := range res.Groups {
		bounds = append(bounds, g[0])
	}
	segs := func(rs []rec, from, to int64) []rec {
		var out []rec
		for _, r := range rs {
			if r.offset >= from && r.offset < to {
				out = append(out, r)
			}
		}
		return out
	}
	sawBefore, sawAfter, reopened := 0, 0, 0
	for i, im := range images {
		cfg := cfg
		cfg.FS = im.fs
		// An open that finishes a swap may itself be cut short: every
		// state it passes through opens to the same records.
		if names, _ := im.fs.ReadDir(dir); slices.ContainsFunc(names, func(n string) bool { return filepath.Ext(n) == ".swap" }) && reopened < 20 {
			reopened++
			var mid []*crashfs.FS
			probe := im.fs.Clone()
			probe.SetHook(func(crashfs.Op) { mid = append(mid, probe.Crash(crashfs.DropUnsynced, rng)) })
			pcfg := cfg
			pcfg.FS = probe
			pl, _, err := segment.Open(dir, pcfg)
			probe.SetHook(nil)
			if err != nil {
				t.Fatalf("image %d: open: %v", i, err)
			}
			want := logRecords(t, pl)
			if err := pl.Close(); err != nil {
				t.Fatal(err)
			}
			for j, m := range mid {
				mcfg := cfg
				mcfg.FS = m
				ml, _, err := segment.Open(dir, mcfg)
				if err != nil {
					t.Fatalf("image %d, open cut at op %d: %v", i, j, err)
				}
				sameRecords(t, fmt.Sprintf("image %d, open cut at op %d", i, j), logRecords(t, ml), want)
				if err := ml.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
		l, _, err := segment.Open(dir, cfg)
		if err != nil {
			t.Fatalf("image %d (after %v): open: %v", i, im.op, err)
		}
		got := logRecords(t, l)
		for j, from := range bounds {
			to := int64(1 << 62)
			if j+1 < len(bounds) {
				to = bounds[j+1]
			}
			g, b, a := segs(got, from, to), segs(before, from, to), segs(after, from, to)
			switch {
			case slices.EqualFunc(g, a, recEqual):
				sawAfter++
			case slices.EqualFunc(g, b, recEqual):
				sawBefore++
			default:
				t.Fatalf("image %d (after %v): group at %d holds %d records, neither the %d before nor the %d after", i, im.op, from, len(g), len(b), len(a))
			}
		}
		names, _ := im.fs.ReadDir(dir)
		for _, n := range names {
			if filepath.Ext(n) == ".swap" || filepath.Ext(n) == ".cleaned" {
				t.Fatalf("image %d: %s left", i, n)
			}
		}
		if _, err := l.Append(keyedBatch(t, recordbatch.CodecNone, -1, 0, []rec{{ts: 1, key: []byte("new"), value: []byte("v")}})); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		verifyDir(t, dir, im.fs)
		l, _, err = segment.Open(dir, cfg)
		if err != nil {
			t.Fatalf("image %d: second open: %v", i, err)
		}
		if n := len(logRecords(t, l)); n != len(got)+1 {
			t.Fatalf("image %d: %d records after the append, want %d", i, n, len(got)+1)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d crash images: %d groups found as before, %d as after", len(images), sawBefore, sawAfter)
	if sawBefore == 0 || sawAfter == 0 || reopened == 0 {
		t.Fatal("the images do not cover both sides of the swap")
	}
}

func recEqual(a, b rec) bool {
	return a.offset == b.offset && bytes.Equal(a.key, b.key) && bytes.Equal(a.value, b.value) && (a.value == nil) == (b.value == nil)
}

// TestOffsetMap checks the map against a Go map until it is full.
func TestOffsetMap(t *testing.T) {
	m, err := segment.NewOffsetMap(1000 * 24)
	if err != nil {
		t.Fatal(err)
	}
	checkOffsetMap(t, m, rand.New(rand.NewPCG(1, 1)), 5000)
	if _, err := segment.NewOffsetMap(10); err == nil {
		t.Fatal("a map of 10 bytes")
	}
}

func checkOffsetMap(t testing.TB, m *segment.OffsetMap, rng *rand.Rand, ops int) {
	model := map[string]int64{}
	off := int64(0)
	for range ops {
		k := fmt.Appendf(nil, "k%d", rng.IntN(1200))
		off += int64(rng.IntN(3))
		_, had := model[string(k)]
		ok := m.Put(k, off)
		if ok != (had || len(model) < int(float64(m.Slots())*0.9)) {
			t.Fatalf("put %s: %v with %d keys of %d slots", k, ok, len(model), m.Slots())
		}
		if ok {
			model[string(k)] = off
		}
		if m.Len() != len(model) {
			t.Fatalf("len %d, want %d", m.Len(), len(model))
		}
	}
	for k, v := range model {
		if got := m.Get([]byte(k)); got != v {
			t.Fatalf("get %s: %d, want %d", k, got, v)
		}
	}
	if got := m.Get([]byte("absent")); got != -1 {
		t.Fatalf("absent key: %d", got)
	}
	m.Reset()
	if m.Len() != 0 || m.Latest() != -1 || m.Get([]byte("k1")) != -1 {
		t.Fatal("reset")
	}
}
