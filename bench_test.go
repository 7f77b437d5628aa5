package logstore_test

import (
	"fmt"
	"github.com/logstore/logstore/internal/testutil"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// BenchmarkAppendRoll measures what a roll costs an append: every append
// of rolls=every starts a new segment (so it seals and syncs the old one
// and saves the producer state of the partition's 10,000 producers to
// bbolt), beside the same appends without rolls. sync=never, so the
// difference is the roll itself.
func BenchmarkAppendRoll(b *testing.B) {
	for _, every := range []bool{false, true} {
		b.Run(fmt.Sprintf("producers=10000/rolls=%s", map[bool]string{false: "none", true: "every"}[every]), func(b *testing.B) {
			// 10,000 producers, written with large segments; then reopened
			// with the segment size under test.
			dir := b.TempDir()
			s, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			p, err := s.Partition("bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			seq := make([]int32, 10000)
			for pid := range seq {
				if _, err := p.Append(producerBatch(int64(pid), 0, 0, 1, recent)); err != nil {
					b.Fatal(err)
				}
				seq[pid] = 1
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			segBytes := int64(1 << 30)
			if every {
				segBytes = 200
			}
			s, err = logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever, Segment: segment.Config{SegmentBytes: segBytes}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if p, err = s.Partition("bench", 0); err != nil {
				b.Fatal(err)
			}
			batches := make([][]byte, len(seq))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				pid := i % len(seq)
				b.StopTimer()
				batches[pid] = producerBatch(int64(pid), 0, seq[pid], 1, recent)
				b.StartTimer()
				if _, err := p.Append(batches[pid]); err != nil {
					b.Fatal(err)
				}
				seq[pid] = recordbatch.IncrementSequence(seq[pid], 1)
				i++
			}
		})
	}
}

// BenchmarkAppendParallel: appenders on one partition with SyncAlways,
// each waiting for its own acknowledgement (group commit shares the
// fsyncs). Bytes are the batches acknowledged; compare producers=32 with
// producers=1 for what group commit buys.
func BenchmarkAppendParallel(b *testing.B) {
	batch := func() []byte {
		bl := recordbatch.NewBuilder(0)
		for i := range 16 {
			if err := bl.Append(recent, nil, make([]byte, 1000+i), nil); err != nil {
				b.Fatal(err)
			}
		}
		out, err := bl.AppendTo(nil)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}()
	for _, producers := range []int{1, 32} {
		b.Run(fmt.Sprintf("producers=%d/sync=always", producers), func(b *testing.B) {
			s, err := logstore.Open(b.TempDir(), logstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			p, err := s.Partition("bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					own := append([]byte(nil), batch...)
					for i := g; i < b.N; i += producers {
						if _, err := p.Append(own); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkOpen opens a 64 MiB partition of 16 segments written by
// 10,000 idempotent producers: after a clean close (the close snapshot,
// no scan); after a kill (the active segment scanned, the newest roll
// snapshot loaded and the tail replayed); and with the snapshot db gone
// (every batch replayed). Bytes are the partition's log size.
func BenchmarkOpen(b *testing.B) {
	src := b.TempDir()
	s, err := logstore.Open(src, logstore.Options{Sync: logstore.SyncNever, Segment: segment.Config{SegmentBytes: 4 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.Partition("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 6500)
	var size int64
	for i := 0; size < 64<<20; i++ {
		bl := recordbatch.NewBuilder(0)
		bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = int64(i%10000), 0, int32(i/10000)
		if err := bl.Append(recent, nil, value, nil); err != nil {
			b.Fatal(err)
		}
		raw, err := bl.AppendTo(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Append(raw); err != nil {
			b.Fatal(err)
		}
		size += int64(len(raw))
	}
	// A killed process leaves the directory as it is while open.
	killed := b.TempDir()
	testutil.CopyDir(b, src, killed)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	pdir := func(dir string) string { return filepath.Join(dir, "bench-0") }
	for _, c := range []struct {
		name  string
		from  string
		strip func(dir string)
	}{
		{"clean", src, func(string) {}},
		{"unclean", killed, func(string) {}},
		{"no-snapshot", src, func(dir string) { os.Remove(filepath.Join(pdir(dir), "producer-snapshots.db")) }},
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
				s, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever, Segment: segment.Config{SegmentBytes: 4 << 20}})
				if err != nil {
					b.Fatal(err)
				}
				p, err := s.Partition("bench", 0)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if st := p.Startup(); st.Producers != 10000 {
					b.Fatalf("%d producers after open: %+v", st.Producers, st)
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}
