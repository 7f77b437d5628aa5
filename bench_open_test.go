package logstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// Shape of the partition BenchmarkOpen opens: 64 full segments of 4 MiB
// (256 MiB), written round-robin by 10,000 idempotent producers.
const (
	openBenchSegments    = 64
	openBenchSegmentSize = 4 << 20
	openBenchProducers   = 10_000
	openBenchValueBytes  = 6500
)

// BenchmarkOpen opens a 256 MiB partition of 64 segments of 4 MiB,
// written by 10,000 idempotent producers: after a clean close (the close
// snapshot, no scan, no replay); after a kill (the active segment
// scanned, the newest roll snapshot loaded and the tail replayed); and
// with the snapshot db gone (every batch of every segment replayed).
// Bytes are the partition's log size.
//
// Each open gets a fresh copy of the partition, synced to disk
// (syscall.Sync) before the timer starts, so the files are on disk as
// they are before a real open; the copy, the checks of what the open
// found, the close and the removal of the copy are not timed. Every copy
// is 256 MiB, so run it with a fixed count, as in
//
//	go test -run '^$' -bench BenchmarkOpen -benchtime 5x -count 3 .
//
// The goal is clean / no-snapshot <= 0.02; when both run, the
// no-snapshot line reports that ratio as clean/no-snapshot.
func BenchmarkOpen(b *testing.B) {
	src := b.TempDir()
	opts := logstore.Options{Sync: logstore.SyncNever, SegmentBytes: openBenchSegmentSize}
	s, err := logstore.Open(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.Partition("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, openBenchValueBytes)
	batch := func(i int) []byte {
		bl := recordbatch.NewBuilder(0)
		bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = int64(i%openBenchProducers), 0, int32(i/openBenchProducers)
		if err := bl.Append(recent, nil, value, nil); err != nil {
			b.Fatal(err)
		}
		raw, err := bl.AppendTo(nil)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	// Every batch is the same size: fill exactly openBenchSegments
	// segments, the last (active) one as full as the others.
	perSegment := openBenchSegmentSize / len(batch(0))
	batches := openBenchSegments * perSegment
	var size int64
	for i := range batches {
		raw := batch(i)
		if _, err := p.Append(raw); err != nil {
			b.Fatal(err)
		}
		size += int64(len(raw))
	}
	pdir := func(dir string) string { return filepath.Join(dir, "bench-0") }
	// A killed process leaves the directory as it is while open. Its
	// last roll's background work (the sealed segment's sync, the
	// recovery point, the roll's snapshot) is let finish first, so that
	// every run recovers the same way: the active segment scanned, the
	// newest roll snapshot loaded.
	if err := p.Flushed(); err != nil {
		b.Fatal(err)
	}
	// Counted after the flush, which names the last roll's spare files
	// after the new segment.
	if n := countSuffix(b, pdir(src), ".log"); n != openBenchSegments {
		b.Fatalf("%d segments written, want %d", n, openBenchSegments)
	}
	killed := b.TempDir()
	testutil.CopyDir(b, src, killed)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// ns per open of each case, for the ratio.
	perOpen := map[string]float64{}
	for _, c := range []struct {
		name  string
		from  string
		strip func(dir string)
		check func(p *logstore.Partition) bool // what the open must have done
	}{
		{"clean", src, func(string) {}, func(p *logstore.Partition) bool {
			st := p.Startup()
			return p.Recovery().Clean && st.SnapshotOffset == p.EndOffset() && st.ReplayedBatches == 0
		}},
		{"unclean", killed, func(string) {}, func(p *logstore.Partition) bool {
			st := p.Startup()
			return !p.Recovery().Clean && len(p.Recovery().ScannedSegments) == 1 &&
				st.SnapshotOffset > 0 && st.ReplayedBatches == perSegment
		}},
		{"no-snapshot", src, func(dir string) {
			if err := os.Remove(filepath.Join(pdir(dir), "producer-snapshots.db")); err != nil {
				b.Fatal(err)
			}
		}, func(p *logstore.Partition) bool {
			st := p.Startup()
			return p.Recovery().Clean && st.SnapshotOffset == -1 && st.ReplayedBatches == batches
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				testutil.CopyDir(b, c.from, dir)
				c.strip(dir)
				syscall.Sync() // the copy is on disk, as a store is before it opens
				b.StartTimer()
				s, err := logstore.Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				p, err := s.Partition("bench", 0)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if st := p.Startup(); st.Producers != openBenchProducers || !c.check(p) {
					b.Fatalf("open did not do what %s must: %+v, recovery %+v", c.name, st, p.Recovery())
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				// 256 MiB a copy: do not keep them all until the end.
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			perOpen[c.name] = float64(b.Elapsed()) / float64(b.N)
			if clean, ok := perOpen["clean"]; ok && c.name == "no-snapshot" {
				b.ReportMetric(clean/perOpen[c.name], "clean/no-snapshot")
			}
		})
	}
}

// countSuffix counts the files in dir whose names end with suffix.
func countSuffix(b *testing.B, dir, suffix string) int {
	b.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			n++
		}
	}
	return n
}
