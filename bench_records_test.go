package logstore_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// codecBatch builds an idempotent batch of producer pid, compressed with
// c: 16 records of about 1000 bytes of text (words drawn from a small
// vocabulary, so it compresses about as logs do), 16 KiB of records.
func codecBatch(tb testing.TB, c recordbatch.Codec, pid int64) (batch []byte, recordBytes int) {
	tb.Helper()
	words := strings.Fields("the quick brown fox jumps over lazy dog log store batch record offset producer sequence epoch " +
		"segment index append read check error value key header timestamp partition topic kafka")
	rng := rand.New(rand.NewPCG(1, 2))
	bl := recordbatch.NewBuilder(0)
	bl.Compression = c
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = pid, 0, 0
	for range 16 {
		var v strings.Builder
		for v.Len() < 1000 {
			v.WriteString(words[rng.IntN(len(words))])
			v.WriteByte(' ')
		}
		recordBytes += v.Len()
		if err := bl.Append(recent, []byte("key"), []byte(v.String()), nil); err != nil {
			tb.Fatal(err)
		}
	}
	out, err := bl.AppendTo(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return out, recordBytes
}

// BenchmarkAppendCodec is BenchmarkAppend (sync=never) with batches of
// 16 KiB of records compressed with each codec: the cost of the checks
// that inflate a compressed batch before it is written. MB/s counts the
// records' bytes before compression, so codecs compare on the same work.
func BenchmarkAppendCodec(b *testing.B) {
	for _, c := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecLZ4, recordbatch.CodecZstd, recordbatch.CodecGzip} {
		b.Run(fmt.Sprintf("codec=%s", c), func(b *testing.B) {
			s := openStore(b, b.TempDir(), logstore.Options{Sync: logstore.SyncNever})
			defer s.Close()
			p := openPartition(b, s, "bench", 0)
			tmpl, recordBytes := codecBatch(b, c, 1)
			appendCopies(b, p, tmpl, int64(recordBytes))
			b.ReportMetric(float64(len(tmpl)), "batch-bytes")
		})
	}
}
