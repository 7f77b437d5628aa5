package groupcoord

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
)

// BenchmarkOffsetCommit: OffsetCommits of 6 partitions each by
// simple consumers, 1 and 8 at a time, each answered once durable in
// groups.db (a real append and fdatasync on the test's directory);
// concurrent commits share fsyncs through the committer.
func BenchmarkOffsetCommit(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("committers=%d", conc), func(b *testing.B) {
			c, err := Open(b.TempDir(), Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var commits int
			var mu sync.Mutex
			c.com.onCommit = func(int, error) { mu.Lock(); commits++; mu.Unlock() }
			offs := func(o int64) []OffsetCommit {
				out := make([]OffsetCommit, 6)
				for p := range out {
					out[p] = OffsetCommit{TopicPartition: TopicPartition{"topic", int32(p)}, Offset: o, Metadata: "m"}
				}
				return out
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + conc - 1) / conc
			for g := range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					done := make(chan []Code, 1)
					for i := range per {
						c.Commit(CommitRequest{Group: fmt.Sprintf("g%d", g), Generation: -1, Offsets: offs(int64(i))}, func(cs []Code) { done <- cs })
						if cs := <-done; cs[0] != None {
							b.Error(cs)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*conc)/b.Elapsed().Seconds(), "commits/s")
			mu.Lock()
			b.ReportMetric(float64(per*conc)/float64(max(commits, 1)), "commits/fsync")
			mu.Unlock()
		})
	}
}

// BenchmarkOpen: Open and Close of a groups.db holding 1,000 groups of
// 10 committed offsets each (a replay and a rewrite of the file).
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	cfg := Config{Logger: slog.New(slog.DiscardHandler)}
	c, err := Open(dir, cfg)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan []Code, 1000)
	for g := range 1000 {
		offs := make([]OffsetCommit, 10)
		for p := range offs {
			offs[p] = OffsetCommit{TopicPartition: TopicPartition{"topic", int32(p)}, Offset: int64(g), Metadata: "m"}
		}
		c.Commit(CommitRequest{Group: fmt.Sprintf("group-%d", g), Generation: -1, Offsets: offs}, func(cs []Code) { done <- cs })
	}
	for range 1000 {
		if cs := <-done; cs[0] != None {
			b.Fatal(cs)
		}
	}
	c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c, err := Open(dir, cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
