package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
)

// clockOptions are the options of a store whose clock is *now.
func clockOptions(now *time.Time) logstore.Options {
	return logstore.Options{Sync: logstore.SyncNever}.WithClock(func() time.Time { return *now })
}

// TestExpiryOnStoreClock: with the default expiry of a day, a producer
// whose record timestamps lag the store's clock by days, lead it, or are
// -1 keeps its sequence: its next batch is OK and a retry of its first
// is DUPLICATE. Judged on its record timestamps (Kafka's rule) it was
// unknown before every batch here: the retry was written twice.
func TestExpiryOnStoreClock(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	for name, ts := range map[string]int64{
		"no timestamp":    -1,
		"two days behind": now.Add(-48 * time.Hour).UnixMilli(),
		"two days ahead":  now.Add(48 * time.Hour).UnixMilli(),
	} {
		t.Run(name, func(t *testing.T) {
			clock := now
			s := openStore(t, t.TempDir(), clockOptions(&clock))
			p := openPartition(t, s, "skew", 0)
			steps := []struct {
				seq        int32
				want       string
				base, last int64
			}{
				{0, "OK", 0, 1},
				{2, "OK", 2, 3},
				{0, "DUPLICATE", 0, 1},
				{4, "OK", 4, 5},
			}
			for i, st := range steps {
				clock = clock.Add(time.Second)
				got, res := outcome(p, producerBatch(7, 0, st.seq, 2, ts))
				if got != st.want || res.BaseOffset != st.base || res.LastOffset != st.last {
					t.Fatalf("step %d: %s %d..%d, want %s %d..%d", i+1, got, res.BaseOffset, res.LastOffset, st.want, st.base, st.last)
				}
			}
			if p.EndOffset() != 6 {
				t.Fatalf("log end %d, want 6: a batch was written twice", p.EndOffset())
			}
			// A day after the store last took a batch of it, the producer
			// is forgotten, whatever its timestamps say.
			clock = clock.Add(24 * time.Hour)
			if got, _ := outcome(p, producerBatch(7, 0, 6, 1, ts)); got != "OUT_OF_ORDER" {
				t.Fatalf("a day idle: %s, want OUT_OF_ORDER", got)
			}
		})
	}
}

// TestExpiryAfterRestart: the seen time survives a clean close in the
// snapshot, so a producer idle for over a day across a restart expires
// although its record timestamps are recent; and a producer met while
// replaying the log at open counts as seen at the open, so old
// timestamps in the tail forget no one.
func TestExpiryAfterRestart(t *testing.T) {
	start := time.UnixMilli(1700000000000)
	clock := start
	dir := t.TempDir()
	opts := clockOptions(&clock)
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "restart", 0)
	// Producer 1 stamps its records ten days ahead, producer 2 ten days
	// behind.
	ahead, behind := start.Add(240*time.Hour).UnixMilli(), start.Add(-240*time.Hour).UnixMilli()
	for _, b := range [][]byte{producerBatch(1, 0, 0, 1, ahead), producerBatch(2, 0, 0, 1, behind)} {
		if got, _ := outcome(p, b); got != "OK" {
			t.Fatal(got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// 23 hours later both are known, from the close snapshot: their seen
	// times are the store's, not their timestamps.
	clock = start.Add(23 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	snap := p.ProducerSnapshot()
	if len(snap.Producers) != 2 || snap.Producers[0].LastSeen != start.UnixMilli() || snap.Producers[1].LastSeen != start.UnixMilli() {
		t.Fatalf("after a restart: %+v, want both seen at %d", snap.Producers, start.UnixMilli())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// 25 hours after their last batch both have expired, even producer 1
	// whose timestamps are in the future.
	clock = start.Add(25 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	if n := p.Startup().Producers; n != 0 {
		t.Fatalf("%d producers after 25 idle hours, want 0", n)
	}
	for pid := int64(1); pid <= 2; pid++ {
		if got, _ := outcome(p, producerBatch(pid, 0, 1, 1, ahead)); got != "OUT_OF_ORDER" {
			t.Fatalf("producer %d after 25 idle hours: %s", pid, got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the snapshot db the whole log is replayed at open: every
	// producer in it counts as seen at the open, so none is forgotten, a
	// retry is DUPLICATE and the sequence goes on.
	if err := os.Remove(filepath.Join(dir, "restart-0", snapshot.FileName)); err != nil {
		t.Fatal(err)
	}
	clock = start.Add(30 * 24 * time.Hour)
	s = openStore(t, dir, opts)
	p = openPartition(t, s, "restart", 0)
	if rep := p.Startup(); rep.SnapshotOffset != -1 || rep.ReplayedBatches != 2 || rep.Producers != 2 {
		t.Fatalf("startup %+v, want a replay of 2 batches keeping 2 producers", rep)
	}
	for _, e := range p.ProducerSnapshot().Producers {
		if e.LastSeen != clock.UnixMilli() {
			t.Fatalf("producer %d seen at %d, want the open's %d", e.ProducerID, e.LastSeen, clock.UnixMilli())
		}
	}
	clock = clock.Add(23 * time.Hour)
	if got, res := outcome(p, producerBatch(2, 0, 0, 1, behind)); got != "DUPLICATE" || res.BaseOffset != 1 {
		t.Fatalf("retry of producer 2's batch: %s at %d, want DUPLICATE at 1", got, res.BaseOffset)
	}
	if got, _ := outcome(p, producerBatch(2, 0, 1, 1, behind)); got != "OK" {
		t.Fatalf("producer 2's next batch: %s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEpochBelowMinusOneRefused: a batch with a producer id and epoch
// -2 is refused as INVALID, and nothing is written.
func TestEpochBelowMinusOneRefused(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	p := openPartition(t, s, "epoch", 0)
	if got, _ := outcome(p, producerBatch(5, -2, 0, 1, recent)); got != "INVALID" || p.EndOffset() != 0 {
		t.Fatalf("epoch -2: %s, log end %d; want INVALID and nothing written", got, p.EndOffset())
	}
	_, err := p.Append(producerBatch(5, -2, 0, 1, recent))
	var refused *logstore.RefusedError
	if !errors.As(err, &refused) || refused.Kind != logstore.RefusedInvalid || refused.Cause != producerstate.InvalidEpoch || refused.Got != -2 {
		t.Fatalf("epoch -2: %v (%+v); want a RefusedInvalid with cause INVALID_EPOCH and Got -2", err, refused)
	}
	if got, _ := outcome(p, producerBatch(5, 0, 0, 1, recent)); got != "OK" {
		t.Fatalf("epoch 0 afterwards: %s", got)
	}
}
