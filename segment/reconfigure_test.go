package segment_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/segment"
)

// TestReconfigureSegmentBytes: a smaller segment.bytes set on an open log
// rolls at the next append that does not fit, and a smaller
// MaxBatchBytes refuses the next batch past it.
func TestReconfigureSegmentBytes(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{})
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments before, want 1", n)
	}
	if err := l.Reconfigure(segment.Config{SegmentBytes: 500}); err != nil {
		t.Fatal(err)
	}
	info, err := l.Append(batch(t, 1, 100, 1700000000100))
	if err != nil {
		t.Fatal(err)
	}
	if !info.Rolled || info.Position != 0 {
		t.Fatalf("the first append after reconfiguring: %+v, want a roll", info)
	}
	for i := range 10 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000200+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.Segments()); n < 4 {
		t.Fatalf("%d segments after ten more appends at 500 bytes a segment", n)
	}
	if err := l.Reconfigure(segment.Config{SegmentBytes: 500, MaxBatchBytes: 100}); err != nil {
		t.Fatal(err)
	}
	end := l.EndOffset()
	if _, err := l.Append(batch(t, 1, 100, 1700000000300)); !errors.Is(err, segment.ErrBatchTooLarge) {
		t.Fatalf("a batch past the new MaxBatchBytes: %v", err)
	}
	if l.EndOffset() != end {
		t.Fatalf("end %d after a refused batch, want %d", l.EndOffset(), end)
	}
}

// TestReconfigureRefused: out-of-range values are refused and change
// nothing.
func TestReconfigureRefused(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 1000})
	defer l.Close()
	for _, c := range []segment.Config{{SegmentBytes: 10}, {SegmentBytes: 1 << 31}, {MaxBatchBytes: 1}, {SegmentMaxAge: -time.Second}} {
		if err := l.Reconfigure(c); err == nil {
			t.Fatalf("Reconfigure(%+v) accepted", c)
		}
	}
	// Still 1000 bytes a segment: a batch of about 1100 is refused.
	if _, err := l.Append(batch(t, 1, 1100, 1700000000000)); !errors.Is(err, segment.ErrBatchTooLarge) {
		t.Fatalf("a batch past the kept SegmentBytes: %v", err)
	}
}

// TestReconfigureRetention: retention set on an open log that had none
// deletes at the next ApplyRetention, and taking it away again keeps
// everything.
func TestReconfigureRetention(t *testing.T) {
	clock := &fixedClock{now: time.UnixMilli(1700000000000 + 10_000)}
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 500, Now: clock.Now})
	defer l.Close()
	for i := range 30 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i)*100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	before := l.Segments()
	if deleted, err := l.ApplyRetention(); err != nil || len(deleted) != 0 {
		t.Fatalf("no retention: deleted %v, %v", deleted, err)
	}
	if err := l.Reconfigure(segment.Config{SegmentBytes: 500, RetentionBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) == 0 || deleted[0] != before[0] || l.StartOffset() != l.Segments()[0] {
		t.Fatalf("deleted %v, start %d, segments %v", deleted, l.StartOffset(), l.Segments())
	}
	kept := l.Segments()
	if err := l.Reconfigure(segment.Config{SegmentBytes: 500, RetentionTime: -1}); err != nil {
		t.Fatal(err)
	}
	clock.now = clock.now.Add(time.Hour)
	if deleted, err := l.ApplyRetention(); err != nil || len(deleted) != 0 || len(l.Segments()) != len(kept) {
		t.Fatalf("retention removed: deleted %v, %v, segments %v, want %v", deleted, err, l.Segments(), kept)
	}
}

// TestReconfigureConcurrent: Reconfigure beside appends and retention
// (for the race detector): every append is either accepted whole or
// refused, and the log reads back what it accepted.
func TestReconfigureConcurrent(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{SegmentBytes: 2000})
	defer l.Close()
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		sizes := []int64{600, 2000, 1 << 20}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := l.Reconfigure(segment.Config{SegmentBytes: sizes[i%len(sizes)], RetentionBytes: int64(i % 2 * 5000)}); err != nil {
				t.Error(err)
				return
			}
			if _, err := l.ApplyRetention(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	accepted := 0
	for i := range 300 {
		if _, err := l.Append(batch(t, 1, 100, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	close(done)
	wg.Wait()
	if l.EndOffset() != int64(accepted) {
		t.Fatalf("end %d, want %d", l.EndOffset(), accepted)
	}
	if err := l.Flushed(); err != nil {
		t.Fatal(err)
	}
	if got := int64(len(readAll(t, l))); got != l.EndOffset()-l.StartOffset() {
		t.Fatalf("%d batches read, want %d", got, l.EndOffset()-l.StartOffset())
	}
}

// TestReconfigureSegmentMaxAge: a shorter segment.ms set on an open log
// rolls at the next append whose batch is past it, by the batches'
// timestamps.
func TestReconfigureSegmentMaxAge(t *testing.T) {
	l, _ := open(t, t.TempDir(), segment.Config{})
	defer l.Close()
	const ts = 1700000000000
	if _, err := l.Append(batch(t, 1, 10, ts)); err != nil {
		t.Fatal(err)
	}
	hour := int64(time.Hour / time.Millisecond)
	info, err := l.Append(batch(t, 1, 10, ts+2*hour))
	if err != nil || info.Rolled {
		t.Fatalf("two hours later with the default 7 days: %+v, %v", info, err)
	}
	if err := l.Reconfigure(segment.Config{SegmentMaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	info, err = l.Append(batch(t, 1, 10, ts+3*hour))
	if err != nil || !info.Rolled {
		t.Fatalf("three hours after the first batch with segment.ms 1 hour: %+v, %v, want a roll", info, err)
	}
}
