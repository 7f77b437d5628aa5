package logstore_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/snapshot"
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

// TestSyncIntervalManyPartitions: SyncInterval's syncer is one for the
// store, not a goroutine per partition, and it syncs every partition
// that appended; a poisoned partition is skipped, the others go on.
func TestSyncIntervalManyPartitions(t *testing.T) {
	fsys := newTestFS()
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncInterval(10 * time.Millisecond)}.WithFS(fsys))
	before := runtime.NumGoroutine()
	const n = 100
	parts := make([]*logstore.Partition, n)
	for i := range parts {
		parts[i] = openPartition(t, s, "many", int32(i))
	}
	if g := runtime.NumGoroutine() - before; g > 20 {
		t.Fatalf("%d more goroutines with %d partitions open", g, n)
	}
	// waitSynced waits until all but skip partitions have their .log
	// synced to its size, and returns those that have not.
	waitSynced := func(what string, skip int) []int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			synced := fsys.syncedSizes()
			var behind []int
			for i := range parts {
				path := filepath.Join(dir, fmt.Sprintf("many-%d", i), "00000000000000000000.log")
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if synced[path] != fi.Size() {
					behind = append(behind, i)
				}
			}
			if len(behind) <= skip {
				return behind
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d partitions not synced in the background after 10 s", what, len(behind), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// One partition's next sync fails: it is poisoned, the others are
	// synced.
	fsys.failSync.Store(true)
	for _, p := range parts {
		if _, err := p.Append(batchOf("x")); err != nil {
			t.Fatal(err)
		}
	}
	behind := waitSynced("the first appends", 1)
	if len(behind) != 1 {
		t.Fatalf("partitions %v not synced, want the one whose sync failed", behind)
	}
	for i, p := range parts {
		_, err := p.Append(batchOf("y"))
		if (i == behind[0]) != errors.Is(err, segment.ErrPoisoned) {
			t.Fatalf("partition %d (poisoned: %d): append: %v", i, behind[0], err)
		}
	}
	waitSynced("the second appends", 1)
	if err := s.Close(); !errors.Is(err, segment.ErrPoisoned) {
		t.Fatalf("Close: %v, want the poisoned partition's error", err)
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

// TestExistingPartition: ExistingPartition opens a partition whose
// directory exists (the same *Partition as Partition), and refuses one
// whose directory is missing with ErrNoPartition without making it,
// also right after DeleteTopic removed it.
func TestExistingPartition(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	if _, err := s.ExistingPartition("t", 0); !errors.Is(err, logstore.ErrNoPartition) {
		t.Fatalf("missing partition: %v, want ErrNoPartition", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ExistingPartition made the directory: %v", err)
	}
	p := openPartition(t, s, "t", 0)
	if _, err := p.Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ExistingPartition("t", 0); err != nil || got != p {
		t.Fatalf("existing partition: %p, %v; want %p", got, err, p)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExistingPartition("t", 0); !errors.Is(err, logstore.ErrNoPartition) {
		t.Fatalf("deleted partition: %v, want ErrNoPartition", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ExistingPartition made the deleted directory again: %v", err)
	}
	// A directory made by someone else (the catalog) opens, closed
	// partitions reopen.
	if err := os.Mkdir(filepath.Join(dir, "u-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExistingPartition("u", 3); err != nil {
		t.Fatalf("made directory: %v", err)
	}
	if _, err := s.ExistingPartition("bad/name", 0); !errors.Is(err, logstore.ErrInvalidName) {
		t.Fatalf("bad name: %v, want ErrInvalidName", err)
	}
}

// recent is a record timestamp the default producer expiry (1 day,
// against the clock) keeps.
var recent = time.Now().UnixMilli()

// producerBatch builds an idempotent client batch of n records.
func producerBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, ts, false)
}

// outcome runs one append and names its outcome as the CLI does.
func outcome(p *logstore.Partition, batch []byte) (string, logstore.AppendResult) {
	res, err := p.Append(batch)
	switch {
	case err == nil && res.Duplicate:
		return "DUPLICATE", res
	case err == nil:
		return "OK", res
	case errors.Is(err, logstore.ErrOutOfOrder):
		return "OUT_OF_ORDER", res
	case errors.Is(err, logstore.ErrFenced):
		return "FENCED", res
	case errors.Is(err, logstore.ErrInvalidBatch):
		return "INVALID", res
	default:
		return "ERROR " + err.Error(), res
	}
}

// TestAcceptanceTrace runs the trace of issue 4 through the store, once
// straight and once with a close and reopen between every two steps.
func TestAcceptanceTrace(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	steps := []struct {
		epoch      int16
		seq        int32
		n          int
		want       string
		base, last int64
		end        int64
	}{
		{0, 0, 3, "OK", 0, 2, 3},
		{0, 3, 2, "OK", 3, 4, 5},
		{0, 3, 2, "DUPLICATE", 3, 4, 5},
		{0, 7, 1, "OUT_OF_ORDER", 0, 0, 5},
		{1, 7, 1, "OUT_OF_ORDER", 0, 0, 5},
		{1, 0, 1, "OK", 5, 5, 6},
		{0, 5, 1, "FENCED", 0, 0, 6},
	}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%t", restart), func(t *testing.T) {
			dir := t.TempDir()
			opts := logstore.Options{}.WithClock(func() time.Time { return now })
			s := openStore(t, dir, opts)
			p := openPartition(t, s, "trace", 0)
			for i, st := range steps {
				got, res := outcome(p, producerBatch(31, st.epoch, st.seq, st.n, now.UnixMilli()))
				if got != st.want {
					t.Fatalf("step %d: %s, want %s", i+1, got, st.want)
				}
				if (got == "OK" || got == "DUPLICATE") && (res.BaseOffset != st.base || res.LastOffset != st.last) {
					t.Fatalf("step %d: base %d last %d, want %d %d", i+1, res.BaseOffset, res.LastOffset, st.base, st.last)
				}
				if p.EndOffset() != st.end {
					t.Fatalf("step %d: log end %d, want %d", i+1, p.EndOffset(), st.end)
				}
				if restart {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = openStore(t, dir, opts)
					p = openPartition(t, s, "trace", 0)
					if rep := p.Startup(); rep.ReplayedBatches != 0 || rep.SnapshotOffset != p.EndOffset() {
						t.Fatalf("step %d: after a clean close the state should come from the close snapshot alone: %+v", i+1, rep)
					}
				}
			}
		})
	}
}

// TestSnapshotsOnRollAndClose: exactly one snapshot per roll, at the new
// segment's base offset, plus one at the log end on a clean close.
func TestSnapshotsOnRollAndClose(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever, SegmentBytes: 600})
	p := openPartition(t, s, "rolls", 0)
	for i := range 20 {
		if _, err := p.Append(producerBatch(7, 0, int32(i*2), 2, recent)); err != nil {
			t.Fatal(err)
		}
	}
	end := p.EndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "rolls-0")
	l, _, err := segment.Open(pdir, segment.Config{SegmentBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	l.Close()
	snaps, _, err := snapshot.Open(pdir, snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snaps.Close()
	offsets, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]int64(nil), segs[1:]...), end)
	if fmt.Sprint(offsets) != fmt.Sprint(want) {
		t.Fatalf("snapshots at %v, want %v (segments %v, end %d)", offsets, want, segs, end)
	}
}

// TestSnapshotAboveLogEndRemoved: a crash that loses the log's tail
// (here: the last segment's bytes cut) leaves a snapshot above the
// recovered end; it is removed, and the state comes from the older one
// plus replay, so the producer continues right after what survived.
func TestSnapshotAboveLogEndRemoved(t *testing.T) {
	dir := t.TempDir()
	opts := logstore.Options{SegmentBytes: 600}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "cut", 0)
	for i := range 20 {
		if _, err := p.Append(producerBatch(7, 0, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "cut-0")
	// Lose the clean mark and cut the last segment to nothing but a
	// torn half batch.
	if err := os.Remove(filepath.Join(pdir, "logstore.checkpoint")); err != nil {
		t.Fatal(err)
	}
	last, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	name := last[len(last)-1]
	if err := os.Truncate(name, 30); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "cut", 0)
	end := p.EndOffset()
	if rep := p.Startup(); rep.DeletedAbove == 0 || rep.SnapshotOffset > end {
		t.Fatalf("startup %+v, end %d", rep, end)
	}
	// The producer's next sequence is the one after the last surviving batch.
	if got, _ := outcome(p, producerBatch(7, 0, int32(end), 1, recent)); got != "OK" {
		t.Fatalf("next batch after recovery: %s", got)
	}
	if got, _ := outcome(p, producerBatch(7, 0, int32(end-1), 1, recent)); got != "DUPLICATE" {
		t.Fatalf("retry of the last surviving batch: %s", got)
	}
}

// TestGarbageSnapshotDB: a snapshot db that bbolt cannot open is set
// aside, and startup rebuilds the same state from the log.
func TestGarbageSnapshotDB(t *testing.T) {
	dir := t.TempDir()
	opts := logstore.Options{SegmentBytes: 600}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "g", 0)
	var last logstore.AppendResult
	for i := range 15 {
		var err error
		if last, err = p.Append(producerBatch(9, 2, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "g-0", snapshot.FileName)
	if err := os.WriteFile(db, []byte("this is not a bbolt file, not at all, no"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "g", 0)
	if rep := p.Startup(); rep.Snapshots.SetAside == "" || rep.SnapshotOffset != -1 || rep.ReplayedBatches != 15 {
		t.Fatalf("startup %+v", rep)
	}
	got, res := outcome(p, producerBatch(9, 2, 14, 1, recent))
	if got != "DUPLICATE" || res.BaseOffset != last.BaseOffset {
		t.Fatalf("retry after rebuild: %s %+v", got, res)
	}
}

// TestSnapshotPlusTailEqualsFullReplay is the invariant as a property
// test: random workloads of several producers (epoch bumps, retries,
// duplicates, out-of-order attempts) with rolls and restarts, clean and
// unclean. After each restart the state (newest snapshot + tail) equals
// a full replay of the log, and a retry of any of a producer's last 5
// batches returns its original offsets.
func TestSnapshotPlusTailEqualsFullReplay(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			dir := t.TempDir()
			opts := logstore.Options{Sync: logstore.SyncNever, ProducerExpiry: -1, SegmentBytes: 900}
			s := openStore(t, dir, opts)
			p := openPartition(t, s, "prop", 0)
			type sent struct {
				epoch      int16
				seq        int32
				n          int
				base, last int64
			}
			type prod struct {
				epoch int16
				next  int32
				sent  []sent // accepted, newest last, current epoch only
			}
			prods := map[int64]*prod{}
			for op := range 600 {
				pid := int64(1 + rng.IntN(4))
				pr := prods[pid]
				if pr == nil {
					pr = &prod{}
					prods[pid] = pr
				}
				switch r := rng.IntN(10); {
				case r < 6 || len(pr.sent) == 0: // next batch
					n := 1 + rng.IntN(3)
					got, res := outcome(p, producerBatch(pid, pr.epoch, pr.next, n, recent))
					if got != "OK" {
						t.Fatalf("op %d: pid %d next batch: %s", op, pid, got)
					}
					pr.sent = append(pr.sent, sent{pr.epoch, pr.next, n, res.BaseOffset, res.LastOffset})
					if len(pr.sent) > producerstate.WindowSize {
						pr.sent = pr.sent[1:]
					}
					pr.next = recordbatch.IncrementSequence(pr.next, int32(n))
				case r < 8: // retry of one of the last 5
					b := pr.sent[rng.IntN(len(pr.sent))]
					got, res := outcome(p, producerBatch(pid, b.epoch, b.seq, b.n, recent))
					if got != "DUPLICATE" || res.BaseOffset != b.base || res.LastOffset != b.last {
						t.Fatalf("op %d: pid %d retry of seq %d: %s %+v, want DUPLICATE %d..%d", op, pid, b.seq, got, res, b.base, b.last)
					}
				case r < 9: // a gap
					if got, _ := outcome(p, producerBatch(pid, pr.epoch, pr.next+1, 1, recent)); got != "OUT_OF_ORDER" {
						t.Fatalf("op %d: gap: %s", op, got)
					}
				default: // epoch bump
					pr.epoch++
					pr.next, pr.sent = 0, nil
				}
				if rng.IntN(40) == 0 {
					clean := rng.IntN(2) == 0
					if clean {
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						// Killed, and the checkpoint lost: the next open
						// recovers and replays.
						dir = killedCopy(t, s, p, dir)
						os.Remove(filepath.Join(dir, "prop-0", "logstore.checkpoint"))
					}
					s = openStore(t, dir, opts)
					p = openPartition(t, s, "prop", 0)
					checkAgainstFullReplay(t, p)
				}
			}
		})
	}
}

// checkAgainstFullReplay replays the partition's whole log into a fresh
// state and compares it with the producers the partition knows, through
// the snapshot of its state. The store ran on the real clock, which the
// log does not hold: seen times are compared only with the clock (known,
// and not in the future).
func checkAgainstFullReplay(t *testing.T, p *logstore.Partition) {
	t.Helper()
	full := producerstate.New(producerstate.Config{})
	var all []byte
	for off := p.StartOffset(); off < p.EndOffset(); {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
		for len(data) > 0 {
			b, _ := recordbatch.Parse(data, 0)
			off = b.LastOffset() + 1
			data = data[b.Size():]
		}
	}
	for len(all) > 0 {
		b, err := recordbatch.Parse(all, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := full.Apply(b, time.Now()); err != nil {
			t.Fatal(err)
		}
		all = all[b.Size():]
	}
	got := p.ProducerSnapshot()
	want := full.Snapshot()
	for _, e := range got.Producers {
		if e.LastSeen == producerstate.SeenUnknown || e.LastSeen > time.Now().UnixMilli() {
			t.Fatalf("producer %d seen at %d, not a time of the store's clock", e.ProducerID, e.LastSeen)
		}
	}
	if !got.EqualIgnoringSeen(want) {
		t.Fatalf("state after open (snapshot at %d + %d batches) differs from a full replay:\n got %+v\nwant %+v", p.Startup().SnapshotOffset, p.Startup().ReplayedBatches, got, want)
	}
}

// TestSnapshotsPrunedByRetention: when retention deletes segments, the
// snapshots below the new log start go with them.
func TestSnapshotsPrunedByRetention(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever, SegmentBytes: 600, RetentionBytes: 1500})
	p := openPartition(t, s, "ret", 0)
	for i := range 40 {
		if _, err := p.Append(producerBatch(3, 0, int32(i), 1, recent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flushed(); err != nil { // retention runs after each roll's flush
		t.Fatal(err)
	}
	start := p.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, _, err := snapshot.Open(filepath.Join(dir, "ret-0"), snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snaps.Close()
	offsets, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets) == 0 || offsets[0] < start {
		t.Fatalf("snapshots %v with log start %d", offsets, start)
	}
}
