package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// verifyCfg makes small segments with an index entry for every batch
// after a segment's first.
var verifyCfg = segment.Config{SegmentBytes: 1000, IndexIntervalBytes: 1}

// writtenLog is a log written for a Verify test.
type writtenLog struct {
	dir   string
	infos []segment.AppendInfo
	sizes []int
	segs  []int64
}

// writeLog appends n batches to a new log and closes it cleanly, or,
// unless clean, leaves it as a killed process does (synced, no clean
// mark, recovery point at the active segment).
func writeLog(t *testing.T, cfg segment.Config, n int, clean bool) writtenLog {
	t.Helper()
	w := writtenLog{dir: filepath.Join(t.TempDir(), "p-0")}
	l, _ := open(t, w.dir, cfg)
	for i := range n {
		b := batch(t, 1+i%2, 60, 1700000000000+int64(10*i))
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		w.infos = append(w.infos, info)
		w.sizes = append(w.sizes, len(b))
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	w.segs = l.Segments()
	if clean {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Cleanup(func() { l.Close() })
	}
	return w
}

func (w writtenLog) path(base int64, suffix string) string {
	return filepath.Join(w.dir, name(base, suffix))
}

// inSegment returns the indexes in w.infos of the batches of segment base.
func (w writtenLog) inSegment(base int64) []int {
	var out []int
	for i, info := range w.infos {
		if info.Segment == base {
			out = append(out, i)
		}
	}
	return out
}

// verifyBoth runs Verify twice, once holding batches for a Batch callback
// and once streaming them, checks that both find the same, and returns
// the findings, the stats and the batches the callback saw.
func verifyBoth(t *testing.T, dir string) ([]segment.Problem, segment.VerifyStats, []recordbatch.Batch) {
	t.Helper()
	var held []segment.Problem
	var seen []recordbatch.Batch
	v := segment.Verifier{
		Report: func(p segment.Problem) { held = append(held, p) },
		Batch: func(b recordbatch.Batch, file string, pos int64) error {
			if !strings.HasSuffix(file, ".log") || pos < 0 {
				t.Errorf("batch at %s byte %d", file, pos)
			}
			seen = append(seen, bytes.Clone(b))
			return nil
		},
	}
	stats, err := v.Verify(dir)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	var streamed []segment.Problem
	stats2, err := segment.Verify(dir, nil, func(p segment.Problem) { streamed = append(streamed, p) })
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !slices.Equal(held, streamed) || stats != stats2 {
		t.Fatalf("holding and streaming differ:\n%v\n%+v\n%v\n%+v", held, stats, streamed, stats2)
	}
	return held, stats, seen
}

func problemsText(ps []segment.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s %s @%d: %s\n", p.Kind, filepath.Base(p.File), p.Pos, p.Detail)
	}
	return b.String()
}

// wantProblem is one expected finding: its kind, file, position and a
// part of its detail.
type wantProblem struct {
	kind     segment.ProblemKind
	file     string // path
	pos      int64
	contains string
}

func checkProblems(t *testing.T, got []segment.Problem, want ...wantProblem) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := got[i], want[i]
		ok = g.Kind == w.kind && g.File == w.file && g.Pos == w.pos && strings.Contains(g.Detail, w.contains)
	}
	if !ok {
		var ws strings.Builder
		for _, w := range want {
			fmt.Fprintf(&ws, "  %s %s @%d: ...%s...\n", w.kind, filepath.Base(w.file), w.pos, w.contains)
		}
		t.Fatalf("findings:\n%swant:\n%s", problemsText(got), ws.String())
	}
}

func TestVerifyCleanLog(t *testing.T) {
	for _, clean := range []bool{true, false} {
		w := writeLog(t, verifyCfg, 40, clean)
		if len(w.segs) < 4 {
			t.Fatalf("%d segments", len(w.segs))
		}
		got, stats, seen := verifyBoth(t, w.dir)
		checkProblems(t, got)
		records := 0
		for i := range w.infos {
			records += 1 + i%2
		}
		last := w.infos[len(w.infos)-1].LastOffset
		if stats.Segments != len(w.segs) || stats.Batches != 40 || stats.Records != int64(records) ||
			stats.EndOffset != last+1 || stats.StartOffset != 0 || stats.Clean != clean || stats.Damaged || stats.TornBytes != 0 {
			t.Fatalf("clean=%t: stats %+v", clean, stats)
		}
		// Every batch but each segment's first has an index entry; the
		// time index has at least one entry per segment. Without a
		// close, the active segment's entries are still in memory.
		entries, segsIndexed := 40-len(w.segs), len(w.segs)
		if !clean {
			entries -= len(w.inSegment(w.segs[len(w.segs)-1])) - 1
			segsIndexed--
		}
		if stats.IndexEntries != int64(entries) || stats.TimeIndexEntries < int64(segsIndexed) {
			t.Fatalf("clean=%t: stats %+v", clean, stats)
		}
		// Batch saw every batch, whole, in order.
		if len(seen) != 40 {
			t.Fatalf("Batch saw %d batches", len(seen))
		}
		for i, b := range seen {
			if b.BaseOffset() != w.infos[i].BaseOffset || len(b) != w.sizes[i] || b.Validate() != nil {
				t.Fatalf("batch %d: base %d, %d bytes", i, b.BaseOffset(), len(b))
			}
		}
	}
}

// TestVerifyFindings is the damage matrix: each case breaks a log, and
// Verify must report exactly what is expected. Where Verify says what the
// next open will do, the case opens a copy and checks it.
func TestVerifyFindings(t *testing.T) {
	flip := func(path string, at int64) {
		modify(t, path, func(b []byte) []byte { b[at] ^= 0x20; return b })
	}
	for _, c := range []struct {
		name  string
		clean bool
		// breakLog damages w and returns the expected findings and, for
		// what the next open cuts, how many bytes it cuts (-1: the open
		// fails with ErrCorrupt; 0: not checked).
		breakLog func(w writtenLog) ([]wantProblem, int64)
	}{
		{"flipped byte in a sealed segment", true, func(w writtenLog) ([]wantProblem, int64) {
			i := w.inSegment(w.segs[1])[2]
			path := w.path(w.segs[1], ".log")
			flip(path, w.infos[i].Position+int64(w.sizes[i])-5)
			return []wantProblem{{segment.ProblemCorrupt, path, w.infos[i].Position, "crc mismatch"}}, 0
		}},
		{"flipped byte in a sealed segment below the recovery point", false, func(w writtenLog) ([]wantProblem, int64) {
			i := w.inSegment(w.segs[0])[1]
			path := w.path(w.segs[0], ".log")
			flip(path, w.infos[i].Position+70)
			return []wantProblem{{segment.ProblemCorrupt, path, w.infos[i].Position, "stored crc"}}, 0
		}},
		{"torn last batch", false, func(w writtenLog) ([]wantProblem, int64) {
			last := len(w.infos) - 1
			active := w.segs[len(w.segs)-1]
			path := w.path(active, ".log")
			modify(t, path, func(b []byte) []byte { return b[:len(b)-10] })
			n := int64(w.sizes[last] - 10)
			// (The active segment's index entries are still in memory:
			// its index files are empty, so nothing there goes unchecked.)
			return []wantProblem{
				{segment.ProblemTornTail, path, w.infos[last].Position, fmt.Sprintf("torn tail: %d bytes, will be cut at the next open", n)},
			}, n
		}},
		{"a few bytes of a header", false, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[len(w.segs)-1], ".log")
			fi, _ := os.Stat(path)
			modify(t, path, func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0) })
			return []wantProblem{{segment.ProblemTornTail, path, fi.Size(), "torn tail: 10 bytes"}}, 10
		}},
		{"zeroed tail", false, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[len(w.segs)-1], ".log")
			fi, _ := os.Stat(path)
			modify(t, path, func(b []byte) []byte { return append(b, make([]byte, 4096)...) })
			return []wantProblem{{segment.ProblemTornTail, path, fi.Size(), "torn tail: 4096 bytes"}}, 4096
		}},
		{"crc of the last batch", false, func(w writtenLog) ([]wantProblem, int64) {
			last := len(w.infos) - 1
			path := w.path(w.segs[len(w.segs)-1], ".log")
			flip(path, w.infos[last].Position+int64(w.sizes[last])-1)
			n := int64(w.sizes[last])
			return []wantProblem{{segment.ProblemTornTail, path, w.infos[last].Position, fmt.Sprintf("torn tail: %d bytes", n)}}, n
		}},
		{"crc in the active segment, valid batches after", false, func(w writtenLog) ([]wantProblem, int64) {
			idx := w.inSegment(w.segs[len(w.segs)-1])
			if len(idx) < 3 {
				t.Fatalf("active segment has %d batches", len(idx))
			}
			i := idx[len(idx)-3]
			path := w.path(w.segs[len(w.segs)-1], ".log")
			flip(path, w.infos[i].Position+65)
			fi, _ := os.Stat(path)
			n := fi.Size() - w.infos[i].Position
			return []wantProblem{{segment.ProblemCorrupt, path, w.infos[i].Position, fmt.Sprintf("the next open cuts the log here, dropping %d bytes of this file", n)}}, n
		}},
		{"torn tail after a clean shutdown", true, func(w writtenLog) ([]wantProblem, int64) {
			last := len(w.infos) - 1
			active := w.segs[len(w.segs)-1]
			path := w.path(active, ".log")
			modify(t, path, func(b []byte) []byte { return b[:len(b)-10] })
			unchecked := fmt.Sprintf("1 entry not checked: the log cannot be read past byte %d", w.infos[last].Position)
			return []wantProblem{
				{segment.ProblemCorrupt, path, w.infos[last].Position, "a batch of 201 bytes, but only 191 bytes are left in the file"},
				{segment.ProblemNote, w.path(active, ".index"), -1, unchecked},
				{segment.ProblemNote, w.path(active, ".timeindex"), -1, unchecked},
			}, -1
		}},
		{"overlapping segments", true, func(w writtenLog) ([]wantProblem, int64) {
			// The indexes go: their relative offsets would be off by one.
			old, lower := w.segs[2], w.segs[2]-1
			if err := os.Rename(w.path(old, ".log"), w.path(lower, ".log")); err != nil {
				t.Fatal(err)
			}
			for _, suf := range []string{".index", ".timeindex"} {
				if err := os.Remove(w.path(old, suf)); err != nil {
					t.Fatal(err)
				}
			}
			return []wantProblem{
				{segment.ProblemCorrupt, w.path(lower, ".log"), 0, fmt.Sprintf("the segment starts at offset %d, but the previous segment ends at offset %d", lower, old-1)},
				{segment.ProblemNote, w.path(lower, ".index"), -1, "missing"},
				{segment.ProblemNote, w.path(lower, ".timeindex"), -1, "missing"},
			}, -1
		}},
		{"index entry inside a batch", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".index")
			modify(t, path, func(b []byte) []byte { binary.BigEndian.PutUint32(b[12:], binary.BigEndian.Uint32(b[12:])+3); return b })
			return []wantProblem{{segment.ProblemIndex, path, 8, "is not the start of a batch"}}, 0
		}},
		{"index entry with a wrong offset", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[1], ".index")
			modify(t, path, func(b []byte) []byte { b[3]--; return b })
			i := w.inSegment(w.segs[1])[1]
			return []wantProblem{{segment.ProblemIndex, path, 0, fmt.Sprintf("ends at offset %d", w.infos[i].LastOffset)}}, 0
		}},
		{"time index entry with a wrong timestamp", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".timeindex")
			modify(t, path, func(b []byte) []byte { b[7]++; return b })
			return []wantProblem{{segment.ProblemIndex, path, 0, "has max timestamp"}}, 0
		}},
		{"time index entry past the log", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".timeindex")
			modify(t, path, func(b []byte) []byte {
				e := binary.BigEndian.AppendUint64(nil, 1900000000000)
				return binary.BigEndian.AppendUint32(append(b, e...), 10000)
			})
			fi, _ := os.Stat(path)
			return []wantProblem{{segment.ProblemIndex, path, fi.Size() - 12, "past the log"}}, 0
		}},
		{"index with a partial entry", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".index")
			fi, _ := os.Stat(path)
			modify(t, path, func(b []byte) []byte { return append(b, 1, 2, 3) })
			return []wantProblem{{segment.ProblemIndex, path, fi.Size(), "not a multiple of 8"}}, 0
		}},
		{"index that the next open rebuilds", false, func(w writtenLog) ([]wantProblem, int64) {
			// The active segment's index entries are still in memory (an
			// index reaches its file in blocks, and at a sync of its
			// segment): the file gets one naming an offset inside the
			// batch at its position rather than the batch's last.
			last := w.segs[len(w.segs)-1]
			path := w.path(last, ".index")
			var entry []byte
			for _, info := range w.infos {
				if info.Segment == last && info.Position > 0 && info.LastOffset > info.BaseOffset {
					entry = binary.BigEndian.AppendUint32(nil, uint32(info.LastOffset-1-last))
					entry = binary.BigEndian.AppendUint32(entry, uint32(info.Position))
					break
				}
			}
			modify(t, path, func([]byte) []byte { return entry })
			return []wantProblem{{segment.ProblemNote, path, 0, "the next open rebuilds this index"}}, 0
		}},
		{"zero slots after the index entries", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".index")
			fi, _ := os.Stat(path)
			modify(t, path, func(b []byte) []byte { return append(b, make([]byte, 80)...) })
			return []wantProblem{{segment.ProblemNote, path, fi.Size(), "80 bytes of zero slots"}}, 0
		}},
		{"garbage after zero slots", true, func(w writtenLog) ([]wantProblem, int64) {
			path := w.path(w.segs[0], ".timeindex")
			fi, _ := os.Stat(path)
			modify(t, path, func(b []byte) []byte {
				return append(append(b, make([]byte, 24)...), 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0)
			})
			return []wantProblem{{segment.ProblemIndex, path, fi.Size() + 26, "non-zero byte"}}, 0
		}},
		{"missing index and a leftover file", true, func(w writtenLog) ([]wantProblem, int64) {
			if err := os.Remove(w.path(w.segs[1], ".timeindex")); err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(w.dir, "logstore.checkpoint.tmp")
			if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []wantProblem{
				{segment.ProblemNote, tmp, -1, "the next open removes it"},
				{segment.ProblemNote, w.path(w.segs[1], ".timeindex"), -1, "missing"},
			}, 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := writeLog(t, verifyCfg, 40, c.clean)
			want, cut := c.breakLog(w)
			before := testutil.FileSums(t, w.dir)
			got, stats, seen := verifyBoth(t, w.dir)
			checkProblems(t, got, want...)
			if after := testutil.FileSums(t, w.dir); !mapsEqual(before, after) {
				t.Fatal("Verify changed the directory")
			}
			if torn := want[0].kind == segment.ProblemTornTail; torn != (stats.TornBytes > 0) || torn && stats.TornBytes != cut {
				t.Fatalf("stats %+v", stats)
			}
			if damaged := want[0].kind == segment.ProblemCorrupt; damaged != stats.Damaged {
				t.Fatalf("stats %+v", stats)
			}
			// Batch sees the batches before the first damage only.
			if n := int64(len(seen)); n > 0 && seen[n-1].LastOffset()+1 != stats.EndOffset {
				t.Fatalf("Batch saw up to %d, end offset %d", seen[n-1].LastOffset(), stats.EndOffset)
			}
			if cut == 0 {
				return
			}
			// What the next open does.
			_, rep, err := segment.Open(w.dir, verifyCfg)
			switch {
			case cut < 0 && !errors.Is(err, segment.ErrCorrupt):
				t.Fatalf("open: %v, want ErrCorrupt", err)
			case cut > 0 && (err != nil || rep.TruncatedBytes != cut):
				t.Fatalf("open: %v, report %+v, want %d bytes cut", err, rep, cut)
			}
		})
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestVerifyKafkaFixtures: directories Kafka's own classes wrote.
func TestVerifyKafkaFixtures(t *testing.T) {
	t.Run("foo-0", func(t *testing.T) {
		dir := copyShared(t, "kafka-golden/foo-0",
			"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
			"00000000000000000000.txnindex", "00000000000000000000.snapshot", "00000000000000000021.snapshot",
			"00000000000000000099.log", "00000000000000000099.index")
		got, stats, seen := verifyBoth(t, dir)
		checkProblems(t, got,
			wantProblem{segment.ProblemNote, filepath.Join(dir, "00000000000000000000.index"), 40, "984 bytes of zero slots after 5 entries"},
			wantProblem{segment.ProblemNote, filepath.Join(dir, "00000000000000000000.timeindex"), 48, "1152 bytes of zero slots after 4 entries"},
		)
		if stats.Batches != 11 || len(seen) != 11 || stats.IndexEntries != 5 || stats.TimeIndexEntries != 4 || stats.EndOffset != 21 || stats.Segments != 2 {
			t.Fatalf("stats %+v, %d batches seen", stats, len(seen))
		}
	})
	t.Run("torn-0", func(t *testing.T) {
		dir := copyShared(t, "kafka-golden/torn-0", "00000000000000000000.log")
		got, stats, _ := verifyBoth(t, dir)
		log := filepath.Join(dir, "00000000000000000000.log")
		checkProblems(t, got,
			wantProblem{segment.ProblemTornTail, log, 820, "torn tail: 35 bytes, will be cut at the next open"},
			wantProblem{segment.ProblemNote, filepath.Join(dir, "00000000000000000000.index"), -1, "missing"},
			wantProblem{segment.ProblemNote, filepath.Join(dir, "00000000000000000000.timeindex"), -1, "missing"},
		)
		l, rep := open(t, dir, segment.Config{})
		defer l.Close()
		if rep.TruncatedBytes != stats.TornBytes || l.EndOffset() != stats.EndOffset {
			t.Fatalf("open cut %d bytes to end %d; Verify said %d bytes, end %d", rep.TruncatedBytes, l.EndOffset(), stats.TornBytes, stats.EndOffset)
		}
	})
	t.Run("crc-0", func(t *testing.T) {
		dir := copyShared(t, "kafka-golden/crc-0", "00000000000000000000.log")
		got, _, seen := verifyBoth(t, dir)
		if len(got) == 0 || got[0].Kind != segment.ProblemCorrupt || got[0].Pos != 0 ||
			!strings.Contains(got[0].Detail, "crc mismatch: stored crc = 655565938") ||
			!strings.Contains(got[0].Detail, "dropping 175 bytes") || len(seen) != 0 {
			t.Fatalf("findings:\n%s", problemsText(got))
		}
	})
}

// readOnlyFS fails every operation that could change a file, and records
// the flags files were opened with.
type readOnlyFS struct {
	vfs.FS
	t *testing.T
}

func (f readOnlyFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag != os.O_RDONLY {
		f.t.Errorf("OpenFile(%s, %#x): not read-only", name, flag)
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return readOnlyFile{File: file, t: f.t}, nil
}

func (f readOnlyFS) Rename(o, n string) error {
	f.t.Errorf("Rename(%s, %s)", o, n)
	return errors.ErrUnsupported
}

func (f readOnlyFS) Remove(name string) error {
	f.t.Errorf("Remove(%s)", name)
	return errors.ErrUnsupported
}

func (f readOnlyFS) MkdirAll(dir string, _ fs.FileMode) error {
	f.t.Errorf("MkdirAll(%s)", dir)
	return errors.ErrUnsupported
}

func (f readOnlyFS) SyncDir(dir string) error {
	f.t.Errorf("SyncDir(%s)", dir)
	return errors.ErrUnsupported
}

type readOnlyFile struct {
	vfs.File
	t *testing.T
}

func (f readOnlyFile) WriteAt([]byte, int64) (int, error) {
	f.t.Error("WriteAt")
	return 0, errors.ErrUnsupported
}

func (f readOnlyFile) Sync() error {
	f.t.Error("Sync")
	return errors.ErrUnsupported
}

func (f readOnlyFile) Truncate(int64) error {
	f.t.Error("Truncate")
	return errors.ErrUnsupported
}

// TestVerifyReadOnly: Verify opens files read-only and never writes,
// truncates, renames, removes or syncs, on a damaged log included.
func TestVerifyReadOnly(t *testing.T) {
	w := writeLog(t, verifyCfg, 30, false)
	modify(t, w.path(w.segs[len(w.segs)-1], ".log"), func(b []byte) []byte { return b[:len(b)-7] })
	modify(t, w.path(w.segs[0], ".index"), func(b []byte) []byte { return append(b, make([]byte, 16)...) })
	before := testutil.FileSums(t, w.dir)
	var got []segment.Problem
	if _, err := segment.Verify(w.dir, readOnlyFS{FS: vfs.OS, t: t}, func(p segment.Problem) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != segment.ProblemNote || got[1].Kind != segment.ProblemTornTail {
		t.Fatalf("findings:\n%s", problemsText(got))
	}
	if after := testutil.FileSums(t, w.dir); !mapsEqual(before, after) {
		t.Fatal("Verify changed the directory")
	}
}

// TestVerifyLargeBatch: a batch above what Verify holds is checked as it
// streams by, and Batch gets its header.
func TestVerifyLargeBatch(t *testing.T) {
	const valueSize = 9 << 20
	cfg := segment.Config{MaxBatchBytes: 10 << 20, SegmentBytes: 32 << 20}
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, cfg)
	for i := range 3 {
		size := 100
		if i == 1 {
			size = valueSize
		}
		if _, err := l.Append(batch(t, 1, size, 1700000000000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	v := segment.Verifier{
		Report: func(p segment.Problem) { t.Errorf("finding: %+v", p) },
		Batch: func(b recordbatch.Batch, _ string, _ int64) error {
			sizes = append(sizes, len(b))
			return nil
		},
	}
	if _, err := v.Verify(dir); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 3 || sizes[1] != recordbatch.HeaderSize || sizes[0] <= recordbatch.HeaderSize {
		t.Fatalf("Batch got sizes %v", sizes)
	}
	// A flipped byte deep inside the large batch is found.
	path := filepath.Join(dir, name(0, ".log"))
	modify(t, path, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
	got, _, _ := verifyBoth(t, dir)
	if len(got) != 1 || got[0].Kind != segment.ProblemCorrupt || !strings.Contains(got[0].Detail, "crc mismatch") {
		t.Fatalf("findings:\n%s", problemsText(got))
	}
}

// TestVerifyStopsOnBatchError: an error from Batch ends Verify.
func TestVerifyStopsOnBatchError(t *testing.T) {
	w := writeLog(t, verifyCfg, 10, true)
	stop := errors.New("stop")
	n := 0
	v := segment.Verifier{Batch: func(recordbatch.Batch, string, int64) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	}}
	if _, err := v.Verify(w.dir); !errors.Is(err, stop) || n != 3 {
		t.Fatalf("got %v after %d batches", err, n)
	}
}

func TestVerifyMissingDir(t *testing.T) {
	if _, err := segment.Verify(filepath.Join(t.TempDir(), "nope"), nil, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

// TestVerifyMemoryFlat: verifying a log allocates about the same however
// large it is: one read buffer per file, and for Batch one buffer the
// size of the largest batch.
func TestVerifyMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 24 MiB")
	}
	cfg := segment.Config{MaxBatchBytes: 2 << 20, SegmentBytes: 8 << 20, IndexIntervalBytes: 1}
	dir := filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, cfg)
	b := batch(t, 4, 256<<10, 1700000000000)
	for range 24 {
		if _, err := l.Append(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, withBatch := range []bool{false, true} {
		v := segment.Verifier{Report: func(p segment.Problem) { t.Errorf("finding: %+v", p) }}
		if withBatch {
			v.Batch = func(recordbatch.Batch, string, int64) error { return nil }
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		stats, err := v.Verify(dir)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; stats.Bytes < 24<<20 || alloc > 4<<20 {
			t.Fatalf("Batch set: %t: %d bytes allocated to verify %d bytes", withBatch, alloc, stats.Bytes)
		}
	}
}

// TestVerifyTimeIndexInsideBatch: a time-index entry naming an offset
// inside the batch whose max timestamp it holds, as some Kafka versions
// write it, is fine; one naming an offset in no batch is not.
func TestVerifyTimeIndexInsideBatch(t *testing.T) {
	w := writeLog(t, verifyCfg, 20, true)
	path := w.path(w.segs[0], ".timeindex")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Find an entry naming a batch of 2 records, and point it at the
	// batch's first offset.
	at := -1
	for i := 0; i+12 <= len(data) && at < 0; i += 12 {
		off := w.segs[0] + int64(binary.BigEndian.Uint32(data[i+8:]))
		for _, info := range w.infos {
			if info.LastOffset == off && info.BaseOffset == off-1 {
				at = i
			}
		}
	}
	if at < 0 {
		t.Fatal("no entry names a batch of 2 records")
	}
	binary.BigEndian.PutUint32(data[at+8:], binary.BigEndian.Uint32(data[at+8:])-1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, _ := verifyBoth(t, w.dir)
	checkProblems(t, got)

	// An offset past the segment's last batch names no batch.
	w = writeLog(t, verifyCfg, 20, true)
	path = w.path(w.segs[1], ".timeindex")
	modify(t, path, func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[8:], uint32(w.segs[2]-w.segs[1]))
		return b
	})
	got, _, _ = verifyBoth(t, w.dir)
	if len(got) == 0 || got[0].Kind != segment.ProblemIndex || got[0].Pos != 0 {
		t.Fatalf("findings:\n%s", problemsText(got))
	}
}
