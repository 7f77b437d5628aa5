package kafkaserver

import (
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// codecBatch is a plain batch of values compressed with codec.
func codecBatch(t *testing.T, codec recordbatch.Codec, values ...string) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	b.Compression = codec
	for i, v := range values {
		if err := b.Append(1_700_000_000_000+int64(i), nil, []byte(v), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProduceZstdNeedsV7: a zstd batch in a Produce request below v7
// (Kafka 2.1, KIP-110) is refused with 76 UNSUPPORTED_COMPRESSION_TYPE
// and not written, as Kafka's ProduceRequest.validateRecords refuses it;
// at v7 it is taken, and the other codecs are taken at v3.
func TestProduceZstdNeedsV7(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("z", 1)
	c := ts.dial()
	for _, v := range []int16{3, 6} {
		got := producePart(t, c, v, -1, "z", 0, codecBatch(t, recordbatch.CodecZstd, "a", "b"))
		wantStart := int64(0)
		if v < 5 {
			wantStart = -1 // LogStartOffset is in the answer from v5
		}
		if got.ErrorCode != errUnsupportedCompression || got.BaseOffset != -1 || got.LogStartOffset != wantStart {
			t.Errorf("zstd at Produce v%d: code %d base %d log start %d; want %d, -1, %d",
				v, got.ErrorCode, got.BaseOffset, got.LogStartOffset, errUnsupportedCompression, wantStart)
		}
	}
	if got := producePart(t, c, 3, -1, "z", 0, codecBatch(t, recordbatch.CodecGzip, "c")); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Errorf("gzip at Produce v3: code %d base %d; want 0, 0", got.ErrorCode, got.BaseOffset)
	}
	if got := producePart(t, c, 7, -1, "z", 0, codecBatch(t, recordbatch.CodecZstd, "d", "e")); got.ErrorCode != 0 || got.BaseOffset != 1 {
		t.Errorf("zstd at Produce v7: code %d base %d; want 0, 1", got.ErrorCode, got.BaseOffset)
	}
	p, err := ts.store.Partition("z", 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.EndOffset(); end != 3 {
		t.Fatalf("log end %d, want 3 (c, d, e): a refused zstd batch was written", end)
	}
}
