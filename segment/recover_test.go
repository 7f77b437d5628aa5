package segment_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// crashedLog writes n batches into a log in a new directory and returns
// it without closing it (as a killed process leaves it: no clean mark),
// with the sizes of the batches and the segments' base offsets.
func crashedLog(t *testing.T, cfg segment.Config, n int) (dir string, sizes []int, segs []int64) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "p-0")
	l, _ := open(t, dir, cfg)
	for i := range n {
		b := batch(t, 1+i%2, 60, 1700000000000+int64(i))
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(b))
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	return dir, sizes, l.Segments()
}

func modify(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reopenAndCheck opens dir and expects exactly want batches, whole and
// valid, then appends one more, reopens cleanly and expects want+1.
func reopenAndCheck(t *testing.T, dir string, cfg segment.Config, want int) segment.RecoveryReport {
	t.Helper()
	l, rep := open(t, dir, cfg)
	if got := readAll(t, l); len(got) != want {
		t.Fatalf("%d batches after recovery, want %d (report %+v)", len(got), want, rep)
	}
	end := l.EndOffset()
	info, err := l.Append(batch(t, 1, 10, 1800000000000))
	if err != nil || info.BaseOffset != end {
		t.Fatalf("append after recovery: %+v %v", info, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rep2 := open(t, dir, cfg)
	defer l.Close()
	if !rep2.Clean || rep2.TruncatedBytes != 0 || len(readAll(t, l)) != want+1 {
		t.Fatalf("second open: %+v", rep2)
	}
	return rep
}

func TestRecoveryGarbageAfterLog(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 2000}
	dir, sizes, segs := crashedLog(t, cfg, 20)
	garbage := bytes.Repeat([]byte{0x5a, 0x00, 0x7f}, 100)
	modify(t, filepath.Join(dir, name(segs[len(segs)-1], ".log")), func(b []byte) []byte { return append(b, garbage...) })
	rep := reopenAndCheck(t, dir, cfg, len(sizes))
	if rep.TruncatedBytes != int64(len(garbage)) || !errors.Is(rep.Reason, segment.ErrCorrupt) {
		t.Fatalf("report %+v", rep)
	}
}

func TestRecoveryZeroTail(t *testing.T) {
	cfg := segment.Config{}
	dir, sizes, segs := crashedLog(t, cfg, 10)
	modify(t, filepath.Join(dir, name(segs[0], ".log")), func(b []byte) []byte { return append(b, make([]byte, 4096)...) })
	rep := reopenAndCheck(t, dir, cfg, len(sizes))
	if rep.TruncatedBytes != 4096 {
		t.Fatalf("report %+v", rep)
	}
}

// TestRecoveryTornLastBatch cuts the last batch at every byte: each cut
// reopens to the batches before it, reported as a torn write.
func TestRecoveryTornLastBatch(t *testing.T) {
	cfg := segment.Config{}
	dir, sizes, segs := crashedLog(t, cfg, 6)
	logName := filepath.Join(dir, name(segs[0], ".log"))
	whole, err := os.ReadFile(logName)
	if err != nil {
		t.Fatal(err)
	}
	last := sizes[len(sizes)-1]
	for cut := 1; cut < last; cut++ {
		d := filepath.Join(t.TempDir(), "p-0")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name(segs[0], ".log")), whole[:len(whole)-cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l, rep := open(t, d, cfg)
		if got := len(readAll(t, l)); got != len(sizes)-1 || rep.TruncatedBytes != int64(last-cut) {
			t.Fatalf("cut %d: %d batches, report %+v", cut, got, rep)
		}
		if last-cut >= 17 && !errors.Is(rep.Reason, recordbatch.ErrTruncated) {
			t.Fatalf("cut %d: reason %v, want a torn write", cut, rep.Reason)
		}
		if _, err := l.Append(batch(t, 1, 5, 0)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRecoveryCRCFlippedInLastBatch(t *testing.T) {
	cfg := segment.Config{}
	dir, sizes, segs := crashedLog(t, cfg, 8)
	modify(t, filepath.Join(dir, name(segs[0], ".log")), func(b []byte) []byte { b[len(b)-3] ^= 0x10; return b })
	rep := reopenAndCheck(t, dir, cfg, len(sizes)-1)
	if !errors.Is(rep.Reason, recordbatch.ErrCRC) || rep.TruncatedBytes != int64(sizes[len(sizes)-1]) {
		t.Fatalf("report %+v", rep)
	}
	var ce *segment.CorruptionError
	if !errors.As(rep.Reason, &ce) || ce.File != filepath.Join(dir, name(segs[0], ".log")) {
		t.Fatalf("reason %v does not name the file", rep.Reason)
	}
}

// TestRecoveryIndexes: a missing index, garbage after an index and a
// garbled index are rebuilt from the log, after a crash and after a
// clean close alike.
func TestRecoveryIndexes(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 1500, IndexIntervalBytes: 100}
	for _, clean := range []bool{false, true} {
		for _, c := range []struct {
			name string
			f    func(path string)
		}{
			{"missing", func(p string) { os.Remove(p) }},
			{"garbage after", func(p string) { modify(t, p, func(b []byte) []byte { return append(b, 1, 2, 3, 4, 5) }) }},
			{"garbled", func(p string) {
				modify(t, p, func(b []byte) []byte {
					for i := range b {
						b[i] ^= 0xff
					}
					return b
				})
			}},
		} {
			dir, sizes, segs := crashedLog(t, cfg, 30)
			if clean {
				l, _ := open(t, dir, cfg)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for _, base := range segs {
				c.f(filepath.Join(dir, name(base, ".index")))
				c.f(filepath.Join(dir, name(base, ".timeindex")))
			}
			rep := reopenAndCheck(t, dir, cfg, len(sizes))
			if rep.TruncatedBytes != 0 {
				t.Fatalf("clean=%t %s: %+v", clean, c.name, rep)
			}
			if clean && len(rep.RebuiltIndexes) == 0 && c.name != "garbage after" {
				t.Fatalf("clean=%t %s: nothing rebuilt: %+v", clean, c.name, rep)
			}
		}
	}
}

// TestDamageInSealedSegmentNotCut: without a checkpoint (as in a
// directory Kafka wrote) every segment is scanned, but only the last can
// hold a torn write: a bad batch in the second of several segments is
// corruption of synced data. Open reports it with the file and position
// and changes nothing (Kafka would cut there and delete every later
// segment).
func TestDamageInSealedSegmentNotCut(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 1000}
	dir, _, segs := crashedLog(t, cfg, 30)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	if err := os.Remove(filepath.Join(dir, "logstore.checkpoint")); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, name(segs[1], ".log"))
	modify(t, second, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
	before := snapshotFiles(t, dir)
	_, _, err := segment.Open(dir, cfg)
	var ce *segment.CorruptionError
	if !errors.Is(err, segment.ErrCorrupt) || !errors.As(err, &ce) || ce.File != second {
		t.Fatalf("got %v, want corruption in %s", err, second)
	}
	for _, base := range segs {
		n := name(base, ".log")
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || !bytes.Equal(got, before[n]) {
			t.Fatalf("%s changed or removed: %v", n, err)
		}
	}
}

// snapshotFiles reads every .log file of dir.
func snapshotFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = data
	}
	return out
}

// TestDamageBelowRecoveryPoint: data below the recovery point was
// durable; damage found there (while rebuilding a lost index) is reported
// as corruption, never cut.
func TestDamageBelowRecoveryPoint(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 1000}
	dir, _, segs := crashedLog(t, cfg, 30)
	first := filepath.Join(dir, name(segs[0], ".log"))
	modify(t, first, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
	if err := os.Remove(filepath.Join(dir, name(segs[0], ".index"))); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(first)
	_, _, err := segment.Open(dir, cfg)
	if !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	after, _ := os.ReadFile(first)
	if !bytes.Equal(before, after) {
		t.Fatal("the damaged segment was changed")
	}
}
