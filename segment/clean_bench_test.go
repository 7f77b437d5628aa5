package segment_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// BenchmarkClean cleans a log of 64 MiB of dirty data (100-byte values,
// 20 records a batch, 10 000 keys: about 1 in 30 records survives) into
// fresh copies of it, one per iteration: MB/s is of the log read (the
// map's pass and the rewrite's), allocations per pass.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecLZ4, recordbatch.CodecZstd} {
		b.Run("codec="+codec.String(), func(b *testing.B) {
			src := filepath.Join(b.TempDir(), "p-0")
			cfg := segment.Config{SegmentBytes: 16 << 20}
			l, _ := open(b, src, cfg)
			rng := rand.New(rand.NewPCG(1, 2))
			ts := int64(1700000000000)
			var size int64
			for size < 64<<20 {
				recs := make([]rec, 20)
				for i := range recs {
					recs[i] = rec{ts: ts, key: fmt.Appendf(nil, "key-%05d", rng.IntN(10000)), value: fmt.Appendf(nil, "%0100d", rng.Int64())}
				}
				info, err := l.Append(keyedBatch(b, codec, -1, 0, recs))
				if err != nil {
					b.Fatal(err)
				}
				if info.Rolled {
					size += cfg.SegmentBytes
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			m, err := segment.NewOffsetMap(16 << 20)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var read, written int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "p-0")
				copyDir(b, src, dir)
				l, _ := open(b, dir, cfg)
				b.StartTimer()
				res, err := l.Clean(segment.CleanOptions{Map: m, Now: time.UnixMilli(ts)})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				read, written = res.BytesRead, res.BytesWritten
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.SetBytes(read)
			b.ReportMetric(float64(written)/float64(read), "kept/read")
		})
	}
}

func copyDir(b *testing.B, from, to string) {
	b.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		b.Fatal(err)
	}
	names, err := os.ReadDir(from)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(from, n.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n.Name()), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
