package logstore_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// The batch sizes of issue 7's append benchmarks.
var benchSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"256KiB", 256 << 10}}

var benchSyncModes = []struct {
	name string
	mode logstore.SyncMode
}{{"never", logstore.SyncNever}, {"always", logstore.SyncAlways}}

// sizedBatch builds an idempotent batch of producer pid starting at
// sequence seq, of exactly size bytes: records of about 1000-byte values
// (one record for 1 KiB), the last one padded.
func sizedBatch(tb testing.TB, size int, pid int64, seq int32) []byte {
	tb.Helper()
	build := func(last int) []byte {
		bl := recordbatch.NewBuilder(0)
		bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = pid, 0, seq
		n := max(1, size/1024)
		for i := range n {
			v := 1000
			if i == n-1 {
				v = last
			}
			if err := bl.Append(recent, nil, make([]byte, v), nil); err != nil {
				tb.Fatal(err)
			}
		}
		out, err := bl.AppendTo(nil)
		if err != nil {
			tb.Fatal(err)
		}
		return out
	}
	last := 900
	for range 4 { // the varint lengths settle within a step or two
		out := build(last)
		if len(out) == size {
			return out
		}
		last += size - len(out)
	}
	tb.Fatalf("no batch of exactly %d bytes", size)
	return nil
}

// setSequence restamps a built batch with another base sequence and
// fixes its CRC, as a producer would have built it: base sequence at
// byte 53 and CRC-32C at byte 17 over bytes 21 on (Kafka's v2 layout).
func setSequence(b []byte, seq int32) {
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], recordbatch.Checksum(b[21:]))
}

// benchChunkBytes is how many bytes of distinct pre-encoded batches the
// append benchmarks cycle through: a few MiB, so the batches come from
// the CPU's cache as a batch just received from the network would, not
// one cache-hot buffer nor memory the CPU has not seen for a while.
const benchChunkBytes = 4 << 20

// BenchmarkAppend appends pre-encoded idempotent batches of one producer
// to a partition on the machine's disk. Batches are encoded in chunks of
// benchChunkBytes outside the timer, so the figure is the store's work
// alone: the checks, the producer decision, the write, and for
// sync=always one fdatasync per append (one appender: no group commit).
// Compare with BenchmarkRawWrite of the same size and mode.
func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes {
		for _, sm := range benchSyncModes {
			b.Run(fmt.Sprintf("size=%s/sync=%s", sz.name, sm.name), func(b *testing.B) {
				s := openStore(b, b.TempDir(), logstore.Options{Sync: sm.mode})
				defer s.Close()
				p := openPartition(b, s, "bench", 0)
				tmpl := sizedBatch(b, sz.size, 1, 0)
				appendCopies(b, p, tmpl, int64(sz.size))
			})
		}
	}
}

// appendCopies appends b.N copies of the idempotent batch tmpl to p, each
// restamped with the producer's next sequence. The copies are made in
// chunks of benchChunkBytes outside the timer, so the figure is the
// store's work alone; bytes is what one append counts for MB/s. The timer
// is stopped when it returns, so a deferred Close is not measured.
func appendCopies(b *testing.B, p *logstore.Partition, tmpl []byte, bytes int64) {
	records := int32(recordbatch.Batch(tmpl).NumRecords())
	chunk := make([][]byte, max(1, benchChunkBytes/len(tmpl)))
	for i := range chunk {
		chunk[i] = make([]byte, len(tmpl))
	}
	var seq int32
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(len(chunk), b.N-done)
		b.StopTimer()
		for i := range n {
			copy(chunk[i], tmpl)
			setSequence(chunk[i], seq)
			seq = recordbatch.IncrementSequence(seq, records)
		}
		b.StartTimer()
		for _, batch := range chunk[:n] {
			if _, err := p.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		done += n
	}
	b.StopTimer()
}

// BenchmarkRawWrite is the physical baseline of BenchmarkAppend: the same
// bytes written with os.File.Write to a file in the same kind of
// directory, with an fdatasync after each write for sync=always. As in
// BenchmarkAppend, the writes cycle through benchChunkBytes of distinct
// buffers. The 512KiB/sync=always case is the cost of one fsync covering
// 32 producers' 16 KiB batches: the ceiling of
// BenchmarkAppendParallel/producers=32.
func BenchmarkRawWrite(b *testing.B) {
	sizes := append(benchSizes[:len(benchSizes):len(benchSizes)], struct {
		name string
		size int
	}{"512KiB", 512 << 10})
	for _, sz := range sizes {
		for _, sm := range benchSyncModes {
			if sz.size > 256<<10 && sm.mode != logstore.SyncAlways {
				continue
			}
			b.Run(fmt.Sprintf("size=%s/sync=%s", sz.name, sm.name), func(b *testing.B) {
				f, err := os.Create(filepath.Join(b.TempDir(), "raw.log"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				data := sizedBatch(b, sz.size, 1, 0)
				chunk := make([][]byte, max(1, benchChunkBytes/sz.size))
				for i := range chunk {
					chunk[i] = bytes.Clone(data)
				}
				always := sm.mode == logstore.SyncAlways
				b.SetBytes(int64(sz.size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if _, err := f.Write(chunk[i%len(chunk)]); err != nil {
						b.Fatal(err)
					}
					if always {
						if err := syscall.Fdatasync(int(f.Fd())); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkAppendParallel: that many goroutines, each its own idempotent
// producer, append 16 KiB batches to one partition with SyncAlways, each
// waiting for its own acknowledgement, so group commit shares the
// fsyncs. Each producer restamps its batch's sequence and CRC before an
// append (about 1 µs, a client's work, counted). Reports MB/s of batches
// acknowledged, acknowledgements per second, and acknowledgements per
// fsync of the log.
func BenchmarkAppendParallel(b *testing.B) {
	for _, producers := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			fsys := &syncCountFS{FS: vfs.OS}
			s := openStore(b, b.TempDir(), logstore.Options{Sync: logstore.SyncAlways}.WithFS(fsys))
			defer s.Close()
			p := openPartition(b, s, "bench", 0)
			batches := make([][]byte, producers)
			for g := range batches {
				batches[g] = sizedBatch(b, 16<<10, int64(g+1), 0)
			}
			b.SetBytes(16 << 10)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g, batch := range batches {
				wg.Go(func() {
					records := recordbatch.Batch(batch).NumRecords()
					var seq int32
					for i := g; i < b.N; i += producers {
						setSequence(batch, seq)
						if _, err := p.Append(batch); err != nil {
							b.Error(err)
							return
						}
						seq = recordbatch.IncrementSequence(seq, records)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acks/s")
			b.ReportMetric(float64(b.N)/float64(max(1, fsys.logSyncs.Load())), "acks/fsync")
		})
	}
}

// syncCountFS counts the syncs of .log files.
type syncCountFS struct {
	vfs.FS
	logSyncs atomic.Int64
}

func (f *syncCountFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return syncCountFile{File: file, n: &f.logSyncs}, nil
}

type syncCountFile struct {
	vfs.File
	n *atomic.Int64
}

func (f syncCountFile) Sync() error {
	f.n.Add(1)
	return f.File.Sync()
}

// BenchmarkAppendDuringRoll measures issue 7's "p99 latency raised by no
// more than one fsync" goal. One producer appends 16 KiB batches with
// SyncAlways to a partition whose state holds 10,000 producers, so each
// roll copies and saves a 10,000-producer snapshot: with rolls=none the
// segment never rolls; with rolls=every-64 it rolls every 64 appends (1
// MiB segments), so more than 1 % of appends meet a roll. Each reports
// the p50 and p99 of its acknowledgement latencies, and fsync-µs: the
// median fdatasync of a 16 KiB write in the same directory, measured
// just before.
func BenchmarkAppendDuringRoll(b *testing.B) {
	for _, c := range []struct {
		name     string
		segBytes int64
	}{{"rolls=none", 1 << 30}, {"rolls=every-64", 64*(16<<10) + 1}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			withProducers(b, dir, 10000)
			fsync := medianFsync(b, dir, 16<<10, 200)
			s := openStore(b, dir, logstore.Options{SegmentBytes: c.segBytes})
			defer s.Close()
			p := openPartition(b, s, "bench", 0)
			batch := sizedBatch(b, 16<<10, 10000, 0) // a producer of its own
			records := recordbatch.Batch(batch).NumRecords()
			lat := make([]time.Duration, 0, b.N)
			var seq int32
			b.SetBytes(16 << 10)
			b.ResetTimer()
			for range b.N {
				setSequence(batch, seq)
				start := time.Now()
				if _, err := p.Append(batch); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				seq = recordbatch.IncrementSequence(seq, records)
			}
			b.StopTimer()
			slices.Sort(lat)
			at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(at(0.50), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
			b.ReportMetric(float64(fsync.Microseconds()), "fsync-µs")
		})
	}
}

// withProducers writes one batch for each of n idempotent producers (ids
// 0 to n-1, sequence 0) to partition bench-0 of a new store in dir, and
// closes it.
func withProducers(b *testing.B, dir string, n int) {
	b.Helper()
	s := openStore(b, dir, logstore.Options{Sync: logstore.SyncNever})
	p := openPartition(b, s, "bench", 0)
	for pid := range int64(n) {
		if _, err := p.Append(producerBatch(pid, 0, 0, 1, recent)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// medianFsync writes n blocks of size bytes to a new file in dir, each
// followed by fdatasync, and returns the median time of one write+sync.
func medianFsync(b *testing.B, dir string, size, n int) time.Duration {
	b.Helper()
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	data := make([]byte, size)
	times := make([]time.Duration, n)
	for i := range times {
		start := time.Now()
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[n/2]
}
