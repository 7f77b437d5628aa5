package kafkaserver

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
)

// BenchmarkFetchServer: the server's side of a fetch, without a Kafka
// client's decoding: one connection sends a Fetch (v12, MaxBytes and
// PartitionMaxBytes the size) from a batch boundary of a 64 MiB
// partition of 16 KiB batches (1 KiB values) in the page cache, and
// reads the response into one reused buffer. MB/s counts the response
// bytes; allocs/op and B/op are the server's per fetch (the client
// allocates only its request frame); cpu-us/MiB is the process's CPU
// time (user and system: the server, the kernel's loopback, and the
// client's reads) per MiB of responses, steadier than MB/s on a machine
// other jobs load. tcpcopy is the floor beside it: the partition's
// segment file sent over a loopback connection (io.Copy from the file:
// sendfile) to a reader taking 1 MiB a read, in the same process.
func BenchmarkFetchServer(b *testing.B) {
	ts, part, batch := zeroBatchPartition(b, "bench")
	batches := (64 << 20) / len(batch)
	for range batches {
		if _, err := part.Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
	}
	logs, err := filepath.Glob(filepath.Join(ts.store.Dir(), "bench-0", "*.log"))
	if err != nil || len(logs) == 0 {
		b.Fatalf("the partition's segment files: %v (%d found)", err, len(logs))
	}
	b.Run("tcpcopy", func(b *testing.B) {
		addr, sent := testutil.ServeFiles(b, logs[:1])
		buf := make([]byte, 1<<20)
		var total int64
		b.ReportAllocs()
		b.ResetTimer()
		cpu0, cpuKnown := processCPU()
		for range b.N {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			n, err := testutil.ReadAll(c, buf)
			total += n
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			if err := <-sent; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if cpu1, ok := processCPU(); ok && cpuKnown {
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/(float64(total)/(1<<20)), "cpu-us/MiB")
		}
		b.SetBytes(total / int64(b.N))
	})
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("bytes=%dKiB", size>>10), func(b *testing.B) {
			c := ts.dial()
			buf := make([]byte, 2*size+4096)
			step := size / len(batch) // batches per fetch
			var sent int64
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, cpuKnown := processCPU()
			for i := range b.N {
				first := (i * step) % (batches - step)
				r := fetchReq(12, "bench", 0, int64(first*zeroBatchRecords), 0, 0)
				r.MaxBytes, r.Topics[0].Partitions[0].PartitionMaxBytes = int32(size), int32(size)
				c.corr++
				if _, err := c.nc.Write(frame(r, c.corr)); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c.nc, buf[:4]); err != nil {
					b.Fatal(err)
				}
				n := int(binary.BigEndian.Uint32(buf))
				if n > len(buf) || n < size/2 {
					b.Fatalf("response of %d bytes", n)
				}
				if _, err := io.ReadFull(c.nc, buf[:n]); err != nil {
					b.Fatal(err)
				}
				sent += int64(n)
			}
			b.StopTimer()
			if cpu1, ok := processCPU(); ok && cpuKnown {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/(float64(sent)/(1<<20)), "cpu-us/MiB")
			}
			b.SetBytes(sent / int64(b.N))
		})
	}
}
