package logstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/logstore/logstore"
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
