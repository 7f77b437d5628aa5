package kafkaserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/perf"
	"github.com/logstore/logstore/internal/testutil"
)

// fetchTopic is BenchmarkFetchServer's topic; fetchRecordBytes the
// value size of kfake's records there.
const (
	fetchTopic       = "bench"
	fetchRecordBytes = 1024
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
// inflight=4 keeps four fetches sent ahead of the responses read, as a
// client fetching several partitions or prefetching does. kfake/ is
// the same client against franz-go's kfake (in the same process, so
// its cpu-us/MiB compares with the server's), holding 16 MiB of the
// same shape of records, sent by kgo.
func BenchmarkFetchServer(b *testing.B) {
	ts, part, batch := zeroBatchPartition(b, fetchTopic)
	batches := (64 << 20) / len(batch)
	for range batches {
		if _, err := part.Append(append([]byte(nil), batch...)); err != nil {
			b.Fatal(err)
		}
	}
	logs, err := filepath.Glob(filepath.Join(ts.store.Dir(), fetchTopic+"-0", "*.log"))
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
		for _, inflight := range []int{1, 4} {
			b.Run(fmt.Sprintf("bytes=%dKiB/inflight=%d", size>>10, inflight), func(b *testing.B) {
				step := size / len(batch) // batches per fetch
				rawFetches(b, ts.dial().nc, size, inflight, func(i int) int64 {
					return int64((i*step)%(batches-step)) * zeroBatchRecords
				})
			})
		}
	}
	// kfake is filled on the first run of its sub-benchmarks only, and
	// kept for the next (it lives as long as the parent): 16 MiB of
	// 1 KiB values in 16 KiB batches, sent by kgo.
	parent, kfakeAddr := b, ""
	const kfakeRecords = (16 << 20) / fetchRecordBytes
	for _, size := range []int{64 << 10, 1 << 20} {
		for _, inflight := range []int{1, 4} {
			b.Run(fmt.Sprintf("kfake/bytes=%dKiB/inflight=%d", size>>10, inflight), func(b *testing.B) {
				if kfakeAddr == "" {
					c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, fetchTopic))
					if err != nil {
						b.Fatal(err)
					}
					parent.Cleanup(c.Close)
					addr := c.ListenAddrs()[0]
					if err := perf.ProduceWire(context.Background(), perf.WireProduceConfig{
						Bootstrap: []string{addr}, Topic: fetchTopic, Partitions: 1, Records: kfakeRecords, RecordSize: fetchRecordBytes,
						Producers: 1, BatchBytes: 16 << 10, Linger: 10 * time.Millisecond, Acks: -1,
					}, &perf.ProduceReport{}); err != nil {
						b.Fatal(err)
					}
					kfakeAddr = addr
				}
				nc, err := net.Dial("tcp", kfakeAddr)
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				step := size / fetchRecordBytes // records per fetch
				rawFetches(b, nc, size, inflight, func(i int) int64 {
					return int64((i * step) % (kfakeRecords - 2*step))
				})
			})
		}
	}
}

// rawFetches sends b.N Fetch requests (v12, MaxBytes and
// PartitionMaxBytes size) for fetchTopic's partition 0 over nc, the
// i-th from offsetOf(i), keeping inflight of them sent and not yet
// answered, and reads each response whole into one reused buffer
// without decoding it. It reports MB/s of responses, and the
// process's CPU per MiB of them.
func rawFetches(b *testing.B, nc net.Conn, size, inflight int, offsetOf func(i int) int64) {
	b.Helper()
	buf := make([]byte, 2*size+4096)
	var corr int32
	send := func(i int) {
		r := fetchReq(12, fetchTopic, 0, offsetOf(i), 0, 0)
		r.MaxBytes, r.Topics[0].Partitions[0].PartitionMaxBytes = int32(size), int32(size)
		corr++
		if _, err := nc.Write(frame(r, corr)); err != nil {
			b.Fatal(err)
		}
	}
	var got int64
	read := func() {
		if _, err := io.ReadFull(nc, buf[:4]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(buf))
		if n > len(buf) || n < size/2 {
			b.Fatalf("response of %d bytes to a fetch of %d", n, size)
		}
		if _, err := io.ReadFull(nc, buf[:n]); err != nil {
			b.Fatal(err)
		}
		got += int64(n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuKnown := processCPU()
	sent := 0
	for ; sent < min(inflight, b.N); sent++ {
		send(sent)
	}
	for range b.N {
		read()
		if sent < b.N {
			send(sent)
			sent++
		}
	}
	b.StopTimer()
	if cpu1, ok := processCPU(); ok && cpuKnown {
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/(float64(got)/(1<<20)), "cpu-us/MiB")
	}
	b.SetBytes(got / int64(b.N))
}
