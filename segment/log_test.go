package segment_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// TestRollBySize: with small segments every append that would pass
// segment.bytes starts a new segment named by its first offset, and every
// offset reads back from every position, with and without index entries.
func TestRollBySize(t *testing.T) {
	dir := t.TempDir()
	for _, interval := range []int{1, 200, 1 << 20} { // an entry per batch, some, none
		t.Run("", func(t *testing.T) {
			dir := filepath.Join(dir, "p-"+strconv.Itoa(interval))
			cfg := segment.Config{SegmentBytes: 1000, IndexIntervalBytes: interval}
			l, _ := open(t, dir, cfg)
			var infos []segment.AppendInfo
			for i := range 40 {
				info, err := l.Append(batch(t, 1+i%3, 50, 1700000000000+int64(i)))
				if err != nil {
					t.Fatal(err)
				}
				infos = append(infos, info)
			}
			if err := l.Flushed(); err != nil { // the flushes name the files
				t.Fatal(err)
			}
			segs := l.Segments()
			if len(segs) < 5 {
				t.Fatalf("%d segments", len(segs))
			}
			for _, info := range infos {
				if info.Rolled && info.Position != 0 {
					t.Fatalf("rolled append at position %d", info.Position)
				}
			}
			for i, base := range segs {
				if _, err := os.Stat(filepath.Join(dir, name(base, ".log"))); err != nil {
					t.Fatalf("segment %d: %v", i, err)
				}
			}
			checkReads(t, l, infos)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, rep := open(t, dir, cfg)
			defer l.Close()
			if !rep.Clean {
				t.Fatalf("reopen after Close not clean: %+v", rep)
			}
			checkReads(t, l, infos)
		})
	}
}

// checkReads reads from every offset the appends assigned and expects the
// batch that holds it first.
func checkReads(t *testing.T, l *segment.Log, infos []segment.AppendInfo) {
	t.Helper()
	for _, info := range infos {
		for off := info.BaseOffset; off <= info.LastOffset; off++ {
			data, err := l.Read(off, 1)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			b, err := recordbatch.Parse(data, 0)
			if err != nil || b.BaseOffset() != info.BaseOffset || len(data) != b.Size() {
				t.Fatalf("read %d: batch at %d (%v), want %d", off, b.BaseOffset(), err, info.BaseOffset)
			}
		}
	}
	if data, err := l.Read(l.EndOffset(), 100); err != nil || len(data) != 0 {
		t.Fatalf("read at the end: %d bytes, %v", len(data), err)
	}
	if _, err := l.Read(l.EndOffset()+1, 100); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
	// A large maxBytes returns many whole batches.
	data, err := l.Read(infos[0].BaseOffset, 1<<20)
	if err != nil || len(data) == 0 {
		t.Fatal(err)
	}
}

func TestRollByTime(t *testing.T) {
	clock := &fixedClock{now: time.Unix(1700000000, 0)}
	l, _ := open(t, t.TempDir(), segment.Config{SegmentMaxAge: time.Hour, Now: clock.Now})
	defer l.Close()
	ts := int64(1700000000000)
	mustAppend := func(b recordbatch.Batch) segment.AppendInfo {
		info, err := l.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	mustAppend(batch(t, 1, 10, ts))
	if mustAppend(batch(t, 1, 10, ts+time.Hour.Milliseconds())).Rolled {
		t.Fatal("rolled at exactly segment.ms")
	}
	if !mustAppend(batch(t, 1, 10, ts+time.Hour.Milliseconds()+1)).Rolled {
		t.Fatal("no roll past segment.ms by record timestamps")
	}
	// Without timestamps (-1), the clock since the segment was made decides.
	noTS := func() recordbatch.Batch { return batch(t, 1, 10, -1) }
	mustAppend(batch(t, 1, 10, ts)) // keeps the active segment's first timestamp
	l2, _ := open(t, t.TempDir(), segment.Config{SegmentMaxAge: time.Hour, Now: clock.Now})
	defer l2.Close()
	if info, err := l2.Append(noTS()); err != nil || info.Rolled {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(time.Hour + time.Second)
	if info, err := l2.Append(noTS()); err != nil || !info.Rolled {
		t.Fatalf("no roll by the clock: %+v %v", info, err)
	}
}

func TestRollByIndexFull(t *testing.T) {
	// Room for 3 offset entries and 2 time entries (one kept for the close).
	l, _ := open(t, t.TempDir(), segment.Config{IndexMaxBytes: 24, IndexIntervalBytes: 1})
	defer l.Close()
	rolls := 0
	for i := range 20 {
		info, err := l.Append(batch(t, 1, 10, 1700000000000+int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if info.Rolled {
			rolls++
		}
	}
	if rolls < 5 {
		t.Fatalf("%d rolls", rolls)
	}
}

// TestRollByOffsetOverflow: a batch whose last offset would sit more than
// 2^31-1 past the segment's base starts a new segment, and offsets that
// would pass int64 are refused.
func TestRollByOffsetOverflow(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{})
	defer l.Close()
	wide := func(delta int32) recordbatch.Batch {
		// One record, but a lastOffsetDelta as compaction leaves it.
		h := recordbatch.Header{LastOffsetDelta: delta, NumRecords: 0, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: -1, MaxTimestamp: -1}
		b, err := recordbatch.Parse(recordbatch.AppendBatch(nil, h, nil), 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if info, err := l.Append(wide(math.MaxInt32 - 10)); err != nil || info.Rolled {
		t.Fatalf("%+v %v", info, err)
	}
	info, err := l.Append(wide(20))
	if err != nil || !info.Rolled || info.Segment != math.MaxInt32-9 {
		t.Fatalf("%+v %v", info, err)
	}
	// A segment named near the end of the int64 offsets (as a directory
	// could hold) accepts no batch whose offsets would pass it.
	dir := t.TempDir()
	base := int64(math.MaxInt64 - 100)
	if err := os.WriteFile(filepath.Join(dir, pad(base)+".log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l2, _ := open(t, dir, segment.Config{})
	defer l2.Close()
	if l2.EndOffset() != base {
		t.Fatalf("end %d", l2.EndOffset())
	}
	if _, err := l2.Append(wide(200)); !errors.Is(err, segment.ErrOffsetOverflow) {
		t.Fatalf("got %v, want ErrOffsetOverflow", err)
	}
	if _, err := l2.Append(wide(50)); err != nil {
		t.Fatal(err)
	}
}

// name is a segment file's name: the base offset in 20 digits and suffix.
func name(base int64, suffix string) string { return pad(base) + suffix }

func pad(base int64) string { return fmt.Sprintf("%020d", base) }

// TestConcurrentReadersAndAppenders: readers see only whole batches while
// appends and rolls go on (run with -race).
func TestConcurrentReadersAndAppenders(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 4096, IndexIntervalBytes: 256})
	defer l.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				end := l.EndOffset()
				if end == 0 {
					continue
				}
				data, err := l.Read(end/2, 2048)
				if err != nil {
					t.Error(err)
					return
				}
				for len(data) > 0 {
					b, err := recordbatch.Parse(data, 0)
					if err == nil {
						err = b.Validate()
					}
					if err != nil {
						t.Error(err)
						return
					}
					data = data[b.Size():]
				}
			}
		}()
	}
	var appendWG sync.WaitGroup
	for g := range 2 {
		appendWG.Add(1)
		go func() {
			defer appendWG.Done()
			for i := range 200 {
				if _, err := l.Append(batch(t, 2, 40, 1700000000000+int64(g*1000+i))); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if _, err := l.Sync(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	appendWG.Wait()
	close(done)
	wg.Wait()
	if got := len(readAll(t, l)); got != 400 {
		t.Fatalf("%d batches", got)
	}
}

// TestRetention: retention.bytes and retention.ms remove exactly the
// oldest segments they let go, never the active one, and the log start
// offset survives a reopen.
func TestRetention(t *testing.T) {
	clock := &fixedClock{now: time.UnixMilli(1700000000000 + 10_000)}
	dir := t.TempDir()
	cfg := segment.Config{SegmentBytes: 500, Now: clock.Now}
	l, _ := open(t, dir, cfg)
	for i := range 30 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i)*100)); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// By size: keep the newest segments that fit 1000 bytes.
	cfg.RetentionBytes = 1000
	l, _ = open(t, dir, cfg)
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) == 0 || deleted[0] != segs[0] || l.StartOffset() != l.Segments()[0] {
		t.Fatalf("deleted %v, start %d, segments %v", deleted, l.StartOffset(), l.Segments())
	}
	for _, base := range deleted {
		if _, err := os.Stat(filepath.Join(dir, name(base, ".log"))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("segment %d still there: %v", base, err)
		}
	}
	if _, err := l.Read(0, 100); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	start := l.StartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// By time: everything older than 1 s by record timestamps, but never
	// the active segment.
	cfg.RetentionBytes, cfg.RetentionTime = 0, time.Second
	clock.now = clock.now.Add(time.Hour)
	l, _ = open(t, dir, cfg)
	defer l.Close()
	if l.StartOffset() != start {
		t.Fatalf("start %d after reopen, want %d", l.StartOffset(), start)
	}
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if got := l.Segments(); len(got) != 1 || l.StartOffset() != got[0] || l.EndOffset() != 30 {
		t.Fatalf("segments %v start %d end %d", got, l.StartOffset(), l.EndOffset())
	}
}

func TestBatchTooLarge(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 1000, MaxBatchBytes: 800})
	defer l.Close()
	for _, size := range []int{900, 1100} {
		b := batch(t, 1, size, 0)
		_, err := l.Append(b)
		if !errors.Is(err, segment.ErrBatchTooLarge) {
			t.Fatalf("%d bytes: %v", size, err)
		}
		// The numbers are data; the text is the reason with the prefix.
		var tl *segment.BatchTooLargeError
		reason := fmt.Sprintf("batch too large: %d bytes, limits 800 per batch and 1000 per segment", len(b))
		if !errors.As(err, &tl) || tl.Size != len(b) || tl.MaxBatchBytes != 800 || tl.SegmentBytes != 1000 ||
			tl.Reason() != reason || err.Error() != "logstore/segment: "+reason {
			t.Fatalf("%d bytes: %v (%+v), want a *BatchTooLargeError with reason %q", size, err, tl, reason)
		}
	}
	if l.EndOffset() != 0 {
		t.Fatal("refused batch was written")
	}
}

func TestOffsetForTime(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 600, IndexIntervalBytes: 100})
	defer l.Close()
	for i := range 20 {
		if _, err := l.Append(batch(t, 3, 50, 1000+int64(i)*10)); err != nil {
			t.Fatal(err)
		}
	}
	// Batch i holds offsets 3i..3i+2 with timestamps 1000+10i .. +2.
	for _, c := range []struct{ ts, want int64 }{{0, 0}, {1000, 0}, {1001, 1}, {1003, 3}, {1095, 30}, {1192, 59}, {1193, -1}} {
		got, err := l.OffsetForTime(c.ts)
		if err != nil || got != c.want {
			t.Errorf("OffsetForTime(%d) = %d, %v; want %d", c.ts, got, err, c.want)
		}
	}
}

// TestRetentionOnRoll: with retention set, each roll's flush applies it.
func TestRetentionOnRoll(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 500, RetentionBytes: 1000})
	defer l.Close()
	for i := range 40 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	if segs := l.Segments(); len(segs) > 4 || l.StartOffset() != segs[0] || l.StartOffset() == 0 {
		t.Fatalf("segments %v, start %d", segs, l.StartOffset())
	}
}

// TestIndexesPassKafkaVerification checks the index files logstore
// writes with the rules kafka-dump-log.sh verifies them by: every offset
// index entry points at a batch whose last offset is the indexed offset;
// every time index entry names the last offset of a batch whose largest
// record timestamp is the indexed timestamp, in increasing order.
func TestIndexesPassKafkaVerification(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, segment.Config{SegmentBytes: 3000, IndexIntervalBytes: 150})
	for i := range 60 {
		ts := 1700000000000 + int64(i*7%23)*1000 // timestamps that go up and down
		if _, err := l.Append(batch(t, 1+i%4, 30, ts)); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, base := range segs {
		logData, err := os.ReadFile(filepath.Join(dir, name(base, ".log")))
		if err != nil {
			t.Fatal(err)
		}
		byLast := map[int64]recordbatch.Batch{}
		byPos := map[int64]recordbatch.Batch{}
		for pos := 0; pos < len(logData); {
			b, err := recordbatch.Parse(logData[pos:], 0)
			if err != nil {
				t.Fatal(err)
			}
			byLast[b.LastOffset()], byPos[int64(pos)] = b, b
			pos += b.Size()
		}
		idx, _ := os.ReadFile(filepath.Join(dir, name(base, ".index")))
		for i := 0; i+8 <= len(idx); i += 8 {
			off := base + int64(int32(binary.BigEndian.Uint32(idx[i:])))
			pos := int64(int32(binary.BigEndian.Uint32(idx[i+4:])))
			if b, ok := byPos[pos]; !ok || b.LastOffset() != off {
				t.Errorf("segment %d: index entry (%d, %d) does not name a batch's last offset and start", base, off, pos)
			}
			entries++
		}
		tidx, _ := os.ReadFile(filepath.Join(dir, name(base, ".timeindex")))
		prev := int64(-1)
		for i := 0; i+12 <= len(tidx); i += 12 {
			ts := int64(binary.BigEndian.Uint64(tidx[i:]))
			off := base + int64(int32(binary.BigEndian.Uint32(tidx[i+8:])))
			b, ok := byLast[off]
			if !ok {
				t.Errorf("segment %d: time index offset %d is no batch's last offset", base, off)
				continue
			}
			recs, err := b.DecodeRecords(0)
			if err != nil {
				t.Fatal(err)
			}
			maxTS := int64(-1)
			for _, r := range recs {
				maxTS = max(maxTS, r.Timestamp)
			}
			if maxTS != ts || ts <= prev {
				t.Errorf("segment %d: time index entry (%d, %d): batch max %d, previous %d", base, ts, off, maxTS, prev)
			}
			prev = ts
		}
	}
	if entries < 10 {
		t.Fatalf("only %d index entries checked", entries)
	}
}

func TestBatches(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 700, IndexIntervalBytes: 100})
	defer l.Close()
	for i := range 30 {
		if _, err := l.Append(batch(t, 2, 50, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range []int64{0, 1, 17, 58, 59, 60} {
		next := from - from%2
		err := l.Batches(from, func(b recordbatch.Batch) error {
			if b.BaseOffset() != next || b.Validate() != nil {
				t.Fatalf("from %d: batch %d, want %d", from, b.BaseOffset(), next)
			}
			next = b.LastOffset() + 1
			return nil
		})
		if err != nil || next != max(60, from) {
			t.Fatalf("from %d: ended at %d, %v", from, next, err)
		}
	}
}
