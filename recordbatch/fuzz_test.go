package recordbatch_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

const fuzzLimit = 1 << 20 // decompression limit in the fuzz targets

// fuzzAllocBound is what decoding data may allocate: a few times the
// input, twice the decompression limit, and the LZ4 reader's block
// buffers, which an LZ4 frame may ask for up to 4 MiB (its largest block
// size; franz-go writes such frames). Anything sized by a length or count
// the input claims would blow far past it.
func fuzzAllocBound(data []byte) uint64 { return uint64(8*len(data)) + 2*fuzzLimit + 9<<20 }

// fuzzSeeds returns whole batches to start the fuzzers from: every batch
// of the shared Kafka and franz-go segments (when shared/ is there), of
// the repository's golden segments, and batches built here for every codec.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	add := func(data []byte) {
		for pos := 0; pos < len(data); {
			b, err := recordbatch.Parse(data[pos:], 0)
			if err != nil {
				return
			}
			seeds = append(seeds, bytes.Clone(b))
			pos += b.Size()
		}
	}
	var globs []string
	if dir, ok := testutil.SharedDirIfPresent(); ok {
		globs = append(globs,
			filepath.Join(dir, "testdata", "kafka-golden", "*", "*.log"),
			filepath.Join(dir, "testdata", "franz-go", "*", "*.log"))
	}
	globs = append(globs, filepath.Join(testutil.RepoDir(t), "testdata", "segments", "*", "*.log"))
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			if data, err := os.ReadFile(f); err == nil {
				add(data)
			}
		}
	}
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		b := recordbatch.NewBuilder(5)
		b.Compression = c
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = 3, 1, 2147483646
		_ = b.Append(1700000000000, []byte("key"), []byte("value"), []recordbatch.RecordHeader{{Key: []byte("h"), Value: []byte("x")}, {Key: []byte("n")}})
		_ = b.Append(1700000000001, nil, nil, nil)
		_ = b.Append(1700000000002, []byte{}, bytes.Repeat([]byte("abc"), 100), nil)
		raw, err := b.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		add(raw)
	}
	return seeds
}

// checkAllocated fails when f allocates more than max bytes: what a
// decoder allocates must be bounded by its input and limit, never by a
// length or count the input claims.
func checkAllocated(t *testing.T, max uint64, f func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > max {
		t.Fatalf("allocated %d bytes, bound %d", grew, max)
	}
}

// decodeAll returns copies of the records of b, or an error that must be
// a corruption.
func decodeAll(t *testing.T, b recordbatch.Batch) ([]recordbatch.Record, error) {
	recs, err := b.DecodeRecords(fuzzLimit)
	if err != nil && !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("error that is not a corruption: %v", err)
	}
	return recs, err
}

// rebuildFrom encodes recs again under b's header fields, with codec.
func rebuildFrom(b recordbatch.Batch, codec recordbatch.Codec, recs []recordbatch.Record) ([]byte, error) {
	bl := recordbatch.NewBuilder(b.BaseOffset())
	a := b.Attributes()
	bl.Compression = codec
	bl.PartitionLeaderEpoch = b.PartitionLeaderEpoch()
	bl.Transactional, bl.Control = a.Transactional(), a.Control()
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	for _, r := range recs {
		if err := bl.AppendWithOffset(r.Offset, b.BaseTimestamp()+r.TimestampDelta, r.Key, r.Value, r.Headers); err != nil {
			return nil, err
		}
	}
	return bl.AppendTo(nil)
}

// sameRecords compares records decoded from a rebuilt CreateTime batch
// with the originals, whose batch had wantBase as base timestamp. The
// record attributes byte is not compared (Kafka, and so Builder, always
// writes 0), nor the timestamp delta (Builder takes the first record's
// timestamp as the base, as Kafka does): the absolute timestamp is.
func sameRecords(t *testing.T, got, want []recordbatch.Record, wantBase int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Timestamp != wantBase+w.TimestampDelta || !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		for j := range w.Headers {
			if !bytes.Equal(g.Headers[j].Key, w.Headers[j].Key) || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: got %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

// sameBytes tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// FuzzParseBatch: any bytes. Parse, Validate and record decoding never
// panic, return only corruption errors, never allocate past a bound set
// by the input and the decompression limit, and a batch that decodes
// encodes again to records that decode the same.
func FuzzParseBatch(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []recordbatch.Record
		var b recordbatch.Batch
		var err error
		checkAllocated(t, fuzzAllocBound(data), func() {
			b, err = recordbatch.Parse(data, 0)
			if err != nil {
				return
			}
			if err = b.Validate(); err != nil {
				return
			}
			recs, err = decodeAll(t, b)
		})
		if err != nil {
			if !errors.Is(err, recordbatch.ErrCorrupt) {
				t.Fatalf("error that is not a corruption: %v", err)
			}
			return
		}
		if len(b) > len(data) || b.Size() != len(b) {
			t.Fatalf("batch of %d bytes from %d bytes of input", len(b), len(data))
		}
		again, err := rebuildFrom(b, recordbatch.CodecNone, recs)
		if err != nil {
			return // offsets out of order or the like: valid to read, not to build
		}
		rb, err := recordbatch.Parse(again, 0)
		if err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		if err := rb.Validate(); err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		recs2, err := decodeAll(t, rb)
		if err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		sameRecords(t, recs2, recs, b.BaseTimestamp())
	})
}

// FuzzRecordReader wraps arbitrary bytes as the records section of a
// batch with a correct CRC, so the fuzzer reaches the record decoder (and,
// through the codec bits, the decompressors) without having to forge a
// CRC. A section that decodes must survive encode-decode unchanged, in
// every codec.
func FuzzRecordReader(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		b, _ := recordbatch.Parse(s, 0)
		f.Add(b.Records(), b.NumRecords(), uint8(b.Attributes()))
	}
	f.Fuzz(func(t *testing.T, records []byte, count int32, attrs uint8) {
		h := recordbatch.Header{
			Attributes:   recordbatch.Attributes(attrs & 0x0f), // codec and timestamp type
			NumRecords:   count,
			ProducerID:   -1,
			BaseSequence: -1,
		}
		raw := recordbatch.AppendBatch(nil, h, records)
		b, err := recordbatch.Parse(raw, 0)
		if err != nil {
			t.Fatalf("wrapped batch does not parse: %v", err)
		}
		if b.Validate() != nil {
			return // unknown codec or negative count
		}
		var recs []recordbatch.Record
		checkAllocated(t, fuzzAllocBound(records), func() {
			recs, err = decodeAll(t, b)
		})
		if err != nil {
			return
		}
		for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
			again, err := rebuildFrom(b, c, recs)
			if err != nil {
				return
			}
			rb, err := recordbatch.Parse(again, 0)
			if err != nil {
				t.Fatalf("rebuilt (%v): %v", c, err)
			}
			recs2, err := decodeAll(t, rb)
			if err != nil {
				t.Fatalf("rebuilt (%v): %v", c, err)
			}
			sameRecords(t, recs2, recs, b.BaseTimestamp())
		}
	})
}

// FuzzBuild: decode(encode(x)) == x for records built from arbitrary
// fields, in every codec, and every built batch passes ValidateClient.
func FuzzBuild(f *testing.F) {
	f.Add([]byte("k"), []byte("v"), []byte("h"), []byte("x"), uint8(0), int64(1700000000000), int32(0), uint8(0))
	f.Add([]byte{}, bytes.Repeat([]byte{0}, 1000), []byte{}, []byte{}, uint8(0x0f), int64(-1), int32(2147483646), uint8(4))
	f.Fuzz(func(t *testing.T, key, value, hkey, hval []byte, nulls uint8, ts int64, seq int32, codec uint8) {
		if nulls&1 != 0 {
			key = nil
		}
		if nulls&2 != 0 {
			value = nil
		}
		if nulls&4 != 0 {
			hval = nil
		}
		if hkey == nil {
			hkey = []byte{} // header keys are never null on the wire
		}
		headers := []recordbatch.RecordHeader{{Key: hkey, Value: hval}}
		if nulls&8 != 0 {
			headers = nil
		}
		bl := recordbatch.NewBuilder(1000)
		bl.Compression = recordbatch.Codec(codec % 5)
		if seq >= 0 {
			bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = 1, 0, seq
		}
		for i := range 3 {
			if err := bl.Append(ts, key, value, headers); err != nil {
				if ts < -1 {
					return // refused, as Kafka refuses it
				}
				t.Fatalf("record %d: %v", i, err)
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
		recs, err := b.DecodeRecords(0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if r.Offset != 1000+int64(i) || r.Timestamp != ts || !sameBytes(r.Key, key) || !sameBytes(r.Value, value) || len(r.Headers) != len(headers) {
				t.Fatalf("record %d: got %+v", i, r)
			}
			for j, h := range headers {
				if !bytes.Equal(r.Headers[j].Key, h.Key) || !sameBytes(r.Headers[j].Value, h.Value) {
					t.Fatalf("record %d header %d: got %+v, want %+v", i, j, r.Headers[j], h)
				}
			}
			if seq >= 0 && r.Sequence != recordbatch.IncrementSequence(seq, int32(i)) {
				t.Fatalf("record %d: sequence %d", i, r.Sequence)
			}
		}
	})
}
