package recordbatch

import (
	"encoding/binary"

	"github.com/klauspost/crc32"
)

// Byte offsets of the header fields. These constants are part of the wire
// format; never change them.
const (
	baseOffsetOffset           = 0
	lengthOffset               = 8
	partitionLeaderEpochOffset = 12
	magicOffset                = 16
	crcOffset                  = 17
	attributesOffset           = 21
	lastOffsetDeltaOffset      = 23
	baseTimestampOffset        = 27
	maxTimestampOffset         = 35
	producerIDOffset           = 43
	producerEpochOffset        = 51
	baseSequenceOffset         = 53
	recordsCountOffset         = 57

	// HeaderSize is the size of a batch header, RECORD_BATCH_OVERHEAD.
	HeaderSize = 61
	// LogOverhead is the part of the header not counted by batchLength:
	// the base offset and the length field itself.
	LogOverhead = 12
	// Magic is the only batch format version this package reads and writes.
	Magic = 2
)

// "No value" sentinels, as Kafka's RecordBatch defines them.
const (
	NoTimestamp            int64 = -1
	NoProducerID           int64 = -1
	NoProducerEpoch        int16 = -1
	NoSequence             int32 = -1
	NoPartitionLeaderEpoch int32 = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum computes CRC-32C as Kafka does for a batch: over b, which is
// bytes 21..end of the batch.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateChecksum continues a CRC-32C with more bytes, for callers that
// check a batch too large to hold in memory at once.
func UpdateChecksum(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// Batch is a zero-copy view of one encoded record batch: exactly its
// bytes, no more. Getters read the header in place and never fail; they
// are only meaningful on a Batch returned by Parse (or built here).
type Batch []byte

// Parse returns a view of the batch at the start of b, which may hold
// more bytes after it. It checks the structure only: magic 2, and a
// batchLength that is at least the header size, no more than maxSize when
// maxSize > 0, and present in full. It does not check
// the CRC or the record count; Validate does.
//
// A batch cut short returns ErrTruncated, which at the end of a segment
// is a torn write. The returned Batch shares b's memory and has its
// capacity capped, so appending to it cannot overwrite what follows.
func Parse(b []byte, maxSize int) (Batch, error) {
	if len(b) < LogOverhead {
		return nil, batchErr(len(b), ErrTruncated, "%d bytes, need %d for the offset and length", len(b), LogOverhead)
	}
	length := int64(int32(binary.BigEndian.Uint32(b[lengthOffset:])))
	size := length + LogOverhead
	// Kafka reads the magic before it knows which format's minimum size
	// applies, so a legacy (magic 0 or 1) message reports ErrMagic and
	// callers can step over it by its size.
	if size <= magicOffset {
		return nil, batchErr(lengthOffset, ErrBatchTooSmall, "the size %d is smaller than the minimum allowed overhead %d", size, HeaderSize)
	}
	if len(b) <= magicOffset {
		return nil, batchErr(len(b), ErrTruncated, "%d bytes, need %d to read the magic", len(b), magicOffset+1)
	}
	if m := int8(b[magicOffset]); m != Magic {
		return nil, batchErr(magicOffset, ErrMagic, "magic %d", m)
	}
	if size < HeaderSize {
		return nil, batchErr(lengthOffset, ErrBatchTooSmall, "the size %d is smaller than the minimum allowed overhead %d", size, HeaderSize)
	}
	if maxSize > 0 && size > int64(maxSize) {
		return nil, batchErr(lengthOffset, ErrBatchTooLarge, "size %d, limit %d", size, maxSize)
	}
	if int64(len(b)) < size {
		return nil, batchErr(len(b), ErrTruncated, "batch of %d bytes, only %d present", size, len(b))
	}
	return Batch(b[:size:size]), nil
}

// BaseOffset is the offset of the first record (bytes 0..7).
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[baseOffsetOffset:])) }

// BatchLength is the size of the batch minus 12 (bytes 8..11).
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[lengthOffset:])) }

// PartitionLeaderEpoch (bytes 12..15) is not covered by the CRC.
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[partitionLeaderEpochOffset:]))
}

// Magic is the format version byte (byte 16).
func (b Batch) Magic() int8 { return int8(b[magicOffset]) }

// CRC is the stored CRC-32C (bytes 17..20).
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b[crcOffset:]) }

// Attributes (bytes 21..22).
func (b Batch) Attributes() Attributes {
	return Attributes(binary.BigEndian.Uint16(b[attributesOffset:]))
}

// LastOffsetDelta is the offset of the last record minus the base offset
// (bytes 23..26). It also serves as the last sequence delta.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[lastOffsetDeltaOffset:]))
}

// BaseTimestamp is the first record's timestamp, or the delete horizon
// when HasDeleteHorizon (bytes 27..34).
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[baseTimestampOffset:])) }

// MaxTimestamp is the largest record timestamp, or the append time for
// LogAppendTime batches (bytes 35..42).
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[maxTimestampOffset:])) }

// ProducerID (bytes 43..50); negative means no producer.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[producerIDOffset:])) }

// ProducerEpoch (bytes 51..52).
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[producerEpochOffset:])) }

// BaseSequence (bytes 53..56); -1 means none.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b[baseSequenceOffset:])) }

// NumRecords is recordsCount (bytes 57..60), never compressed.
func (b Batch) NumRecords() int32 { return int32(binary.BigEndian.Uint32(b[recordsCountOffset:])) }

// Size is the whole batch's size in bytes: batchLength + 12.
func (b Batch) Size() int { return int(b.BatchLength()) + LogOverhead }

// LastOffset is BaseOffset + LastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// HasProducerID reports producerId > -1, as Kafka's hasProducerId does.
func (b Batch) HasProducerID() bool { return b.ProducerID() > NoProducerID }

// LastSequence is the sequence of the last record, wrapping past
// 2147483647 to 0; -1 when the batch has no sequence. Like Kafka it uses
// lastOffsetDelta, not the record count, so it survives compaction.
func (b Batch) LastSequence() int32 {
	s := b.BaseSequence()
	if s == NoSequence {
		return NoSequence
	}
	return IncrementSequence(s, b.LastOffsetDelta())
}

// DeleteHorizonMs returns the delete horizon and true when the batch
// carries one (it is stored in the baseTimestamp field).
func (b Batch) DeleteHorizonMs() (int64, bool) {
	if b.Attributes().HasDeleteHorizon() {
		return b.BaseTimestamp(), true
	}
	return 0, false
}

// Records returns the records section: bytes 61..end, compressed when the
// codec is not none.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// ComputeCRC returns the CRC-32C over bytes 21..end.
func (b Batch) ComputeCRC() uint32 { return Checksum(b[attributesOffset:]) }

// SetBaseOffset restamps the base offset in place. The CRC does not cover
// it, so the batch stays valid.
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[baseOffsetOffset:], uint64(off))
}

// SetPartitionLeaderEpoch restamps the leader epoch in place. The CRC does
// not cover it, so the batch stays valid.
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[partitionLeaderEpochOffset:], uint32(e))
}

// Validate checks what Kafka's ensureValid checks, and what any reader of
// the batch relies on: the CRC, a known codec and a record count that is
// not negative. It returns nil or a *CorruptionError. Records are checked
// as they are read (RecordReader).
func (b Batch) Validate() error {
	if stored, computed := b.CRC(), b.ComputeCRC(); stored != computed {
		return batchErr(crcOffset, ErrCRC, "Record is corrupt (stored crc = %d, computed crc = %d)", stored, computed)
	}
	if c := b.Attributes().Codec(); !c.Valid() {
		return batchErr(attributesOffset, ErrUnknownCodec, "Unknown compression type id: %d", c)
	}
	if n := b.NumRecords(); n < 0 {
		return batchErr(recordsCountOffset, ErrRecordCount, "Found invalid record count %d in magic v2 batch", n)
	}
	return nil
}

// ValidateClient checks a batch as a producer must send it, on top of
// Validate: data, not control records; at least one record;
// lastOffsetDelta+1 == count; a base sequence >= 0 whenever a producer
// id is set; a base timestamp that is -1 or not negative.
func (b Batch) ValidateClient() error {
	if err := b.Validate(); err != nil {
		return err
	}
	if b.Attributes().Control() {
		return batchErr(attributesOffset, ErrControl, "a producer may not send control batches")
	}
	n, delta := b.NumRecords(), b.LastOffsetDelta()
	if n == 0 {
		return batchErr(recordsCountOffset, ErrRecordCount, "batch has no records")
	}
	if int64(delta)+1 != int64(n) {
		return batchErr(lastOffsetDeltaOffset, ErrRecordCount, "lastOffsetDelta %d does not match record count %d", delta, n)
	}
	if b.HasProducerID() && b.BaseSequence() < 0 {
		return batchErr(baseSequenceOffset, ErrSequence, "producer id %d has base sequence %d", b.ProducerID(), b.BaseSequence())
	}
	if ts := b.BaseTimestamp(); ts < NoTimestamp {
		return batchErr(baseTimestampOffset, ErrTimestamp, "Invalid message timestamp %d", ts)
	}
	return nil
}

// Header holds every header field, decoded. It is the writable form:
// AppendTo encodes it.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Header decodes every header field of b.
func (b Batch) Header() Header {
	return Header{
		BaseOffset:           b.BaseOffset(),
		BatchLength:          b.BatchLength(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Magic:                b.Magic(),
		CRC:                  b.CRC(),
		Attributes:           b.Attributes(),
		LastOffsetDelta:      b.LastOffsetDelta(),
		BaseTimestamp:        b.BaseTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		NumRecords:           b.NumRecords(),
	}
}

// AppendTo appends the 61 header bytes exactly as h holds them, with no
// check and no computed field.
func (h *Header) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BatchLength))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = binary.BigEndian.AppendUint32(dst, h.CRC)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.NumRecords))
	return dst
}

// AppendBatch appends a whole batch: h's fields with Magic set to 2, then
// records, an already encoded (and, if h's codec says so, compressed)
// records section. It computes batchLength and the CRC; every other field,
// the record count included, is taken from h as is.
func AppendBatch(dst []byte, h Header, records []byte) []byte {
	start := len(dst)
	h.Magic = Magic
	h.BatchLength = int32(HeaderSize - LogOverhead + len(records))
	h.CRC = 0
	dst = h.AppendTo(dst)
	dst = append(dst, records...)
	binary.BigEndian.PutUint32(dst[start+crcOffset:], Checksum(dst[start+attributesOffset:]))
	return dst
}
