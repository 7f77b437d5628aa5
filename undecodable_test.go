package logstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Issue 11: a batch whose header and CRC are valid but whose records no
// reader can decode is refused at Append as INVALID, naming the record
// and its byte position, and nothing is written; reads and check stay
// clean.
func TestUndecodableBatchRefused(t *testing.T) {
	const bound = 1 << 20
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{MaxRecordsBytes: bound})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("first")); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "events-0")
	end, size := p.EndOffset(), logBytes(t, pdir)
	for _, c := range testutil.PoisonBatches(4 * bound) {
		_, err := p.Append(slices.Clone(c.Batch))
		if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.Is(err, c.Sentinel) || !errors.Is(err, recordbatch.ErrCorrupt) {
			t.Errorf("%s: Append = %v; want ErrInvalidBatch wrapping %v", c.Name, err, c.Sentinel)
			continue
		}
		for _, w := range c.Want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.Name, err, w)
			}
		}
		if p.EndOffset() != end || logBytes(t, pdir) != size {
			t.Fatalf("%s: written: end offset %d, log %d bytes; want %d, %d", c.Name, p.EndOffset(), logBytes(t, pdir), end, size)
		}
	}
	res, err := p.Append(batchOf("after"))
	if err != nil || res.BaseOffset != end {
		t.Fatalf("a good batch after the refusals: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	chkNoProblems(t, got, stats)
}

// The default bound is the readers' own, recordbatch.DefaultMaxRecordsBytes:
// a gzip bomb past it (65 MiB of zeros in a 65 KB batch) is refused once
// that much is out.
func TestUndecodableBombDefaultBound(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 64 MiB")
	}
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	bomb := testutil.PoisonBatches(recordbatch.DefaultMaxRecordsBytes + 1<<20)[10]
	if bomb.Name != "gzip bomb" || len(bomb.Batch) > segment.DefaultMaxBatchBytes {
		t.Fatalf("%s: %d bytes", bomb.Name, len(bomb.Batch))
	}
	_, err := p.Append(bomb.Batch)
	if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.Is(err, recordbatch.ErrTooLarge) || !strings.Contains(err.Error(), "exceed 67108864 bytes") {
		t.Fatalf("Append = %v", err)
	}
	if p.EndOffset() != 0 {
		t.Fatalf("end offset %d", p.EndOffset())
	}
}

func TestMaxRecordsBytesOption(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{-1, recordbatch.DefaultMaxRecordsBytes + 1} {
		if s, err := logstore.Open(dir, logstore.Options{MaxRecordsBytes: n}); err == nil {
			s.Close()
			t.Errorf("MaxRecordsBytes %d: Open succeeded", n)
		} else if !strings.Contains(err.Error(), "MaxRecordsBytes") {
			t.Errorf("MaxRecordsBytes %d: %v", n, err)
		}
	}
	// A batch that inflates to more than a lowered bound is refused; one
	// within it passes.
	s := openStore(t, dir, logstore.Options{MaxRecordsBytes: 4 << 10})
	p := openPartition(t, s, "events", 0)
	big := recordbatch.NewBuilder(0)
	big.Compression = recordbatch.CodecZstd
	if err := big.Append(1700000000000, nil, make([]byte, 8<<10), nil); err != nil {
		t.Fatal(err)
	}
	raw, err := big.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(raw); !errors.Is(err, recordbatch.ErrTooLarge) {
		t.Fatalf("8 KiB of records under a 4 KiB bound: %v", err)
	}
	if _, err := p.Append(batchOf("small")); err != nil {
		t.Fatal(err)
	}
}

// Issue 11: check decodes every record. Batches written around Append's
// checks (straight into the segment log) are each CORRUPT at their byte
// position, naming the record; the batches before them are fine.
func TestCheckFindsUndecodableBatches(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("first", "second")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "events-0")
	log, _, err := segment.Open(pdir, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		name string
		file string
		pos  int64
		want string
	}
	var poisons []stored
	for _, c := range testutil.PoisonBatches(1 << 10) {
		if c.Sentinel == recordbatch.ErrTooLarge {
			continue // check's bound is the readers' 64 MiB: below
		}
		info, err := log.Append(slices.Clone(c.Batch))
		if err != nil {
			t.Fatal(err)
		}
		want := c.Want[0]
		if c.OffsetDeltas {
			want = "offset delta 0, want above"
		}
		// The batch claiming 2^31-1 records rolls: its offsets do not
		// fit the first segment.
		file := fmt.Sprintf("events-0/%020d.log", info.Segment)
		poisons = append(poisons, stored{c.Name, file, info.Position, want})
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	t.Logf("findings:\n%s", chkText(got))
	var corrupt []logstore.Problem
	for _, pr := range got {
		if pr.Kind != logstore.ProblemNote {
			corrupt = append(corrupt, pr)
		}
	}
	if len(corrupt) != len(poisons) || stats.Problems != len(poisons) {
		t.Fatalf("want %d CORRUPT findings, got:\n%s", len(poisons), chkText(got))
	}
	for i, c := range poisons {
		pr := corrupt[i]
		if pr.Kind != logstore.ProblemCorrupt || pr.File != c.file || pr.Pos != c.pos ||
			!strings.Contains(pr.Detail, "cannot be decoded") || !strings.Contains(pr.Detail, c.want) {
			t.Errorf("%s: %s; want CORRUPT %s at byte %d saying %q", c.name, pr, c.file, c.pos, c.want)
		}
	}
}
