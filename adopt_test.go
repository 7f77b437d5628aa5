package logstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkaexport"
	"github.com/logstore/logstore/segment"
)

// checkStore runs Check on dir and returns its stats and findings.
func checkStore(t *testing.T, dir string) (logstore.CheckStats, []logstore.Problem) {
	t.Helper()
	var found []logstore.Problem
	stats, err := logstore.Check(dir, func(p logstore.Problem) { found = append(found, p) })
	if err != nil {
		t.Fatal(err)
	}
	return stats, found
}

// findingsText formats findings one a line.
func findingsText(ps []logstore.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// adoptedNote says whether findings hold check's note that partition
// directory dir (relative to the store) starts at the adopted log start
// offset start.
func adoptedNote(ps []logstore.Problem, dir string, start int64) bool {
	for _, p := range ps {
		if p.Kind == logstore.ProblemNote && p.File == dir && strings.Contains(p.Detail, fmt.Sprintf("adopted log start offset %d ", start)) {
			return true
		}
	}
	return false
}

// kafkaStore copies a partition a Kafka broker wrote (promotions-0, 29
// records in one segment) into a new store directory, with a root
// log-start-offset-checkpoint holding ckpt, and returns the directory.
func kafkaStore(t *testing.T, ckpt string) string {
	t.Helper()
	src := filepath.Dir(testutil.SharedFile(t, "kafka-real/rjmfernandes-flink-on-prem/promotions-0/00000000000000000000.log"))
	dir := t.TempDir()
	testutil.CopyDir(t, src, filepath.Join(dir, "promotions-0"))
	if err := os.WriteFile(filepath.Join(dir, "log-start-offset-checkpoint"), []byte(ckpt), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdoptKafkaLogStart: a store opened on a Kafka log dir starts a
// partition at its log-start-offset-checkpoint entry, inside its first
// segment: reads below it are out of range, and check, run before, sees
// no problem and predicts the same start. The partition's own checkpoint
// keeps the start from then on, without the Kafka file, which the store
// leaves as it was.
func TestAdoptKafkaLogStart(t *testing.T) {
	const ckpt = "0\n2\nother 0 9\npromotions 0 5\n"
	dir := kafkaStore(t, ckpt)
	stats, found := checkStore(t, dir)
	if stats.Problems != 0 || !adoptedNote(found, "promotions-0", 5) {
		t.Fatalf("check before the open: %d problems, findings\n%swant none, and the note of the adopted start 5", stats.Problems, findingsText(found))
	}

	s := openStore(t, dir, logstore.Options{})
	p, err := s.ExistingPartition("promotions", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 5 || p.EndOffset() != 29 || !p.Recovery().AdoptedLogStart {
		t.Fatalf("adopted partition: [%d, %d), adopted %v; want [5, 29), true", p.StartOffset(), p.EndOffset(), p.Recovery().AdoptedLogStart)
	}
	if _, err := p.Read(4, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the adopted start: %v", err)
	}
	if data, err := p.Read(5, 1<<20); err != nil || len(data) == 0 {
		t.Fatalf("read at the adopted start: %d bytes, %v", len(data), err)
	}
	// A partition the file does not name starts at its first segment.
	q := openPartition(t, s, "fresh", 0)
	if q.StartOffset() != 0 || q.Recovery().AdoptedLogStart {
		t.Fatalf("new partition: start %d, adopted %v", q.StartOffset(), q.Recovery().AdoptedLogStart)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "log-start-offset-checkpoint")); err != nil || string(data) != ckpt {
		t.Fatalf("the Kafka file after the store: %q, %v; want it untouched", data, err)
	}

	// The store's own checkpoint holds the start now.
	if err := os.Remove(filepath.Join(dir, "log-start-offset-checkpoint")); err != nil {
		t.Fatal(err)
	}
	stats, found = checkStore(t, dir)
	if stats.Problems != 0 || adoptedNote(found, "promotions-0", 5) {
		t.Fatalf("check after the open: %d problems, findings\n%swant none and no adopted start", stats.Problems, findingsText(found))
	}
	s = openStore(t, dir, logstore.Options{})
	defer s.Close()
	p = openPartition(t, s, "promotions", 0)
	if p.StartOffset() != 5 || p.Recovery().AdoptedLogStart {
		t.Fatalf("reopen without the Kafka file: start %d, adopted %v; want 5, false", p.StartOffset(), p.Recovery().AdoptedLogStart)
	}
}

// TestAdoptKafkaLogStartMalformed: a log-start-offset-checkpoint that
// does not decode refuses the open, naming the file and the line, and is
// a problem for check; falling back to the first segment's base, as a
// broker does, would bring back what a DeleteRecords removed.
func TestAdoptKafkaLogStartMalformed(t *testing.T) {
	dir := kafkaStore(t, "0\n1\npromotions zero 5\n")
	_, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if !errors.Is(err, logstore.ErrBadKafkaCheckpoint) || !strings.Contains(err.Error(), filepath.Join(dir, "log-start-offset-checkpoint")) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("open: %v; want ErrBadKafkaCheckpoint naming the file and line 3", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "promotions-0", "logstore.checkpoint")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused open wrote the partition's checkpoint: %v", err)
	}
	stats, found := checkStore(t, dir)
	if stats.Problems != 1 || found[0].Kind != logstore.ProblemCorrupt || found[0].File != "log-start-offset-checkpoint" || !strings.Contains(found[0].Detail, "line 3") {
		t.Fatalf("check: %d problems, findings\n%swant one, the Kafka file's line 3", stats.Problems, findingsText(found))
	}
	// Removed, the partition starts at its first segment.
	if err := os.Remove(filepath.Join(dir, "log-start-offset-checkpoint")); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, logstore.Options{})
	defer s.Close()
	if p := openPartition(t, s, "promotions", 0); p.StartOffset() != 0 {
		t.Fatalf("without the file: start %d, want 0", p.StartOffset())
	}
}

// TestExportDeleteRecordsRoundTrip: a DeleteRecords inside a segment
// survives an export and the open of the export as a store, which has
// no logstore.checkpoint: the start comes from the export's
// log-start-offset-checkpoint.
func TestExportDeleteRecordsRoundTrip(t *testing.T) {
	storeDir, out := t.TempDir(), filepath.Join(t.TempDir(), "kafka")
	opts := logstore.Options{SegmentBytes: 400}
	s := openStore(t, storeDir, opts)
	p := openPartition(t, s, "events", 0)
	const ts = 1_700_000_000_000
	for i := range int32(10) {
		if _, err := p.Append(producerBatch(-1, -1, -1, 2, ts+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	segs := segmentBases(t, filepath.Join(storeDir, "events-0"))
	if len(segs) < 3 {
		t.Fatalf("segments %v, want at least 3", segs)
	}
	// Inside the second segment, past its first batch.
	start := segs[1] + 3
	if low, err := p.DeleteRecords(start); err != nil || low != start {
		t.Fatalf("DeleteRecords(%d) = %d, %v", start, low, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "events-0", "logstore.checkpoint")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the export holds a logstore.checkpoint: %v", err)
	}
	stats, found := checkStore(t, out)
	if stats.Problems != 0 || !adoptedNote(found, "events-0", start) {
		t.Fatalf("check of the export: %d problems, findings\n%swant none, and the adopted start %d", stats.Problems, findingsText(found), start)
	}
	e := openStore(t, out, logstore.Options{})
	defer e.Close()
	q, err := e.ExistingPartition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if q.StartOffset() != start || q.EndOffset() != 20 {
		t.Fatalf("the export opened as a store: [%d, %d), want [%d, 20)", q.StartOffset(), q.EndOffset(), start)
	}
	if _, err := q.Read(start-1, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
}
