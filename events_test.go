package logstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/logstore/logstore"
)

// eventRecorder keeps every event a store reports.
type eventRecorder struct {
	mu    sync.Mutex
	syncs []logstore.SyncEvent
	rolls []logstore.RollEvent
	snaps []logstore.SnapshotEvent
	opens []logstore.OpenEvent
}

func (r *eventRecorder) events() *logstore.Events {
	return &logstore.Events{
		Sync:          func(e logstore.SyncEvent) { r.mu.Lock(); r.syncs = append(r.syncs, e); r.mu.Unlock() },
		Roll:          func(e logstore.RollEvent) { r.mu.Lock(); r.rolls = append(r.rolls, e); r.mu.Unlock() },
		SnapshotSave:  func(e logstore.SnapshotEvent) { r.mu.Lock(); r.snaps = append(r.snaps, e); r.mu.Unlock() },
		PartitionOpen: func(e logstore.OpenEvent) { r.mu.Lock(); r.opens = append(r.opens, e); r.mu.Unlock() },
	}
}

// reset returns what was recorded and forgets it.
func (r *eventRecorder) reset() (syncs []logstore.SyncEvent, rolls []logstore.RollEvent, snaps []logstore.SnapshotEvent, opens []logstore.OpenEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	syncs, rolls, snaps, opens = r.syncs, r.rolls, r.snaps, r.opens
	r.syncs, r.rolls, r.snaps, r.opens = nil, nil, nil, nil
	return
}

// segmentBases lists the base offsets of the .log files in pdir.
func segmentBases(t *testing.T, pdir string) []int64 {
	t.Helper()
	var out []int64
	for _, n := range listDir(t, pdir) {
		if digits, ok := strings.CutSuffix(n, ".log"); ok && len(digits) == 20 {
			b, err := strconv.ParseInt(digits, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// TestEventsReportStoreWork: appends that roll segments report every
// fsync with the batches and bytes it covered (together, every batch
// appended), every roll at its new segment's base, every snapshot save
// (each roll's, then the close's); opens report their recovery and
// producer-state figures, clean or after a kill.
func TestEventsReportStoreWork(t *testing.T) {
	var rec eventRecorder
	dir := t.TempDir()
	opts := logstore.Options{SegmentBytes: 1024, Events: rec.events()}
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "events", 0)
	other := openPartition(t, s, "a-topic", 3)

	var batches, bytes int64
	seq := map[int64]int32{}
	for i := range 40 {
		pid := int64(1 + i%3)
		b := producerBatch(pid, 0, seq[pid], 3, recent)
		seq[pid] += 3
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
		batches++
		bytes += int64(len(b))
	}
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	syncs, rolls, snaps, opens := rec.reset()

	if len(opens) != 2 || opens[0].Partition != p.ID() || opens[1].Partition != other.ID() || opens[0].Err != nil {
		t.Fatalf("open events %+v; want one for each partition opened", opens)
	}
	var gotBatches, gotBytes int64
	for _, e := range syncs {
		if e.Partition != p.ID() || e.Err != nil || e.Batches < 1 {
			t.Fatalf("sync event %+v", e)
		}
		gotBatches += e.Batches
		gotBytes += e.Bytes
	}
	if gotBatches != batches || gotBytes != bytes {
		t.Fatalf("sync events cover %d batches, %d bytes; appended %d, %d", gotBatches, gotBytes, batches, bytes)
	}
	bases := segmentBases(t, filepath.Join(dir, "events-0"))
	if len(bases) < 3 || len(rolls) != len(bases)-1 {
		t.Fatalf("%d roll events for segments %v", len(rolls), bases)
	}
	for i, r := range rolls {
		if r.Partition != p.ID() || r.BaseOffset != bases[i+1] {
			t.Fatalf("roll event %d: %+v; segments %v", i, r, bases)
		}
	}
	if len(snaps) != len(rolls) {
		t.Fatalf("%d snapshot events for %d rolls", len(snaps), len(rolls))
	}
	for i, e := range snaps {
		if e.Partition != p.ID() || e.Offset != rolls[i].BaseOffset || e.Close || e.Err != nil || e.Duration < 0 {
			t.Fatalf("snapshot event %d: %+v, roll at %d", i, e, rolls[i].BaseOffset)
		}
	}
	if n := p.Producers(); n != 3 {
		t.Fatalf("Producers() = %d, want 3", n)
	}
	if got := s.OpenPartitions(); len(got) != 2 || got[0] != other || got[1] != p {
		t.Fatalf("OpenPartitions() = %v, want [%v %v]", got, other.ID(), p.ID())
	}
	end := p.EndOffset()

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, snaps, _ = rec.reset()
	var closeSave *logstore.SnapshotEvent
	for i := range snaps {
		if snaps[i].Partition == p.ID() {
			closeSave = &snaps[i]
		}
	}
	if len(snaps) != 2 || closeSave == nil || !closeSave.Close || closeSave.Offset != end || closeSave.Producers != 3 || closeSave.Err != nil {
		t.Fatalf("snapshot events at close %+v; want one per partition, %s's at %d with 3 producers", snaps, p.ID(), end)
	}

	// A clean reopen loads the close's snapshot and replays nothing.
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "events", 0)
	_, _, _, opens = rec.reset()
	if len(opens) != 1 {
		t.Fatalf("open events %+v", opens)
	}
	o := opens[0]
	if o.Err != nil || !o.Recovery.Clean || o.Startup.SnapshotOffset != end || o.Startup.ReplayedBatches != 0 || o.Startup.Producers != 3 || o.Duration < 0 {
		t.Fatalf("clean reopen reported %+v", o)
	}
	if got := s.OpenPartitions(); len(got) != 1 || got[0] != p {
		t.Fatalf("OpenPartitions() after reopen = %v", got)
	}

	// After a kill: the active segment is scanned, and its batches are
	// replayed after the roll's snapshot.
	for i := range 10 {
		pid := int64(1 + i%3)
		if _, err := p.Append(producerBatch(pid, 0, seq[pid], 3, recent)); err != nil {
			t.Fatal(err)
		}
		seq[pid] += 3
	}
	killed := killedCopy(t, s, p, dir)
	rec.reset()
	s = openStore(t, killed, opts)
	openPartition(t, s, "events", 0)
	_, _, _, opens = rec.reset()
	if len(opens) != 1 {
		t.Fatalf("open events %+v", opens)
	}
	o = opens[0]
	if o.Err != nil || o.Recovery.Clean || o.Recovery.ScannedBatches == 0 || o.Recovery.ScannedBytes == 0 ||
		o.Startup.ReplayedBatches != int(o.Recovery.ScannedBatches) || o.Startup.Producers != 3 {
		t.Fatalf("reopen after a kill reported %+v", o)
	}
}

// TestEventsReportFailedOpen: a partition that cannot be opened is
// reported with the error.
func TestEventsReportFailedOpen(t *testing.T) {
	var rec eventRecorder
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "blocked-0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, logstore.Options{Events: rec.events()})
	_, openErr := s.Partition("blocked", 0)
	if openErr == nil {
		t.Fatal("a partition whose directory is a file opened")
	}
	_, _, _, opens := rec.reset()
	if len(opens) != 1 || opens[0].Err == nil || opens[0].Partition != (logstore.PartitionID{Topic: "blocked", Partition: 0}) {
		t.Fatalf("open events %+v; want one with the error", opens)
	}
	if got := s.OpenPartitions(); len(got) != 0 {
		t.Fatalf("OpenPartitions() = %v after a failed open", got)
	}
}

// TestEventsNilHooks: an Events with no hooks set costs nothing and
// breaks nothing, through rolls, syncs and a close.
func TestEventsNilHooks(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{SegmentBytes: 512, Events: &logstore.Events{}})
	p := openPartition(t, s, "events", 0)
	for i := range 20 {
		if _, err := p.Append(batchOf(fmt.Sprint("value-", i), "more", "and more")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEventsGroupCommitConcurrent: with appenders racing under
// SyncAlways, the fsyncs reported cover every batch exactly once
// between them, however group commit grouped them.
func TestEventsGroupCommitConcurrent(t *testing.T) {
	var rec eventRecorder
	s := openStore(t, t.TempDir(), logstore.Options{SegmentBytes: 4096, Events: rec.events()})
	p := openPartition(t, s, "events", 0)
	const writers, each = 4, 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bytes int64
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				b := batchOf(fmt.Sprintf("writer-%d-%d", w, i))
				mu.Lock()
				bytes += int64(len(b))
				mu.Unlock()
				if _, err := p.Append(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	syncs, rolls, _, _ := rec.reset()
	var batches, covered int64
	for _, e := range syncs {
		batches += e.Batches
		covered += e.Bytes
	}
	if batches != writers*each || covered != bytes || len(syncs) > writers*each || len(rolls) == 0 {
		t.Fatalf("%d fsyncs covered %d batches, %d bytes, %d rolls; appended %d batches, %d bytes", len(syncs), batches, covered, len(rolls), writers*each, bytes)
	}
}
