package logstore_test

import (
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// timedBatch is a batch without producer of one record per timestamp,
// compressed with codec; a LogAppendTime batch when appendTime >= 0.
func timedBatch(t *testing.T, codec recordbatch.Codec, appendTime int64, timestamps ...int64) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	b.Compression = codec
	if appendTime >= 0 {
		b.TimestampType, b.LogAppendTime = recordbatch.LogAppendTime, appendTime
	}
	for _, ts := range timestamps {
		if err := b.Append(ts, nil, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMaxTimestampRecord: MaxTimestamp names the record that has the
// largest timestamp, the first of equals, as Kafka 3.8+ answers
// ListOffsets MAX_TIMESTAMP (KAFKA-16310), not the last offset of its
// batch: in the earliest batch with the largest max timestamp, the first
// record with that timestamp, compressed or not; in a LogAppendTime
// batch, its first record.
func TestMaxTimestampRecord(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]int64 // record timestamps per batch; a leading -2 marks LogAppendTime 9000
		ts, off int64
	}{
		{"inside a batch", [][]int64{{1000, 5000, 5000, 2000}}, 5000, 1},
		{"earliest batch of equals", [][]int64{{1000, 2000}, {3000, 7000, 1}, {7000, 7000}}, 7000, 3},
		{"later batch larger", [][]int64{{7000}, {1, 8000, 8000}}, 8000, 2},
		{"log append time", [][]int64{{1000}, {-2, 100, 200, 300}}, 9000, 1},
	}
	for _, codec := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecZstd} {
		for _, c := range cases {
			s := openStore(t, t.TempDir(), logstore.Options{})
			p := openPartition(t, s, "t", 0)
			for _, stamps := range c.batches {
				appendTime := int64(-1)
				if stamps[0] == -2 {
					appendTime, stamps = 9000, stamps[1:]
				}
				if _, err := p.AppendWritten(timedBatch(t, codec, appendTime, stamps...)); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			if ts, off, err := p.MaxTimestamp(); err != nil || ts != c.ts || off != c.off {
				t.Errorf("%s, %s: MaxTimestamp %d at offset %d, %v; want %d at %d", c.name, codec, ts, off, err, c.ts, c.off)
			}
		}
	}
}
