package recordbatch_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// zz appends v as a zig-zag varint, as Kafka writes record fields.
func zz(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// rawRecord encodes one record by hand: attributes 0, timestamp delta 0,
// the given offset delta, key "k", value "v", and headers given as
// already-encoded bytes (count first).
func rawRecord(offsetDelta int64, headers []byte) []byte {
	body := []byte{0}
	body = zz(body, 0)
	body = zz(body, offsetDelta)
	body = zz(body, 1)
	body = append(body, 'k')
	body = zz(body, 1)
	body = append(body, 'v')
	if headers == nil {
		headers = zz(nil, 0)
	}
	body = append(body, headers...)
	return append(zz(nil, int64(len(body))), body...)
}

// rawBatch wraps a records section (already compressed for codec) in a
// valid header: CRC right, lastOffsetDelta = count-1, so that
// ValidateClient passes and only the records are wrong.
func rawBatch(codec recordbatch.Codec, count int32, records []byte) recordbatch.Batch {
	h := recordbatch.Header{
		Attributes:      recordbatch.Attributes(codec),
		LastOffsetDelta: count - 1,
		BaseTimestamp:   1700000000000,
		MaxTimestamp:    1700000000000,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		BaseSequence:    -1,
		NumRecords:      count,
	}
	return recordbatch.Batch(recordbatch.AppendBatch(nil, h, records))
}

// gzipOf returns n zero bytes gzipped, written a block at a time so the
// test never holds them.
func gzipOf(t *testing.T, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<10)
	for left := n; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func zstdOf(t *testing.T, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<10)
	for left := n; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// UndecodableBatch is one batch whose header passes ValidateClient but
// whose records no reader can decode, with what the refusal must say.
type undecodableBatch struct {
	name     string
	batch    recordbatch.Batch
	sentinel error
	want     []string // in the message
}

// undecodableBatches are the poison batches of issue 11: each has a valid
// CRC and header.
func undecodableBatches(t *testing.T, bombLimit int) []undecodableBatch {
	two := append(rawRecord(0, nil), rawRecord(1, nil)...)
	bomb := 4 * bombLimit
	return []undecodableBatch{
		{"record length 2^31-1", rawBatch(0, 1, append(zz(nil, math.MaxInt32), 0, 0, 0)),
			recordbatch.ErrRecord, []string{"record 0 at byte 61 of the batch", "Invalid record size"}},
		{"record count 2^31-1", rawBatch(0, math.MaxInt32, two),
			recordbatch.ErrRecord, []string{"record 2 at byte 79 of the batch", "the header claims 2147483647 records, the records section holds 2", "premature EOF"}},
		{"header count 2^31-1", rawBatch(0, 1, rawRecord(0, zz(nil, math.MaxInt32))),
			recordbatch.ErrRecord, []string{"record 0 at byte 61 of the batch", "invalid number of record headers 2147483647"}},
		{"null header key", rawBatch(0, 1, rawRecord(0, append(zz(zz(nil, 1), -1), zz(nil, -1)...))),
			recordbatch.ErrRecord, []string{"record 0 at byte 61 of the batch", "negative header key size -1"}},
		{"varint too long", rawBatch(0, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
			recordbatch.ErrRecord, []string{"record 0 at byte 61 of the batch", "Varint is too long"}},
		{"offset deltas out of order", rawBatch(0, 2, append(rawRecord(1, nil), rawRecord(0, nil)...)),
			recordbatch.ErrRecord, []string{"record 0 at byte 61 of the batch", "offset delta 1, want 0"}},
		{"offset delta repeated", rawBatch(0, 2, append(rawRecord(0, nil), rawRecord(0, nil)...)),
			recordbatch.ErrRecord, []string{"record 1 at byte 70 of the batch", "offset delta 0, want 1"}},
		{"trailing bytes", rawBatch(0, 2, append(two, 0, 0, 0)),
			recordbatch.ErrRecord, []string{"after the last record (record 1), at byte 79 of the batch", "records still remaining"}},
		{"gzip not gzip", rawBatch(recordbatch.CodecGzip, 1, []byte("this is not a gzip stream at all")),
			recordbatch.ErrDecompress, []string{"gzip"}},
		{"zstd not zstd", rawBatch(recordbatch.CodecZstd, 1, []byte("this is not a zstd stream at all")),
			recordbatch.ErrDecompress, []string{"zstd"}},
		{"gzip bomb", rawBatch(recordbatch.CodecGzip, 1, gzipOf(t, bomb)),
			recordbatch.ErrTooLarge, []string{"gzip: decompressed records exceed"}},
		{"zstd bomb", rawBatch(recordbatch.CodecZstd, 1, zstdOf(t, bomb)),
			recordbatch.ErrTooLarge, []string{"zstd: decompressed records exceed"}},
		{"gzip records past the count", rawBatch(recordbatch.CodecGzip, 1, mustCompress(t, recordbatch.CodecGzip, two)),
			recordbatch.ErrRecord, []string{"after the last record (record 0), at byte 9 of the decompressed records", "records still remaining"}},
	}
}

func mustCompress(t *testing.T, c recordbatch.Codec, src []byte) []byte {
	t.Helper()
	out, err := recordbatch.Compress(nil, c, src)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 11: a batch whose header is valid but whose records cannot be
// decoded is refused, with the record and its byte position.
func TestValidateClientRecordsRefuses(t *testing.T) {
	const limit = 1 << 20
	for _, c := range undecodableBatches(t, limit) {
		t.Run(c.name, func(t *testing.T) {
			if err := c.batch.ValidateClient(); err != nil {
				t.Fatalf("the header must be valid: %v", err)
			}
			for name, validate := range map[string]func(recordbatch.Batch, int) error{
				"client": recordbatch.ValidateClientRecords,
				"stored": recordbatch.ValidateRecords,
			} {
				err := validate(c.batch, limit)
				if strings.HasPrefix(c.name, "offset delta") && name == "stored" {
					// A stored batch's deltas need only increase: the
					// same batches fail, at the record that goes back.
					if !errors.Is(err, recordbatch.ErrRecord) || !strings.Contains(err.Error(), "record 1 at byte 70 of the batch: offset delta 0, want above") {
						t.Fatalf("stored: %v", err)
					}
					continue
				}
				if !errors.Is(err, c.sentinel) || !errors.Is(err, recordbatch.ErrCorrupt) {
					t.Fatalf("%s: got %v, want %v", name, err, c.sentinel)
				}
				var ce *recordbatch.CorruptionError
				if !errors.As(err, &ce) || ce.Section != "records" {
					t.Fatalf("%s: not a records CorruptionError: %#v", name, err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q does not say %q", name, err, w)
					}
				}
			}
		})
	}
}

func TestValidateRecordsOffsetDeltas(t *testing.T) {
	// Compaction leaves gaps: deltas 0, 2, 5 of a batch whose last
	// offset delta is 5, three records.
	gaps := append(append(rawRecord(0, nil), rawRecord(2, nil)...), rawRecord(5, nil)...)
	h := recordbatch.Header{LastOffsetDelta: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 3}
	compacted := recordbatch.Batch(recordbatch.AppendBatch(nil, h, gaps))
	if err := recordbatch.ValidateRecords(compacted, 0); err != nil {
		t.Fatalf("a compacted batch: %v", err)
	}
	if err := recordbatch.ValidateClientRecords(compacted, 0); !errors.Is(err, recordbatch.ErrRecord) || !strings.Contains(err.Error(), "record 1 at byte 70 of the batch: offset delta 2, want 1") {
		t.Fatalf("a producer's batch with gaps: %v", err)
	}
	h.LastOffsetDelta = 4
	past := recordbatch.Batch(recordbatch.AppendBatch(nil, h, gaps))
	if err := recordbatch.ValidateRecords(past, 0); !errors.Is(err, recordbatch.ErrRecord) || !strings.Contains(err.Error(), "record 2 at byte 79 of the batch: offset delta 5, want above 2 and at most the last offset delta 4") {
		t.Fatalf("a delta past the last: %v", err)
	}
	// An empty batch (compaction removed every record) reads as nothing.
	h.NumRecords = 0
	if err := recordbatch.ValidateRecords(recordbatch.Batch(recordbatch.AppendBatch(nil, h, []byte("junk"))), 0); err != nil {
		t.Fatalf("an empty batch: %v", err)
	}
}

// Every batch a real client or Kafka wrote, and every batch Builder
// makes, passes: the checks refuse nothing real.
func TestValidateRecordsAcceptsReal(t *testing.T) {
	for _, seed := range fuzzSeeds(t) {
		b := recordbatch.Batch(seed)
		if b.Validate() != nil {
			continue // the damaged golden files
		}
		if _, err := b.DecodeRecords(0); err != nil {
			continue // what no reader can decode either
		}
		if err := recordbatch.ValidateRecords(b, 0); err != nil {
			t.Errorf("batch of offsets %d..%d: %v", b.BaseOffset(), b.LastOffset(), err)
		}
		if b.ValidateClient() == nil && b.BaseOffset() == 0 {
			if err := recordbatch.ValidateClientRecords(b, 0); err != nil {
				t.Errorf("client batch: %v", err)
			}
		}
	}
	if dir, ok := testutil.SharedDirIfPresent(); ok {
		files, _ := filepath.Glob(filepath.Join(dir, "testdata", "kafka-real", "*", "*.log"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for pos := 0; pos < len(data); {
				b, err := recordbatch.Parse(data[pos:], 0)
				if err != nil {
					break
				}
				if b.Validate() == nil {
					if err := recordbatch.ValidateRecords(b, 0); err != nil {
						t.Errorf("%s at byte %d: %v", f, pos, err)
					}
				}
				pos += b.Size()
			}
		}
	}
}

// The validation of a batch allocates nothing once the pool is warm,
// compressed or not.
func TestValidateClientRecordsAllocs(t *testing.T) {
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		bl := recordbatch.NewBuilder(0)
		bl.Compression = c
		for i := range 50 {
			if err := bl.Append(1700000000000+int64(i), []byte("key"), bytes.Repeat([]byte("value "), 20), []recordbatch.RecordHeader{{Key: []byte("h"), Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := bl.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		b := recordbatch.Batch(raw)
		allocs := testing.AllocsPerRun(50, func() {
			if err := recordbatch.ValidateClientRecords(b, 0); err != nil {
				t.Fatal(err)
			}
		})
		// A GC may empty the pool during the run; on average next to nothing.
		if allocs > 1 {
			t.Errorf("%s: %.1f allocations per batch", c, allocs)
		}
	}
}

// FuzzValidateRecords wraps arbitrary bytes as the records section of a
// batch with a correct CRC and header, as FuzzRecordReader does, and
// checks the record walk: it never panics nor allocates by what the bytes
// claim; what it accepts, every reader decodes, with the record count
// the header gives; the client rule is the stored one plus offset deltas
// 0..n-1.
func FuzzValidateRecords(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		b, _ := recordbatch.Parse(s, 0)
		f.Add(b.Records(), b.NumRecords(), b.LastOffsetDelta(), uint8(b.Attributes()))
	}
	for _, c := range undecodableBatches(&testing.T{}, 1<<10) {
		f.Add(c.batch.Records(), c.batch.NumRecords(), c.batch.LastOffsetDelta(), uint8(c.batch.Attributes()))
	}
	f.Fuzz(func(t *testing.T, records []byte, count, lastDelta int32, attrs uint8) {
		h := recordbatch.Header{
			Attributes:      recordbatch.Attributes(attrs & 0x0f),
			NumRecords:      count,
			LastOffsetDelta: lastDelta,
			ProducerID:      -1,
			BaseSequence:    -1,
		}
		b := recordbatch.Batch(recordbatch.AppendBatch(nil, h, records))
		if b.Validate() != nil {
			return
		}
		var clientErr, storedErr error
		checkAllocated(t, fuzzAllocBound(records), func() {
			clientErr = recordbatch.ValidateClientRecords(b, fuzzLimit)
			storedErr = recordbatch.ValidateRecords(b, fuzzLimit)
		})
		for _, err := range []error{clientErr, storedErr} {
			var ce *recordbatch.CorruptionError
			if err != nil && (!errors.As(err, &ce) || !errors.Is(err, recordbatch.ErrCorrupt)) {
				t.Fatalf("not a CorruptionError: %#v", err)
			}
		}
		if clientErr == nil && storedErr != nil && count > 0 {
			t.Fatalf("the client rule accepts what the stored one refuses: %v", storedErr)
		}
		if storedErr != nil {
			return
		}
		recs, err := b.DecodeRecords(fuzzLimit)
		if err != nil {
			t.Fatalf("validated, but a reader fails: %v", err)
		}
		if len(recs) != int(count) {
			t.Fatalf("validated %d records, read %d", count, len(recs))
		}
		prev := int32(-1)
		for i, r := range recs {
			if r.OffsetDelta <= prev || r.OffsetDelta > lastDelta {
				t.Fatalf("record %d: offset delta %d after %d, last %d", i, r.OffsetDelta, prev, lastDelta)
			}
			if clientErr == nil && r.OffsetDelta != int32(i) {
				t.Fatalf("client rule: record %d has offset delta %d", i, r.OffsetDelta)
			}
			prev = r.OffsetDelta
		}
	})
}
