package kafkaserver_test

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/perf"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/recordbatch"
)

// Issue 13's performance figures (BENCHMARKS.md): produce over the wire
// with kgo against Partition.Append of the same batches in process, and
// against franz-go's kfake; a kgo consumer reading a partition against
// kfake and against a plain loopback TCP copy of the same bytes.
//
// Allocations are those of the whole process: the kgo clients and the
// server (or kfake, or the in-process producers) together.

var benchFetchMiB = flag.Int("fetch-mib", 16, "MiB of record values in the partition BenchmarkFetch reads (BENCHMARKS.md's figure uses 256)")

const (
	benchTopic      = "bench"
	benchBatchBytes = 16 << 10 // Kafka's batch.size
)

// benchSyncs are the store's sync modes the produce benchmarks compare.
var benchSyncs = []struct {
	name string
	mode logstore.SyncMode
}{{"never", logstore.SyncNever}, {"always", logstore.SyncAlways}}

// benchQuiet is the servers' logger in benchmarks: connection ends are
// not news.
var benchQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// benchServe serves store on a loopback port until the benchmark ends,
// and returns its address. It does not close the store.
func benchServe(b *testing.B, store *logstore.Store) string {
	b.Helper()
	srv, err := kafkaserver.New(store, kafkaserver.Config{AutoCreateTopics: true, Logger: benchQuiet})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, kafkaserver.ErrServerClosed) {
			b.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// syncCount counts a store's group-commit fsyncs (Events.Sync).
type syncCount struct{ fsyncs, batches, nanos atomic.Int64 }

// report adds batches per fsync and the fsync's mean latency to the
// benchmark's figures, when there were fsyncs.
func (c *syncCount) report(b *testing.B) {
	if n := c.fsyncs.Load(); n > 0 {
		b.ReportMetric(float64(c.batches.Load())/float64(n), "batches/fsync")
		b.ReportMetric(float64(c.nanos.Load())/float64(n)/1e6, "ms/fsync")
	}
}

// benchStore opens a store in dir, closed when the benchmark ends, and
// counts its fsyncs.
func benchStore(b *testing.B, dir string, mode logstore.SyncMode) (*logstore.Store, *syncCount) {
	b.Helper()
	sc := &syncCount{}
	events := &logstore.Events{Sync: func(e logstore.SyncEvent) {
		sc.fsyncs.Add(1)
		sc.batches.Add(e.Batches)
		sc.nanos.Add(int64(e.Duration))
	}}
	store, err := logstore.Open(dir, logstore.Options{Sync: mode, Events: events})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := store.Close(); err != nil {
			b.Errorf("closing the store: %v", err)
		}
	})
	return store, sc
}

// benchKfake starts franz-go's in-memory broker (no fsync) with the
// benchmark's topic, and returns its address.
func benchKfake(b *testing.B) string {
	b.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, benchTopic))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// kgoProduce sends b.N records of size bytes to benchTopic-0 at addr with
// producers idempotent kgo clients (acks=all, batches of up to 16 KiB,
// kgo's default linger), through logstore perf's wire engine, and
// reports the records per batch kgo made.
func kgoProduce(b *testing.B, addr string, size, producers int) {
	b.Helper()
	rep := &perf.ProduceReport{}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	err := perf.ProduceWire(context.Background(), perf.WireProduceConfig{
		Bootstrap: []string{addr}, Topic: benchTopic, Partitions: 1,
		Records: int64(b.N), RecordSize: size, Producers: producers,
		BatchBytes: benchBatchBytes, Linger: 10 * time.Millisecond, Acks: -1,
	}, rep)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Batches > 0 {
		b.ReportMetric(float64(rep.Records)/float64(rep.Batches), "records/batch")
	}
}

// BenchmarkProduce: the same workload (b.N records of value bytes each,
// 16 KiB batches, 1 or 8 idempotent producers, each batch acknowledged
// once durable under the store's sync mode) sent three ways:
//   - wire: kgo clients to kafkaserver over loopback TCP;
//   - append: perf's in-process producers calling Partition.Append with
//     batches they build of the same size (the ceiling);
//   - kfake: the same kgo clients to franz-go's in-memory kfake (no
//     fsync: compare it with sync=never).
func BenchmarkProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, producers := range []int{1, 8} {
			for _, s := range benchSyncs {
				name := fmt.Sprintf("value=%dB/producers=%d/sync=%s", size, producers, s.name)
				b.Run("wire/"+name, func(b *testing.B) {
					store, sc := benchStore(b, b.TempDir(), s.mode)
					kgoProduce(b, benchServe(b, store), size, producers)
					sc.report(b)
				})
				b.Run("append/"+name, func(b *testing.B) {
					store, sc := benchStore(b, b.TempDir(), s.mode)
					p, err := store.Partition(benchTopic, 0)
					if err != nil {
						b.Fatal(err)
					}
					rep := &perf.ProduceReport{}
					cfg := perf.ProduceConfig{Records: int64(b.N), RecordSize: size, Producers: producers,
						PerBatch: perf.RecordsPerBatch(size, benchBatchBytes), Codec: recordbatch.CodecNone}
					b.SetBytes(int64(size))
					b.ReportAllocs()
					b.ResetTimer()
					err = perf.Produce(context.Background(), p, cfg, rep)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(cfg.PerBatch), "records/batch")
					sc.report(b)
				})
				b.Run("appendraw/"+name, func(b *testing.B) {
					store, sc := benchStore(b, b.TempDir(), s.mode)
					p, err := store.Partition(benchTopic, 0)
					if err != nil {
						b.Fatal(err)
					}
					appendRaw(b, p, size, producers)
					sc.report(b)
				})
			}
			b.Run(fmt.Sprintf("kfake/value=%dB/producers=%d", size, producers), func(b *testing.B) {
				kgoProduce(b, benchKfake(b), size, producers)
			})
		}
	}
}

const fetchValue = 1024 // bytes of each value in BenchmarkFetch's partition

// appendRaw appends b.N records of size bytes to p from producers
// goroutines, each an idempotent producer appending copies of one
// pre-encoded 16 KiB batch restamped with its next sequence: the store's
// append path alone, no batch building.
func appendRaw(b *testing.B, p *logstore.Partition, size, producers int) {
	b.Helper()
	perBatch := perf.RecordsPerBatch(size, benchBatchBytes)
	value := make([]byte, size)
	var claimed atomic.Int64
	errs := make([]error, producers)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range producers {
		bld := recordbatch.NewBuilder(0)
		bld.ProducerID, bld.ProducerEpoch = int64(i), 0
		for range perBatch {
			if err := bld.Append(time.Now().UnixMilli(), nil, value, nil); err != nil {
				b.Fatal(err)
			}
		}
		tmpl, err := bld.AppendTo(nil)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			buf := make([]byte, len(tmpl))
			seq := int32(0)
			for {
				first := claimed.Add(perBatch) - perBatch
				if first >= int64(b.N) {
					return
				}
				batch := tmpl
				if n := min(perBatch, int64(b.N)-first); n < perBatch {
					// The last batch: only what is left.
					bld.Reset(0)
					bld.ProducerID, bld.ProducerEpoch = int64(i), 0
					for range n {
						if errs[i] = bld.Append(time.Now().UnixMilli(), nil, value, nil); errs[i] != nil {
							return
						}
					}
					if batch, errs[i] = bld.AppendTo(nil); errs[i] != nil {
						return
					}
					buf = make([]byte, len(batch))
				}
				copy(buf, batch)
				binary.BigEndian.PutUint32(buf[53:], uint32(seq)) // base sequence
				binary.BigEndian.PutUint32(buf[17:], recordbatch.Checksum(buf[21:]))
				res, err := p.Append(buf)
				if err == nil && res.Duplicate {
					err = fmt.Errorf("producer %d, sequence %d: answered DUPLICATE", i, seq)
				}
				if err != nil {
					errs[i] = err
					return
				}
				seq = recordbatch.IncrementSequence(seq, int32(recordbatch.Batch(buf).NumRecords()))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(perBatch), "records/batch")
}

// fetchFixture writes, in a new store in dir, a partition of
// -fetch-mib MiB of 1 KiB values in 16 KiB batches (in the page cache
// after), and returns its records, batch bytes and segment files.
func fetchFixture(b *testing.B, dir string) (records, bytes int64, logs []string) {
	b.Helper()
	store, err := logstore.Open(dir, logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	p, err := store.Partition(benchTopic, 0)
	if err == nil {
		records = int64(*benchFetchMiB) << 20 / fetchValue
		rep := &perf.ProduceReport{}
		err = perf.Produce(context.Background(), p, perf.ProduceConfig{Records: records, RecordSize: fetchValue, Producers: 1,
			PerBatch: perf.RecordsPerBatch(fetchValue, benchBatchBytes)}, rep)
		bytes = rep.BatchBytes
	}
	if err := errors.Join(err, store.Close()); err != nil {
		b.Fatal(err)
	}
	if logs, err = filepath.Glob(filepath.Join(dir, benchTopic+"-0", "*.log")); err != nil || len(logs) == 0 {
		b.Fatalf("the partition's segment files: %v (%d found)", err, len(logs))
	}
	return records, bytes, logs
}

// fetchTimes adds up, from kgo's side, the fetches it read of at least
// 512 KiB: how long each took from the request written to the response
// read whole (the server's work and the transfer), and their count.
type fetchTimes struct {
	mu   sync.Mutex
	n    int
	read time.Duration
}

func (t *fetchTimes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 1 || e.Err() != nil || e.BytesRead < 512<<10 {
		return
	}
	t.mu.Lock()
	t.n++
	t.read += e.ReadWait + e.TimeToRead
	t.mu.Unlock()
}

// report adds the mean time of a large fetch (ms/fetch) and how many
// there were per op.
func (t *fetchTimes) report(b *testing.B) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n > 0 {
		b.ReportMetric(float64(t.read)/float64(t.n)/1e6, "ms/fetch")
		b.ReportMetric(float64(t.n)/float64(b.N), "fetches/op")
	}
}

// kgoConsume reads benchTopic-0 at addr from its start to its end with
// one kgo consumer, b.N times, through logstore perf's wire engine.
func kgoConsume(b *testing.B, addr string, want int64) {
	b.Helper()
	times := &fetchTimes{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rep := &perf.ConsumeReport{}
		err := perf.ConsumeWire(context.Background(), perf.WireConsumeConfig{
			Bootstrap: []string{addr}, Topic: benchTopic, From: -1, FetchMaxBytes: 1 << 20, Timeout: time.Minute,
			Opts: []kgo.Opt{kgo.WithHooks(times)},
		}, rep)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Records != want {
			b.Fatalf("read %d records, want %d", rep.Records, want)
		}
	}
	b.StopTimer()
	times.report(b)
}

// BenchmarkFetch reads the same partition (-fetch-mib MiB of 1 KiB
// values, 16 KiB batches) three ways, a whole pass per op:
//   - wire: a kgo consumer from kafkaserver, the store's segments in the
//     page cache;
//   - kfake: the same consumer from kfake holding the same records;
//   - tcpcopy: the segment files' bytes copied over a loopback TCP
//     connection (io.Copy, the kernel's sendfile) to a reader that
//     reads them 1 MiB at a time and drops them: the ceiling.
//
// MB/s counts the partition's batch bytes.
func BenchmarkFetch(b *testing.B) {
	// The parent runs once; its sub-benchmarks share what it sets up.
	dir := b.TempDir()
	records, size, logs := fetchFixture(b, dir)
	b.Run("wire", func(b *testing.B) {
		store, _ := benchStore(b, dir, logstore.SyncNever)
		addr := benchServe(b, store)
		b.SetBytes(size)
		kgoConsume(b, addr, records)
	})
	// kfake is filled on the first run of its sub-benchmark only, and
	// kept for the next (it lives as long as the parent).
	parent, kfakeAddr := b, ""
	b.Run("kfake", func(b *testing.B) {
		if kfakeAddr == "" {
			addr := benchKfake(parent)
			if err := perf.ProduceWire(context.Background(), perf.WireProduceConfig{
				Bootstrap: []string{addr}, Topic: benchTopic, Partitions: 1, Records: records, RecordSize: fetchValue,
				Producers: 1, BatchBytes: benchBatchBytes, Linger: 10 * time.Millisecond, Acks: -1,
			}, &perf.ProduceReport{}); err != nil {
				b.Fatal(err)
			}
			kfakeAddr = addr
		}
		b.SetBytes(size)
		kgoConsume(b, kfakeAddr, records)
	})
	b.Run("tcpcopy", func(b *testing.B) {
		addr, sent := testutil.ServeFiles(b, logs)
		buf := make([]byte, 1<<20) // kgo, too, reads a whole 1 MiB response at once
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			n, err := testutil.ReadAll(c, buf)
			c.Close()
			if err := errors.Join(err, <-sent); err != nil {
				b.Fatal(err)
			}
			if n < size {
				b.Fatalf("copied %d bytes, the partition holds %d", n, size)
			}
		}
	})
}
