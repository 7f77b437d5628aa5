package segment_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// writeCheckpoint replaces dir's checkpoint with an unclean one.
func writeCheckpoint(t *testing.T, dir string, logStart, recoveryPoint int64) {
	t.Helper()
	body := fmt.Sprintf("logstore-checkpoint 1\nlog-start-offset %d\nrecovery-point %d\nclean-shutdown false\n", logStart, recoveryPoint)
	body += fmt.Sprintf("crc32c %08x\n", recordbatch.Checksum([]byte(body)))
	if err := os.WriteFile(filepath.Join(dir, "logstore.checkpoint"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verifyProblems runs Verify on dir and returns its findings. It fails
// the test unless Verify predicts a refusal of the next open.
func verifyProblems(t *testing.T, dir string) []segment.Problem {
	t.Helper()
	var problems []segment.Problem
	var pred segment.OpenPrediction
	v := segment.Verifier{
		Report:  func(p segment.Problem) { problems = append(problems, p) },
		Predict: func(p segment.OpenPrediction) { pred = p },
	}
	if _, err := v.Verify(dir); err != nil {
		t.Fatal(err)
	}
	if !pred.Refused {
		t.Errorf("prediction %+v, want a refusal", pred)
	}
	return problems
}

// TestVerifyPredictsSpareRefusal: a spare whose first batch names an
// existing segment makes the open refuse the partition; verify, which
// plans the open with the same code, says so.
func TestVerifyPredictsSpareRefusal(t *testing.T) {
	dir, _, segs := crashedLog(t, segment.Config{}, 1)
	// The batch at offset 0 again: segment 0 exists already.
	first, err := os.ReadFile(filepath.Join(dir, name(segs[0], ".log")))
	if err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(dir, "logstore.next-segment")
	if err := os.WriteFile(spare, first, 0o644); err != nil {
		t.Fatal(err)
	}
	problems := verifyProblems(t, dir)
	if len(problems) != 1 || problems[0].Kind != segment.ProblemCorrupt || problems[0].File != spare || !strings.Contains(problems[0].Detail, "refuses") {
		t.Fatalf("verify found\n%swant one corruption in %s that the open refuses", problemsText(problems), spare)
	}
	var ce *segment.CorruptionError
	if _, _, err := segment.Open(dir, segment.Config{}); !errors.As(err, &ce) || ce.File != spare {
		t.Fatalf("open: %v, want corruption in %s", err, spare)
	}
}

// TestVerifyPredictsLostTailRefusal: the segment before the last ends
// below the next one's base, and below the recovery point: whole batches
// were lost that a flush had made durable. The open refuses the
// partition; verify says so.
func TestVerifyPredictsLostTailRefusal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	cfg := segment.Config{SegmentBytes: 400}
	l, _ := open(t, dir, cfg)
	var sizes []int
	for i := range 4 {
		b := batch(t, 3, 20, 1700000000000+int64(i))
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(b))
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(segs) < 2 {
		t.Fatalf("segments %v, want at least 2", segs)
	}
	// Keep the last two segments; drop the last batch of the one
	// before the last.
	for _, base := range segs[:len(segs)-2] {
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			if err := os.Remove(filepath.Join(dir, name(base, suf))); err != nil {
				t.Fatal(err)
			}
		}
	}
	prev, last := segs[len(segs)-2], segs[len(segs)-1]
	prevLog := filepath.Join(dir, name(prev, ".log"))
	modify(t, prevLog, func(b []byte) []byte { return b[:len(b)-sizes[0]] })
	// The new end is last-3: a recovery point above it and below the last
	// segment's base, so the segment before the last is scanned.
	writeCheckpoint(t, dir, prev, last-1)
	problems := verifyProblems(t, dir)
	found := false
	for _, p := range problems {
		found = found || p.Kind == segment.ProblemCorrupt && p.File == prevLog && strings.Contains(p.Detail, "refuses")
	}
	if !found {
		t.Fatalf("verify found\n%swant a corruption in %s that the open refuses", problemsText(problems), prevLog)
	}
	var ce *segment.CorruptionError
	if _, _, err := segment.Open(dir, cfg); !errors.As(err, &ce) || ce.File != prevLog || !errors.Is(err, recordbatch.ErrTruncated) {
		t.Fatalf("open: %v, want the lost tail of %s refused", err, prevLog)
	}
}
