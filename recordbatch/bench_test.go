package recordbatch_test

import (
	"fmt"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// benchRecords returns n realistic records: a 16-byte key, a JSON-ish
// value of about 135 bytes and one header.
func benchRecords(n int) (keys, values [][]byte, headers []recordbatch.RecordHeader) {
	for i := range n {
		keys = append(keys, fmt.Appendf(nil, "user-%011d", i))
		values = append(values, fmt.Appendf(nil, `{"id":%d,"event":"page_view","path":"/products/%d","ts":%d,"session":"s-%08x","ua":"Mozilla/5.0 (X11; Linux x86_64)"}`, i, i*7, 1700000000000+i, i*2654435761))
	}
	headers = []recordbatch.RecordHeader{{Key: []byte("trace-id"), Value: []byte("4bf92f3577b34da6")}}
	return keys, values, headers
}

func benchBatch(b *testing.B, codec recordbatch.Codec, n int) []byte {
	keys, values, headers := benchRecords(n)
	bl := recordbatch.NewBuilder(0)
	bl.Compression = codec
	for i := range n {
		if err := bl.Append(1700000000000+int64(i), keys[i], values[i], headers); err != nil {
			b.Fatal(err)
		}
	}
	raw, err := bl.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkParseValidate: header parse and CRC-32C check, which every
// append and every recovery scan pays per batch.
func BenchmarkParseValidate(b *testing.B) {
	for _, n := range []int{5, 100, 6000} {
		raw := benchBatch(b, recordbatch.CodecNone, n)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				batch, err := recordbatch.Parse(raw, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := batch.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIterate: decoding every record of a 100-record batch with a
// reused RecordReader, per codec (decompression included). Bytes are the
// uncompressed batch size, so codecs compare on the same work.
func BenchmarkIterate(b *testing.B) {
	size := len(benchBatch(b, recordbatch.CodecNone, 100))
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		raw := benchBatch(b, c, 100)
		batch, err := recordbatch.Parse(raw, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("codec="+c.String(), func(b *testing.B) {
			var r recordbatch.RecordReader
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Reset(batch, 0); err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuild: building a 100-record batch into a reused buffer, per
// codec. Bytes are the uncompressed batch size.
func BenchmarkBuild(b *testing.B) {
	keys, values, headers := benchRecords(100)
	size := len(benchBatch(b, recordbatch.CodecNone, 100))
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		b.Run("codec="+c.String(), func(b *testing.B) {
			bl := recordbatch.NewBuilder(0)
			var dst []byte
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				bl.Reset(0)
				bl.Compression = c
				for i := range keys {
					if err := bl.Append(1700000000000+int64(i), keys[i], values[i], headers); err != nil {
						b.Fatal(err)
					}
				}
				var err error
				if dst, err = bl.AppendTo(dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
