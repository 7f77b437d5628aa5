package logstore_test

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// logBytes is the total size of a partition's .log files.
func logBytes(t testing.TB, pdir string) int64 {
	t.Helper()
	var n int64
	for _, name := range listDir(t, pdir) {
		if strings.HasSuffix(name, ".log") {
			fi, err := os.Stat(filepath.Join(pdir, name))
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

func TestAppendReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if p.StartOffset() != 0 || p.EndOffset() != 0 {
		t.Fatalf("new partition: start %d, end %d; want 0, 0", p.StartOffset(), p.EndOffset())
	}
	want := make(map[int64]string)
	var next int64
	for i := range 10 {
		var values []string
		for j := range i%4 + 1 {
			values = append(values, fmt.Sprintf("batch %d record %d", i, j))
		}
		res, err := p.Append(batchOf(values...))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if res.BaseOffset != next || res.LastOffset != next+int64(len(values))-1 {
			t.Fatalf("Append %d = %+v; want base %d last %d", i, res, next, next+int64(len(values))-1)
		}
		for j, v := range values {
			want[next+int64(j)] = v
		}
		next = res.LastOffset + 1
	}
	if p.EndOffset() != next {
		t.Errorf("EndOffset() = %d, want %d", p.EndOffset(), next)
	}
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Fatalf("read back %v\nwant %v", got, want)
	}

	// A read from the middle of a batch starts with that batch.
	data, err := p.Read(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := recordbatch.Parse(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset() > 5 || b.LastOffset() < 5 {
		t.Errorf("Read(5) starts with batch %d..%d", b.BaseOffset(), b.LastOffset())
	}
	if _, err := p.Read(next+1, 1<<10); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Errorf("Read past the end = %v; want ErrOffsetOutOfRange", err)
	}

	// Reopen: everything is there and appends continue at the end.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, logstore.Options{})
	p = openPartition(t, s, "events", 0)
	if !p.Recovery().Clean {
		t.Errorf("reopen after a clean close: Recovery() = %+v; want Clean", p.Recovery())
	}
	if p.EndOffset() != next {
		t.Fatalf("reopened EndOffset() = %d, want %d", p.EndOffset(), next)
	}
	res, err := p.Append(batchOf("after reopen"))
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != next {
		t.Errorf("append after reopen got base %d, want %d", res.BaseOffset, next)
	}
	want[next] = "after reopen"
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Fatalf("after reopen read back %v\nwant %v", got, want)
	}
}

func mapsEqual(a, b map[int64]string) bool {
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

func TestPartitionCloseAndReopen(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batchOf("c")); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("Append after Close = %v; want ErrClosed", err)
	}
	q := openPartition(t, s, "events", 0)
	if q == p {
		t.Fatal("Partition after Close returned the closed *Partition")
	}
	if res, err := q.Append(batchOf("c")); err != nil || res.BaseOffset != 2 {
		t.Errorf("Append after reopen = %+v, %v; want base 2", res, err)
	}
}

func TestInvalidBatchRefused(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("first")); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "events-0")
	end, size := p.EndOffset(), logBytes(t, pdir)

	good := batchOf("x", "y")
	badCRC := slices.Clone(good)
	badCRC[len(badCRC)-1] ^= 0x40
	control, err := recordbatch.AppendEndTxnBatch(nil, 0, 1_700_000_000_000, -1, 7, 0,
		recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit})
	if err != nil {
		t.Fatal(err)
	}
	noSeq := recordbatch.NewBuilder(0)
	noSeq.ProducerID, noSeq.ProducerEpoch = 7, 0 // BaseSequence stays -1
	if err := noSeq.Append(1_700_000_000_000, nil, []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	noSeqBatch, err := noSeq.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	badMagic := slices.Clone(good)
	badMagic[16] = 1

	cases := []struct {
		name  string
		data  []byte
		cause error // the recordbatch sentinel, or nil for a refusal of the framing
	}{
		{"bad CRC", badCRC, recordbatch.ErrCRC},
		{"control batch", control, recordbatch.ErrControl},
		{"producer id without sequence", noSeqBatch, recordbatch.ErrSequence},
		{"bad magic", badMagic, recordbatch.ErrMagic},
		{"truncated", good[:len(good)-3], recordbatch.ErrTruncated},
		{"empty", nil, recordbatch.ErrTruncated},
		{"two batches", append(slices.Clone(good), good...), nil},
	}
	for _, c := range cases {
		before := slices.Clone(c.data)
		_, err := p.Append(c.data)
		if !errors.Is(err, logstore.ErrInvalidBatch) {
			t.Errorf("%s: Append = %v; want ErrInvalidBatch", c.name, err)
			continue
		}
		if c.cause != nil && !errors.Is(err, c.cause) {
			t.Errorf("%s: Append = %v; want it to wrap %v", c.name, err, c.cause)
		}
		if !strings.Contains(err.Error(), "events-0") || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %q does not name the partition and the store", c.name, err)
		}
		if !slices.Equal(c.data, before) {
			t.Errorf("%s: the refused batch was modified", c.name)
		}
		t.Logf("%s: %v", c.name, err)
	}
	if p.EndOffset() != end {
		t.Errorf("EndOffset moved from %d to %d after refused batches", end, p.EndOffset())
	}
	if got := logBytes(t, pdir); got != size {
		t.Errorf(".log bytes went from %d to %d after refused batches", size, got)
	}
	// The partition still takes good batches, at the next offset.
	if res, err := p.Append(good); err != nil || res.BaseOffset != end {
		t.Errorf("Append after refusals = %+v, %v; want base %d", res, err, end)
	}
}

func TestBatchTooLarge(t *testing.T) {
	big := batchOf(strings.Repeat("x", 300))
	for _, tc := range []struct {
		name  string
		opts  logstore.Options
		cause error
	}{
		{"above MaxMessageBytes", logstore.Options{MaxMessageBytes: 200}, recordbatch.ErrBatchTooLarge},
		{"above SegmentBytes", logstore.Options{SegmentBytes: 200}, segment.ErrBatchTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), tc.opts)
			p := openPartition(t, s, "events", 0)
			_, err := p.Append(slices.Clone(big))
			if !errors.Is(err, logstore.ErrInvalidBatch) || !errors.Is(err, tc.cause) {
				t.Fatalf("Append of %d bytes = %v; want ErrInvalidBatch and %v", len(big), err, tc.cause)
			}
			if p.EndOffset() != 0 {
				t.Errorf("EndOffset() = %d after a refused batch", p.EndOffset())
			}
			if _, err := p.Append(batchOf("small")); err != nil {
				t.Errorf("a small batch after the refusal: %v", err)
			}
		})
	}
}

// TestGroupCommit runs many concurrent appenders with SyncAlways: every
// append gets distinct, contiguous offsets, everything reads back, and
// appenders share fsyncs.
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		syncDelay time.Duration // added to every .log fsync, as a slower disk
		maxRatio  float64       // syncs per append at most; 0: only logged
	}{
		// The disk the test runs on. How much appenders share depends on
		// what an fsync costs there: on tmpfs it costs nothing, nobody
		// waits, and there is about one per append. So only log it.
		{"disk", 0, 0},
		// Every fsync takes at least 2ms: appenders pile up behind it and
		// must share.
		{"slow-disk", 2 * time.Millisecond, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const goroutines, perG = 64, 50
			fsys := newTestFS()
			fsys.syncDelay = tc.syncDelay
			s := openStore(t, t.TempDir(), logstore.Options{
				Sync: logstore.SyncAlways,
				// Small segments, so the run rolls several times.
				SegmentBytes: 64 << 10,
			}.WithFS(fsys))
			p := openPartition(t, s, "events", 0)
			syncsBefore := fsys.logSyncs.Load()

			type ack struct {
				res   logstore.AppendResult
				value string
			}
			acks := make([][]ack, goroutines)
			var wg sync.WaitGroup
			start := time.Now()
			for g := range goroutines {
				wg.Go(func() {
					for i := range perG {
						v := fmt.Sprintf("g%02d-i%02d", g, i)
						res, err := p.Append(batchOf(v))
						if err != nil {
							t.Errorf("goroutine %d append %d: %v", g, i, err)
							return
						}
						acks[g] = append(acks[g], ack{res, v})
					}
				})
			}
			// A reader runs alongside.
			stop := make(chan struct{})
			readerDone := make(chan struct{})
			go func() {
				defer close(readerDone)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if p.EndOffset() > 0 {
						if _, err := p.Read(0, 4<<10); err != nil {
							t.Errorf("concurrent Read: %v", err)
							return
						}
					}
					time.Sleep(time.Millisecond)
				}
			}()
			wg.Wait()
			close(stop)
			<-readerDone
			elapsed := time.Since(start)
			if t.Failed() {
				return
			}

			var all []ack
			for _, a := range acks {
				all = append(all, a...)
			}
			slices.SortFunc(all, func(a, b ack) int { return cmp.Compare(a.res.BaseOffset, b.res.BaseOffset) })
			for i, a := range all {
				if a.res.BaseOffset != int64(i) || a.res.LastOffset != int64(i) {
					t.Fatalf("sorted append %d got offsets %d..%d; want %d (offsets must be distinct and contiguous)", i, a.res.BaseOffset, a.res.LastOffset, i)
				}
			}
			const appends = goroutines * perG
			if p.EndOffset() != appends {
				t.Errorf("EndOffset() = %d, want %d", p.EndOffset(), appends)
			}
			got := readValues(t, p)
			for _, a := range all {
				if got[a.res.BaseOffset] != a.value {
					t.Fatalf("offset %d holds %q, want %q", a.res.BaseOffset, got[a.res.BaseOffset], a.value)
				}
			}

			syncs := fsys.logSyncs.Load() - syncsBefore
			ratio := float64(syncs) / appends
			t.Logf("%d appends by %d goroutines in %s: %d .log fsyncs, %.3f per append (%.1f appends per fsync)",
				appends, goroutines, elapsed.Round(time.Millisecond), syncs, ratio, float64(appends)/float64(max(syncs, 1)))
			if syncs == 0 {
				t.Errorf("no .log fsync under SyncAlways")
			}
			if tc.maxRatio > 0 && ratio > tc.maxRatio {
				t.Errorf("%.3f fsyncs per append; want at most %.2f (group commit)", ratio, tc.maxRatio)
			}
		})
	}
}

// TestSyncFailurePoisons: a failed fsync (or write) under an append fails
// that append, poisons the partition, and nothing after it is
// acknowledged. Reopening recovers every acknowledged batch.
func TestSyncFailurePoisons(t *testing.T) {
	for _, fault := range []string{"sync", "write"} {
		t.Run(fault, func(t *testing.T) {
			dir := t.TempDir()
			fsys := newTestFS()
			s := openStore(t, dir, logstore.Options{}.WithFS(fsys))
			p := openPartition(t, s, "events", 0)
			var acked []string
			for i := range 5 {
				v := fmt.Sprintf("before %d", i)
				if _, err := p.Append(batchOf(v)); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, v)
			}

			if fault == "sync" {
				fsys.failSync.Store(true)
			} else {
				fsys.failWrite.Store(true)
			}
			res, err := p.Append(batchOf("faulted"))
			if err == nil {
				t.Fatalf("Append with a failing %s was acknowledged: %+v", fault, res)
			}
			if !errors.Is(err, errInjected) {
				t.Errorf("Append with a failing %s = %v; want the injected error", fault, err)
			}
			if !strings.Contains(err.Error(), "events-0") || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the partition and the store", err)
			}
			t.Logf("failing append: %v", err)

			for i := range 3 {
				res, err := p.Append(batchOf(fmt.Sprintf("after %d", i)))
				if !errors.Is(err, segment.ErrPoisoned) {
					t.Fatalf("Append %d after the failure = %+v, %v; want ErrPoisoned", i, res, err)
				}
				if i == 0 {
					t.Logf("later append: %v", err)
				}
			}
			// The fault is gone, but the partition stays poisoned.
			if fsys.failSync.Load() || fsys.failWrite.Load() {
				t.Fatal("the injected fault was not hit")
			}
			if err := s.Close(); !errors.Is(err, segment.ErrPoisoned) {
				t.Errorf("Close of the poisoned store = %v; want ErrPoisoned", err)
			}

			// Reopen on the plain OS: every acknowledged batch is there, and
			// the partition works again.
			s = openStore(t, dir, logstore.Options{})
			p = openPartition(t, s, "events", 0)
			got := readValues(t, p)
			for i, v := range acked {
				if got[int64(i)] != v {
					t.Errorf("after reopen offset %d holds %q, want acknowledged %q", i, got[int64(i)], v)
				}
			}
			for off, v := range got {
				if strings.HasPrefix(v, "after") {
					t.Errorf("offset %d holds %q, appended after the partition was poisoned", off, v)
				}
			}
			end := p.EndOffset()
			if res, err := p.Append(batchOf("recovered")); err != nil || res.BaseOffset != end {
				t.Errorf("Append after reopen = %+v, %v; want base %d", res, err, end)
			}
		})
	}
}

// TestSyncFailureUnderGroupCommit fails one fsync while many goroutines
// append, then simulates a power loss that keeps only the bytes each
// .log file had when its last good fsync began. Every append that was
// acknowledged must survive it.
func TestSyncFailureUnderGroupCommit(t *testing.T) {
	dir := t.TempDir()
	fsys := newTestFS()
	fsys.syncDelay = 500 * time.Microsecond
	s := openStore(t, dir, logstore.Options{}.WithFS(fsys))
	p := openPartition(t, s, "events", 0)

	const goroutines, perG = 16, 40
	var (
		mu       sync.Mutex
		acked    = make(map[int64]string)
		poisoned int
	)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				if g == 0 && i == perG/4 {
					fsys.failSync.Store(true)
				}
				v := fmt.Sprintf("g%02d-i%02d", g, i)
				res, err := p.Append(batchOf(v))
				mu.Lock()
				if err == nil {
					acked[res.BaseOffset] = v
				} else if errors.Is(err, segment.ErrPoisoned) || errors.Is(err, errInjected) {
					poisoned++
				} else {
					t.Errorf("append: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if poisoned == 0 {
		t.Fatal("no append failed")
	}
	t.Logf("%d appends acknowledged, %d failed", len(acked), poisoned)
	s.Close()

	// Power loss: drop every byte not covered by a good fsync.
	pdir := filepath.Join(dir, "events-0")
	synced := fsys.syncedSizes()
	for _, name := range listDir(t, pdir) {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		path := filepath.Join(pdir, name)
		if err := os.Truncate(path, synced[path]); err != nil {
			t.Fatal(err)
		}
	}

	s = openStore(t, dir, logstore.Options{})
	p = openPartition(t, s, "events", 0)
	t.Logf("recovery: %+v", p.Recovery())
	got := readValues(t, p)
	for off, v := range acked {
		if got[off] != v {
			t.Errorf("acknowledged offset %d holds %q after power loss, want %q", off, got[off], v)
		}
	}
}

func TestSyncNever(t *testing.T) {
	dir := t.TempDir()
	fsys := newTestFS()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever}.WithFS(fsys))
	p := openPartition(t, s, "events", 0)
	before := fsys.logSyncs.Load()
	want := make(map[int64]string)
	for i := range 100 {
		v := fmt.Sprintf("v%d", i)
		res, err := p.Append(batchOf(v))
		if err != nil {
			t.Fatal(err)
		}
		want[res.BaseOffset] = v
	}
	if n := fsys.logSyncs.Load() - before; n != 0 {
		t.Errorf("%d .log fsyncs during SyncNever appends; want 0", n)
	}
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Errorf("read back %d records, want %d", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fsys.logSyncs.Load() == before {
		t.Error("Close did not fsync the .log")
	}
	s = openStore(t, dir, logstore.Options{})
	p = openPartition(t, s, "events", 0)
	if !p.Recovery().Clean {
		t.Errorf("Recovery() = %+v after a clean close; want Clean", p.Recovery())
	}
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Errorf("after reopen read back %d records, want %d", len(got), len(want))
	}
}

func TestSyncInterval(t *testing.T) {
	dir := t.TempDir()
	fsys := newTestFS()
	s := openStore(t, dir, logstore.Options{
		Sync: logstore.SyncInterval(20 * time.Millisecond),
	}.WithFS(fsys))
	p := openPartition(t, s, "events", 0)
	want := make(map[int64]string)
	before := fsys.logSyncs.Load()
	for i := range 50 {
		v := fmt.Sprintf("v%d", i)
		res, err := p.Append(batchOf(v))
		if err != nil {
			t.Fatal(err)
		}
		want[res.BaseOffset] = v
	}
	// The background syncer fsyncs without any further append.
	deadline := time.Now().Add(5 * time.Second)
	for fsys.logSyncs.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("no background fsync within 5s of SyncInterval(20ms)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// With nothing new to sync, it stays idle.
	time.Sleep(50 * time.Millisecond)
	idle := fsys.logSyncs.Load()
	time.Sleep(100 * time.Millisecond)
	if n := fsys.logSyncs.Load() - idle; n != 0 {
		t.Errorf("%d fsyncs while idle", n)
	}
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Errorf("read back %d records, want %d", len(got), len(want))
	}
	if _, err := p.Append(batchOf("last")); err != nil {
		t.Fatal(err)
	}
	want[p.EndOffset()-1] = "last"
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, logstore.Options{})
	p = openPartition(t, s, "events", 0)
	if !p.Recovery().Clean {
		t.Errorf("Recovery() = %+v after a clean close; want Clean", p.Recovery())
	}
	if got := readValues(t, p); !mapsEqual(got, want) {
		t.Errorf("after reopen read back %d records, want %d", len(got), len(want))
	}
}
