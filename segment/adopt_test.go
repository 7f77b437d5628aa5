package segment_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore/segment"
)

// adoptedDir writes a log of 20 one-record batches over several
// segments, closes it and removes its checkpoint, as a directory a Kafka
// broker wrote has none; it returns the directory and the segments.
func adoptedDir(t *testing.T, cfg segment.Config) (string, []int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := open(t, dir, cfg)
	appendSynced(t, l, 20)
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(segs) < 3 {
		t.Fatalf("segments %v: want at least 3", segs)
	}
	if err := os.Remove(filepath.Join(dir, "logstore.checkpoint")); err != nil {
		t.Fatal(err)
	}
	return dir, segs
}

// verifyAdopted runs Verify on dir with the adopted start and returns its
// stats, findings and prediction; it fails the test on a finding that is
// not a note.
func verifyAdopted(t *testing.T, dir string, adopted int64) (segment.VerifyStats, []segment.Problem, segment.OpenPrediction) {
	t.Helper()
	var problems []segment.Problem
	var pred segment.OpenPrediction
	v := segment.Verifier{
		Report:          func(p segment.Problem) { problems = append(problems, p) },
		Predict:         func(p segment.OpenPrediction) { pred = p },
		AdoptedLogStart: adopted,
	}
	vs, err := v.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Kind != segment.ProblemNote {
			t.Fatalf("verify found\n%swant only notes", problemsText(problems))
		}
	}
	return vs, problems, pred
}

// adoptedNote says whether problems hold Verify's note that the log
// starts at the adopted start.
func adoptedNote(problems []segment.Problem) bool {
	for _, p := range problems {
		if strings.Contains(p.Detail, "adopted log start offset") {
			return true
		}
	}
	return false
}

// TestAdoptedLogStart: a log without a checkpoint of its own starts at
// Config.AdoptedLogStart inside a later segment; Verify predicts the same
// start and the deletion of the segment wholly below it; the open reads
// nothing below it, and its checkpoint keeps the start for the next open,
// which no longer needs the field.
func TestAdoptedLogStart(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 500}
	dir, segs := adoptedDir(t, cfg)
	start := segs[1] + 1
	vs, problems, pred := verifyAdopted(t, dir, start)
	if vs.StartOffset != start || vs.EndOffset != 20 || !adoptedNote(problems) || !slices.Equal(pred.BelowStart, segs[:1]) {
		t.Fatalf("verify: start %d, end %d, below start %v, findings\n%swant start %d, end 20, %v below it, and the adopted-start note",
			vs.StartOffset, vs.EndOffset, pred.BelowStart, problemsText(problems), start, segs[:1])
	}
	cfg.AdoptedLogStart = start
	l, rep := open(t, dir, cfg)
	if l.StartOffset() != start || !rep.AdoptedLogStart || !slices.Equal(l.Segments(), segs[1:]) {
		t.Fatalf("open: start %d, adopted %v, segments %v; want %d, true, %v", l.StartOffset(), rep.AdoptedLogStart, l.Segments(), start, segs[1:])
	}
	if _, err := l.Read(start-1, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the adopted start: %v", err)
	}
	if data, err := l.Read(start, 1<<20); err != nil || len(data) == 0 {
		t.Fatalf("read at the adopted start: %d bytes, %v", len(data), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The log's own checkpoint holds the start now, and wins over any
	// adopted start, lower or higher.
	for _, adopted := range []int64{0, start + 3} {
		vs, problems, _ := verifyAdopted(t, dir, adopted)
		if vs.StartOffset != start || adoptedNote(problems) {
			t.Fatalf("verify with own checkpoint, adopted %d: start %d, findings\n%swant start %d, no adopted note", adopted, vs.StartOffset, problemsText(problems), start)
		}
		cfg.AdoptedLogStart = adopted
		l, rep := open(t, dir, cfg)
		if l.StartOffset() != start || rep.AdoptedLogStart {
			t.Fatalf("reopen with adopted %d: start %d, adopted %v; want %d, false", adopted, l.StartOffset(), rep.AdoptedLogStart, start)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdoptedLogStartBounds: an adopted start at or below the first
// segment's base changes nothing; one past the log end is capped at it,
// by Open and by Verify alike; a directory without segments (a new
// partition) ignores it.
func TestAdoptedLogStartBounds(t *testing.T) {
	cfg := segment.Config{SegmentBytes: 500}
	for _, c := range []struct {
		adopted, want int64
		note          bool
	}{{-5, 0, false}, {0, 0, false}, {1 << 40, 20, true}} {
		dir, segs := adoptedDir(t, cfg)
		vs, problems, _ := verifyAdopted(t, dir, c.adopted)
		if vs.StartOffset != c.want || adoptedNote(problems) != c.note {
			t.Errorf("adopted %d: verify start %d, findings\n%swant %d, note %v", c.adopted, vs.StartOffset, problemsText(problems), c.want, c.note)
		}
		cfg := cfg
		cfg.AdoptedLogStart = c.adopted
		l, rep := open(t, dir, cfg)
		if l.StartOffset() != c.want || rep.AdoptedLogStart != c.note || l.EndOffset() != 20 {
			t.Errorf("adopted %d: open start %d, adopted %v, end %d; want %d, %v, 20", c.adopted, l.StartOffset(), rep.AdoptedLogStart, l.EndOffset(), c.want, c.note)
		}
		if c.want == 0 && !slices.Equal(l.Segments(), segs) {
			t.Errorf("adopted %d: segments %v, want %v", c.adopted, l.Segments(), segs)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "t-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vs, _, _ := verifyAdopted(t, dir, 7)
	l, rep := open(t, dir, segment.Config{AdoptedLogStart: 7})
	defer l.Close()
	if l.StartOffset() != 0 || l.EndOffset() != 0 || rep.AdoptedLogStart || vs.StartOffset != 0 {
		t.Fatalf("new partition: open [%d, %d) adopted %v, verify start %d; want [0, 0), false, 0", l.StartOffset(), l.EndOffset(), rep.AdoptedLogStart, vs.StartOffset)
	}
}
