package testutil

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/logstore/logstore/recordbatch"
)

// PoisonBatch is a batch whose header is valid (its CRC right, so
// ValidateClient passes) but whose records no reader can decode: the
// poison batches of issue 11.
type PoisonBatch struct {
	Name  string
	Batch []byte
	// Sentinel is the recordbatch error a refusal wraps.
	Sentinel error
	// Want are phrases the refusal's message holds: the record and its
	// byte position, and the reason.
	Want []string
	// OffsetDeltas: the records decode, only their offset deltas are
	// wrong for a producer's batch (a stored batch's need only increase).
	OffsetDeltas bool
}

// PoisonBatches returns one batch of each kind, with a producer-less
// header. The bombs are gzip and zstd streams of bomb zero bytes: give
// more than the bound the test refuses at, and little more, to keep
// the test's memory modest.
func PoisonBatches(bomb int) []PoisonBatch {
	two := append(PoisonRecord(0, nil), PoisonRecord(1, nil)...)
	return []PoisonBatch{
		{Name: "record length 2^31-1", Batch: PoisonWrap(0, 1, append(binary.AppendVarint(nil, math.MaxInt32), 0, 0, 0)),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 0 at byte 61 of the batch", "Invalid record size"}},
		{Name: "record count 2^31-1", Batch: PoisonWrap(0, math.MaxInt32, two),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 2 at byte 79 of the batch", "the header claims 2147483647 records, the records section holds 2", "premature EOF"}},
		{Name: "header count 2^31-1", Batch: PoisonWrap(0, 1, PoisonRecord(0, binary.AppendVarint(nil, math.MaxInt32))),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 0 at byte 61 of the batch", "invalid number of record headers 2147483647"}},
		{Name: "null header key", Batch: PoisonWrap(0, 1, PoisonRecord(0, binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(nil, 1), -1), -1))),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 0 at byte 61 of the batch", "negative header key size -1"}},
		{Name: "varint too long", Batch: PoisonWrap(0, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 0 at byte 61 of the batch", "Varint is too long"}},
		{Name: "offset deltas out of order", Batch: PoisonWrap(0, 2, append(PoisonRecord(1, nil), PoisonRecord(0, nil)...)),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 0 at byte 61 of the batch", "offset delta 1, want 0"}, OffsetDeltas: true},
		{Name: "offset delta repeated", Batch: PoisonWrap(0, 2, append(PoisonRecord(0, nil), PoisonRecord(0, nil)...)),
			Sentinel: recordbatch.ErrRecord, Want: []string{"record 1 at byte 70 of the batch", "offset delta 0, want 1"}, OffsetDeltas: true},
		{Name: "trailing bytes", Batch: PoisonWrap(0, 2, append(two, 0, 0, 0)),
			Sentinel: recordbatch.ErrRecord, Want: []string{"after the last record (record 1), at byte 79 of the batch", "records still remaining"}},
		{Name: "gzip not gzip", Batch: PoisonWrap(recordbatch.CodecGzip, 1, []byte("this is not a gzip stream at all")),
			Sentinel: recordbatch.ErrDecompress, Want: []string{"gzip"}},
		{Name: "zstd not zstd", Batch: PoisonWrap(recordbatch.CodecZstd, 1, []byte("this is not a zstd stream at all")),
			Sentinel: recordbatch.ErrDecompress, Want: []string{"zstd"}},
		{Name: "gzip bomb", Batch: PoisonWrap(recordbatch.CodecGzip, 1, bombOf(recordbatch.CodecGzip, bomb)),
			Sentinel: recordbatch.ErrTooLarge, Want: []string{"gzip: decompressed records exceed"}},
		{Name: "zstd bomb", Batch: PoisonWrap(recordbatch.CodecZstd, 1, bombOf(recordbatch.CodecZstd, bomb)),
			Sentinel: recordbatch.ErrTooLarge, Want: []string{"zstd: decompressed records exceed"}},
		{Name: "gzip records past the count", Batch: PoisonWrap(recordbatch.CodecGzip, 1, compressed(recordbatch.CodecGzip, two)),
			Sentinel: recordbatch.ErrRecord, Want: []string{"after the last record (record 0), at byte 9 of the decompressed records", "records still remaining"}},
	}
}

// PoisonRecord encodes one 9-byte record by hand (with no headers):
// attributes 0, timestamp delta 0, the given offset delta, key "k",
// value "v", then headers, already encoded with their count first (nil:
// a count of 0).
func PoisonRecord(offsetDelta int64, headers []byte) []byte {
	body := []byte{0}
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, offsetDelta)
	body = binary.AppendVarint(body, 1)
	body = append(body, 'k')
	body = binary.AppendVarint(body, 1)
	body = append(body, 'v')
	if headers == nil {
		headers = binary.AppendVarint(nil, 0)
	}
	body = append(body, headers...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// PoisonWrap wraps a records section (already compressed for codec) in
// a valid header with no producer: CRC right, lastOffsetDelta count-1.
func PoisonWrap(codec recordbatch.Codec, count int32, records []byte) []byte {
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
	return recordbatch.AppendBatch(nil, h, records)
}

func compressed(c recordbatch.Codec, src []byte) []byte {
	out, err := recordbatch.Compress(nil, c, src)
	if err != nil {
		panic(err)
	}
	return out
}

// bombOf returns n zero bytes compressed with c (gzip or zstd), written a
// block at a time so they are never held.
func bombOf(c recordbatch.Codec, n int) []byte {
	var out bytes.Buffer
	var w io.WriteCloser
	var err error
	if c == recordbatch.CodecGzip {
		w, err = gzip.NewWriterLevel(&out, gzip.BestCompression)
	} else {
		w, err = zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	}
	if err != nil {
		panic(err)
	}
	zeros := make([]byte, 64<<10)
	for left := n; left > 0; left -= len(zeros) {
		if _, err := w.Write(zeros[:min(left, len(zeros))]); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return out.Bytes()
}
