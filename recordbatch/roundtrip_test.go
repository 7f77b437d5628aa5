package recordbatch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

// TestRoundTrip builds batches for every codec and every combination of
// null key, null value, headers (none, or with a null value) and value
// size (small, or 300 KiB), then parses, validates and decodes them and
// expects every field back.
func TestRoundTrip(t *testing.T) {
	large := bytes.Repeat([]byte("0123456789abcdef-"), 300<<10/17)
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		for combo := range 16 {
			nullKey, nullValue, withHeaders, big := combo&1 != 0, combo&2 != 0, combo&4 != 0, combo&8 != 0
			name := fmt.Sprintf("%v/nullKey=%t/nullValue=%t/headers=%t/large=%t", c, nullKey, nullValue, withHeaders, big)
			t.Run(name, func(t *testing.T) {
				key, value := []byte("key"), []byte("value")
				if big {
					value = large
				}
				if nullKey {
					key = nil
				}
				if nullValue {
					value = nil
				}
				var headers []recordbatch.RecordHeader
				if withHeaders {
					headers = []recordbatch.RecordHeader{{Key: []byte("trace"), Value: []byte("t1")}, {Key: []byte("empty"), Value: []byte{}}, {Key: []byte("null")}}
				}
				bl := recordbatch.NewBuilder(1 << 40)
				bl.Compression = c
				bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = 12, 3, 40
				bl.PartitionLeaderEpoch = 9
				for i := range 4 {
					if err := bl.Append(1700000000000+int64(10*i), key, value, headers); err != nil {
						t.Fatal(err)
					}
				}
				raw, err := bl.AppendTo(nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := recordbatch.Parse(raw, 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := b.ValidateClient(); err != nil {
					t.Fatal(err)
				}
				if b.Attributes().Codec() != c || b.NumRecords() != 4 || b.LastOffset() != 1<<40+3 || b.LastSequence() != 43 ||
					b.BaseTimestamp() != 1700000000000 || b.MaxTimestamp() != 1700000000030 || b.PartitionLeaderEpoch() != 9 {
					t.Fatalf("header: %+v", b.Header())
				}
				recs, err := b.DecodeRecords(1 << 30)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 4 {
					t.Fatalf("%d records", len(recs))
				}
				for i, r := range recs {
					if r.Offset != 1<<40+int64(i) || r.Timestamp != 1700000000000+int64(10*i) || r.Sequence != 40+int32(i) ||
						!sameBytes(r.Key, key) || !sameBytes(r.Value, value) || len(r.Headers) != len(headers) {
						t.Fatalf("record %d: offset %d ts %d seq %d key %q value len %d headers %d", i, r.Offset, r.Timestamp, r.Sequence, r.Key, len(r.Value), len(r.Headers))
					}
					for j, h := range headers {
						if !bytes.Equal(r.Headers[j].Key, h.Key) || !sameBytes(r.Headers[j].Value, h.Value) {
							t.Fatalf("record %d header %d: %+v, want %+v", i, j, r.Headers[j], h)
						}
					}
				}
			})
		}
	}
}

// TestEmptyBatch: a batch with recordsCount 0 yields no records and no
// error, whatever bytes follow its header, as Kafka's iterator does.
func TestEmptyBatch(t *testing.T) {
	for _, c := range []recordbatch.Codec{recordbatch.CodecNone, recordbatch.CodecGzip} {
		h := recordbatch.Header{Attributes: recordbatch.MakeAttributes(c, recordbatch.CreateTime, false, false, false), ProducerID: 5, BaseSequence: 7, LastOffsetDelta: 3}
		b, err := recordbatch.Parse(recordbatch.AppendBatch(nil, h, []byte("junk that is no record")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		recs, err := b.DecodeRecords(0)
		if err != nil || len(recs) != 0 {
			t.Fatalf("%v: %d records, %v", c, len(recs), err)
		}
		if b.LastSequence() != 10 {
			t.Fatalf("%v: last sequence %d, want 10 (from lastOffsetDelta)", c, b.LastSequence())
		}
	}
}
