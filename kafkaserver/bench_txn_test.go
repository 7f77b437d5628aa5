package kafkaserver_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
)

// Issue 14's performance figure (BENCHMARKS.md, "Issue 14:
// transactions"): transactional produce with kgo against idempotent
// produce of the same batches, under --sync always.

const (
	benchTxnValue   = 1050 // bytes of each record's value
	benchTxnBatches = 10   // batches per transaction
	// benchTxnPerBatch records of benchTxnValue bytes fill one 16 KiB
	// batch (each record is about 1060 bytes with its framing: 16
	// would not fit).
	benchTxnPerBatch = 15
	benchTxnRecords  = benchTxnBatches * benchTxnPerBatch // records per transaction
)

// benchTxnProduce sends b.N records (rounded up to whole transactions) of
// benchTxnValue bytes to benchTopic-0 at addr from producers kgo clients
// (acks=all, 16 KiB batches, kgo's linger 0 as a transactional client
// flushes each transaction anyway), in groups of benchTxnRecords records:
// with txn, each group is a transaction (BeginTransaction, the records,
// Flush, EndTransaction commit); without, the same clients are only
// idempotent and the groups follow each other without a flush. It
// reports groups/s; with txn also, per transaction, the time a producer waited
// in Flush (the last batches' answers) and in EndTransaction.
func benchTxnProduce(b *testing.B, addr string, producers int, txn bool) {
	b.Helper()
	groups := (int64(b.N) + benchTxnRecords - 1) / benchTxnRecords
	value := make([]byte, benchTxnValue)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	if err := kafkatest.CreateTopic(context.Background(), []string{addr}, benchTopic, 1, nil); err != nil {
		b.Fatal(err)
	}
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		opts := []kgo.Opt{
			kgo.SeedBrokers(addr),
			kgo.DefaultProduceTopic(benchTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchMaxBytes(benchBatchBytes),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.StopProducerOnDataLossDetected(),
		}
		if txn {
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", i)))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		clients[i] = cl
		// Warm up: metadata, the producer id, the coordinator.
		if txn {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if txn {
			if err := cl.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
		}
	}
	var (
		flushNs, endNs atomic.Int64 // txn: time in Flush and in EndTransaction
		claimed        atomic.Int64
		failed         atomic.Pointer[error]
		wg             sync.WaitGroup
	)
	fail := func(err error) { failed.CompareAndSwap(nil, &err) }
	b.SetBytes(benchTxnValue)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for _, cl := range clients {
		wg.Go(func() {
			ctx := context.Background()
			for claimed.Add(1) <= groups && failed.Load() == nil {
				if txn {
					if err := cl.BeginTransaction(); err != nil {
						fail(err)
						return
					}
				}
				for range benchTxnRecords {
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							fail(err)
						}
					})
				}
				if txn {
					t0 := time.Now()
					if err := cl.Flush(ctx); err != nil {
						fail(err)
						return
					}
					t1 := time.Now()
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						fail(err)
						return
					}
					flushNs.Add(int64(t1.Sub(t0)))
					endNs.Add(int64(time.Since(t1)))
				}
			}
			if err := cl.Flush(ctx); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if errp := failed.Load(); errp != nil {
		b.Fatal(*errp)
	}
	b.ReportMetric(float64(groups)/elapsed.Seconds(), "groups/s")
	if txn {
		// Per transaction, summed over the producers: the wait for the
		// last batches' answers, and the EndTxn round trip.
		b.ReportMetric(float64(flushNs.Load())/float64(groups)/1e6, "ms-flush/txn")
		b.ReportMetric(float64(endNs.Load())/float64(groups)/1e6, "ms-endtxn/txn")
	}
}

// BenchmarkTxnProduce: kgo clients producing groups of 10 batches (150
// records of 1050 bytes, 16 KiB batches) to one partition of a store
// under sync=always, 1 or 8 producers: txn, each group a transaction;
// idem, the same records from idempotent producers. fsyncs/group counts
// the store's segment fsyncs (group commits, markers included); the
// coordinator's own (transactions.db) are not among them.
func BenchmarkTxnProduce(b *testing.B) {
	for _, producers := range []int{1, 8} {
		for _, mode := range []string{"txn", "idem"} {
			b.Run(fmt.Sprintf("%s/producers=%d", mode, producers), func(b *testing.B) {
				store, sc := benchStore(b, b.TempDir(), logstore.SyncAlways)
				benchTxnProduce(b, benchServe(b, store), producers, mode == "txn")
				sc.report(b)
				groups := (float64(b.N) + benchTxnRecords - 1) / benchTxnRecords
				b.ReportMetric(float64(sc.fsyncs.Load())/groups, "fsyncs/group")
				b.ReportMetric(float64(sc.batches.Load())/groups, "batches/group")
			})
		}
	}
}
