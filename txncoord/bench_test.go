package txncoord_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// BenchmarkTransaction is one transaction's coordinator work (AddPartitions
// of 3 partitions, EndTxn commit with markers that cost nothing) on a real
// transactions.db, with 1 and 8 producers at once: the one durable write
// is PrepareCommit (AddPartitions and CompleteCommit are lazy, carried
// by the next PrepareCommit), and concurrent producers share commits.
// It reports the commits per transaction.
func BenchmarkTransaction(b *testing.B) {
	for _, producers := range []int{1, 8} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			var commits atomic.Int64
			c, err := txncoord.Open(b.TempDir(), &fakeIDs{}, &fakeMarkers{}, txncoord.Config{
				CheckInterval: time.Hour, OnCommit: func(error) { commits.Add(1) }})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tps := []txncoord.TopicPartition{tpA0, tpA1, tpB0}
			type prod struct {
				id    string
				pid   int64
				epoch int16
			}
			prods := make([]prod, producers)
			for i := range prods {
				id := fmt.Sprintf("p%d", i)
				pid, epoch, err := c.InitProducerID(id, time.Minute, -1, -1)
				if err != nil {
					b.Fatal(err)
				}
				prods[i] = prod{id, pid, epoch}
			}
			commits.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			var next atomic.Int64
			for _, p := range prods {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := c.AddPartitions(p.id, p.pid, p.epoch, tps); err != nil {
							b.Error(err)
							return
						}
						if err := c.EndTxn(p.id, p.pid, p.epoch, true); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(commits.Load())/float64(b.N), "commits/txn")
		})
	}
}

// BenchmarkExpireIDs is the expiration scan over 10000 transactional
// ids on a real transactions.db: idle=none, a scan that expires nothing
// (its cost every CheckInterval); idle=all, a scan that expires every
// id (10000 tombstones, committed together). It reports the commits per
// scan.
func BenchmarkExpireIDs(b *testing.B) {
	const n = 10000
	for _, idle := range []string{"none", "all"} {
		b.Run("idle="+idle, func(b *testing.B) {
			var commits atomic.Int64
			scanCommits := int64(0)
			for range b.N {
				b.StopTimer()
				clock := testutil.NewClock(time.UnixMilli(1_700_000_000_000))
				c, err := txncoord.Open(b.TempDir(), &fakeIDs{}, &fakeMarkers{}, txncoord.Config{
					CheckInterval: time.Hour, Now: clock.Now, OnCommit: func(error) { commits.Add(1) }})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if _, _, err := c.InitProducerID(fmt.Sprintf("id-%05d", i), time.Minute, -1, -1); err != nil {
						b.Fatal(err)
					}
				}
				if idle == "all" {
					clock.Advance(txncoord.DefaultIDExpiration)
				}
				before := commits.Load()
				b.StartTimer()
				c.ExpireIDs()
				b.StopTimer()
				scanCommits += commits.Load() - before
				if want := map[string]int{"none": n, "all": 0}[idle]; len(c.List()) != want {
					b.Fatalf("%d ids left, want %d", len(c.List()), want)
				}
				c.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(scanCommits)/float64(b.N), "commits/scan")
		})
	}
}

// BenchmarkOpen is Open and Close of a coordinator over a
// transactions.db holding ids transactional ids (every Open replays the
// file and writes it anew), on a store of 100 partitions that each hold
// 100 idempotent batches, not yet open: after=clean, a file that ends
// with the close record (Open does not look at the partitions);
// after=crash, one that does not (Open lists every partition's open
// transactions, which opens each partition).
func BenchmarkOpen(b *testing.B) {
	const ids, partitions = 10000, 100
	dir := b.TempDir()
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for p := range int32(partitions) {
		part, err := st.Partition("t", p)
		if err != nil {
			b.Fatal(err)
		}
		for i := range int32(100) {
			if _, err := part.Append(testutil.ClientBatch(int64(p), 0, i, 1, time.Now().UnixMilli(), false)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := txncoord.Open(dir, &fakeIDs{next: 1 << 20}, &fakeMarkers{}, txncoord.Config{CheckInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	for i := range ids {
		if _, _, err := c.InitProducerID(fmt.Sprintf("id-%05d", i), time.Minute, -1, -1); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, txncoord.FileName)
	clean, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	crashed := clean[:len(clean)-txncoord.CloseRecordSize]
	for _, after := range []string{"clean", "crash"} {
		b.Run("after="+after, func(b *testing.B) {
			image := map[string][]byte{"clean": clean, "crash": crashed}[after]
			b.SetBytes(int64(len(image)))
			for range b.N {
				b.StopTimer()
				if err := os.WriteFile(path, image, 0o644); err != nil {
					b.Fatal(err)
				}
				st, err := logstore.Open(dir, logstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c, err := txncoord.Open(dir, &fakeIDs{next: 1 << 21}, txncoord.StoreMarkers(st), txncoord.Config{CheckInterval: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if n := len(st.OpenPartitions()); (after == "crash") != (n == partitions) {
					b.Fatalf("%d partitions opened after a %s stop", n, after)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
