package logstore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/segment"
)

// TestPartitionDeleteRecords: in each sync mode the start moves into the
// log and stays there across a reopen; -1 is the high watermark, past it
// is refused; a producer whose batches are below the new start is still
// known, live and after a clean reopen, so its retry is answered as a
// duplicate rather than written again.
func TestPartitionDeleteRecords(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncInterval(time.Hour), logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := logstore.Options{Sync: mode, SegmentBytes: 400}
			s := openStore(t, dir, opts)
			p := openPartition(t, s, "t", 0)
			const ts = 1_700_000_000_000
			for i := range int32(10) {
				if _, err := p.Append(producerBatch(5, 0, 2*i, 2, ts)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.DeleteRecords(21); !errors.Is(err, segment.ErrOffsetOutOfRange) {
				t.Fatalf("DeleteRecords past the high watermark %d: %v", p.DurableEnd(), err)
			}
			if low, err := p.DeleteRecords(7); err != nil || low != 7 {
				t.Fatalf("DeleteRecords(7) = %d, %v", low, err)
			}
			if low, err := p.DeleteRecords(3); err != nil || low != 7 {
				t.Fatalf("DeleteRecords(3) after 7 = %d, %v", low, err)
			}
			if _, err := p.Read(6, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
				t.Fatalf("read below the start: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, opts)
			defer s.Close()
			p = openPartition(t, s, "t", 0)
			if p.StartOffset() != 7 || p.EndOffset() != 20 {
				t.Fatalf("after reopen: [%d, %d), want [7, 20)", p.StartOffset(), p.EndOffset())
			}
			if low, err := p.DeleteRecords(-1); err != nil || low != 20 {
				t.Fatalf("DeleteRecords(-1) = %d, %v; want the high watermark 20", low, err)
			}
			res, err := p.Append(producerBatch(5, 0, 18, 2, ts))
			if err != nil || !res.Duplicate || res.BaseOffset != 18 {
				t.Fatalf("retry of the last batch, below the start: %+v, %v; want a duplicate at 18", res, err)
			}
			if res, err := p.Append(producerBatch(5, 0, 20, 2, ts)); err != nil || res.BaseOffset != 20 {
				t.Fatalf("next batch: %+v, %v", res, err)
			}
		})
	}
}

// TestPartitionDeleteRecordsUncleanRestart: a producer whose batches a
// DeleteRecords removed from the middle of a segment, above the newest
// snapshot, is still known after an unclean restart (the store's files
// copied while it was open, as a killed process leaves them): the open
// replays the producer state from the first segment, not from the log
// start, so the producer's retry is answered DUPLICATE, not written
// again.
func TestPartitionDeleteRecordsUncleanRestart(t *testing.T) {
	dir, crashed := t.TempDir(), t.TempDir()
	opts := logstore.Options{SegmentBytes: 600}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "t", 0)
	const ts = 1_700_000_000_000
	// Enough to roll a few segments, so the newest snapshot is at the
	// active segment's base; then producer 1's last batch, then
	// producer 2's, inside the active segment.
	for i := range int32(8) {
		if _, err := p.Append(producerBatch(1, 0, i, 1, ts)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	last, err := p.Append(producerBatch(1, 0, 8, 1, ts))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(producerBatch(2, 0, 0, 1, ts)); err != nil {
		t.Fatal(err)
	}
	if segs := len(p.ProducerSnapshot().Producers); segs != 2 {
		t.Fatalf("%d producers, want 2", segs)
	}
	if low, err := p.DeleteRecords(last.LastOffset + 1); err != nil || low != last.LastOffset+1 {
		t.Fatalf("DeleteRecords(%d) = %d, %v", last.LastOffset+1, low, err)
	}
	testutil.CopyDir(t, dir, crashed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The killed process's files: no clean checkpoint, no close snapshot.
	if err := os.Remove(filepath.Join(crashed, ".lock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	s = openStore(t, crashed, opts)
	defer s.Close()
	p = openPartition(t, s, "t", 0)
	if p.Recovery().Clean || p.StartOffset() != last.LastOffset+1 {
		t.Fatalf("reopened: clean %v, start %d; want an unclean open at %d", p.Recovery().Clean, p.StartOffset(), last.LastOffset+1)
	}
	res, err := p.Append(producerBatch(1, 0, 8, 1, ts))
	if err != nil || !res.Duplicate || res.BaseOffset != last.BaseOffset {
		t.Fatalf("producer 1's retry after the unclean restart: %+v, %v; want a duplicate at %d", res, err, last.BaseOffset)
	}
}
