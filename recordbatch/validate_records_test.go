package recordbatch_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// Issue 11: a batch whose header is valid but whose records cannot be
// decoded is refused, with the record and its byte position.
func TestValidateClientRecordsRefuses(t *testing.T) {
	const limit = 1 << 20
	for _, c := range testutil.PoisonBatches(4 * limit) {
		t.Run(c.Name, func(t *testing.T) {
			b := recordbatch.Batch(c.Batch)
			if err := b.ValidateClient(); err != nil {
				t.Fatalf("the header must be valid: %v", err)
			}
			for name, validate := range map[string]func(recordbatch.Batch, int) error{
				"client": recordbatch.ValidateClientRecords,
				"stored": recordbatch.ValidateRecords,
			} {
				err := validate(b, limit)
				if c.OffsetDeltas && name == "stored" {
					// A stored batch's deltas need only increase: the
					// same batches fail, at the record that goes back.
					if !errors.Is(err, recordbatch.ErrRecord) || !strings.Contains(err.Error(), "record 1 at byte 70 of the batch: offset delta 0, want above") {
						t.Fatalf("stored: %v", err)
					}
					continue
				}
				if !errors.Is(err, c.Sentinel) || !errors.Is(err, recordbatch.ErrCorrupt) {
					t.Fatalf("%s: got %v, want %v", name, err, c.Sentinel)
				}
				var ce *recordbatch.CorruptionError
				if !errors.As(err, &ce) || ce.Section != "records" {
					t.Fatalf("%s: not a records CorruptionError: %#v", name, err)
				}
				for _, w := range c.Want {
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
	gaps := append(append(testutil.PoisonRecord(0, nil), testutil.PoisonRecord(2, nil)...), testutil.PoisonRecord(5, nil)...)
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

// The validation of a batch allocates nothing once the reader's buffers
// have grown, compressed or not.
func TestValidateClientRecordsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the decompressors are pooled, and the race detector empties pools at random")
	}
	var r recordbatch.RecordReader
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
		allocs := testing.AllocsPerRun(20, func() {
			if err := r.ValidateClientRecords(b, 0); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
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
	for _, c := range testutil.PoisonBatches(4 * fuzzLimit) {
		b := recordbatch.Batch(c.Batch)
		f.Add(b.Records(), b.NumRecords(), b.LastOffsetDelta(), uint8(b.Attributes()))
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
		// Each call against the bound on its own: under the race detector
		// the pool may be emptied between them, and each then builds a
		// reader and its inflate buffer afresh.
		var clientErr, storedErr error
		checkAllocated(t, fuzzAllocBound(records), func() {
			clientErr = recordbatch.ValidateClientRecords(b, fuzzLimit)
		})
		checkAllocated(t, fuzzAllocBound(records), func() {
			storedErr = recordbatch.ValidateRecords(b, fuzzLimit)
		})
		for _, err := range []error{clientErr, storedErr} {
			var ce *recordbatch.CorruptionError
			if err != nil && (!errors.As(err, &ce) || !errors.Is(err, recordbatch.ErrCorrupt)) {
				t.Fatalf("not a CorruptionError: %#v", err)
			}
			// The record named is one the header claims.
			if err == nil {
				continue
			}
			if i, ok := ce.Record(); ok && (i < 0 || i >= int(max(count, 0))) {
				t.Fatalf("record %d named of %d: %v", i, count, err)
			}
		}
		if b.Attributes().Codec() == recordbatch.CodecNone && count > 0 {
			// The fast path agrees with the reader, both ways.
			if fast := recordbatch.WalkRecords(records, count, lastDelta, true); fast != (clientErr == nil) {
				t.Fatalf("client: fast path %t, reader %v", fast, clientErr)
			}
			if fast := recordbatch.WalkRecords(records, count, lastDelta, false); fast != (storedErr == nil) {
				t.Fatalf("stored: fast path %t, reader %v", fast, storedErr)
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

// BenchmarkValidateClientRecords: the record walk Append adds, through
// the package function (pooled reader), on the 100-record batch of
// BenchmarkIterate, beside ParseValidate (header and CRC) of the same
// batch. Bytes are the uncompressed batch size.
func BenchmarkValidateClientRecords(b *testing.B) {
	size := len(benchBatch(b, recordbatch.CodecNone, 100))
	for c := recordbatch.CodecNone; c <= recordbatch.CodecZstd; c++ {
		batch := recordbatch.Batch(benchBatch(b, c, 100))
		b.Run("codec="+c.String(), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := recordbatch.ValidateClientRecords(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
