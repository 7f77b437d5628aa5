package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBuild is returned by Builder for a batch that cannot be built (no
// records, offsets out of order, a negative timestamp). It is a misuse of
// the API, not corrupt data, so it is not a *CorruptionError.
var ErrBuild = errors.New("logstore/recordbatch: cannot build batch")

// Builder assembles one batch the way Kafka's MemoryRecordsBuilder does,
// so that the same records give the same bytes: baseTimestamp is the
// first record's timestamp, maxTimestamp the largest (or LogAppendTime for
// LogAppendTime batches), lastOffsetDelta the last record's offset delta,
// and record attributes are 0.
//
// Set the exported fields before the first Append; NewBuilder gives the
// defaults of a plain batch (no producer, CreateTime, no compression).
type Builder struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Compression          Codec
	TimestampType        TimestampType
	LogAppendTime        int64 // maxTimestamp of a LogAppendTime batch
	Transactional        bool
	Control              bool
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32

	records    []byte // uncompressed records section
	count      int32
	lastOffset int64
	baseTS     int64
	maxTS      int64
}

// NewBuilder returns a Builder for a plain batch starting at baseOffset.
func NewBuilder(baseOffset int64) *Builder {
	b := &Builder{}
	b.Reset(baseOffset)
	return b
}

// Reset forgets the records and restores NewBuilder's defaults, keeping
// the buffer.
func (b *Builder) Reset(baseOffset int64) {
	*b = Builder{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		TimestampType:        CreateTime,
		LogAppendTime:        NoTimestamp,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
		records:              b.records[:0],
		maxTS:                NoTimestamp,
	}
}

// Len returns the number of records appended so far.
func (b *Builder) Len() int { return int(b.count) }

// Size returns the length of the batch built so far before compression:
// the header and the records. AppendTo gives exactly this many bytes with
// CodecNone. A caller with a size limit checks it after each Append.
func (b *Builder) Size() int { return HeaderSize + len(b.records) }

// Append adds a record at the next offset.
func (b *Builder) Append(timestamp int64, key, value []byte, headers []RecordHeader) error {
	off := b.BaseOffset
	if b.count > 0 {
		off = b.lastOffset + 1
	}
	return b.AppendWithOffset(off, timestamp, key, value, headers)
}

// AppendWithOffset adds a record at offset, which must be above the last
// one (gaps are allowed, as compaction leaves them). A nil key or value is
// null.
func (b *Builder) AppendWithOffset(offset, timestamp int64, key, value []byte, headers []RecordHeader) error {
	if timestamp < 0 && timestamp != NoTimestamp {
		return fmt.Errorf("%w: Invalid negative timestamp %d", ErrBuild, timestamp)
	}
	if offset < b.BaseOffset || (b.count > 0 && offset <= b.lastOffset) {
		return fmt.Errorf("%w: offset %d is not above the last offset %d", ErrBuild, offset, b.lastOffset)
	}
	delta := offset - b.BaseOffset
	if delta > 1<<31-1 {
		return fmt.Errorf("%w: offset %d is too far from base offset %d", ErrBuild, offset, b.BaseOffset)
	}
	if b.count == 0 {
		b.baseTS = timestamp
	}
	if timestamp > b.maxTS {
		b.maxTS = timestamp
	}
	b.records = appendRecord(b.records, timestamp-b.baseTS, int32(delta), key, value, headers)
	b.count++
	b.lastOffset = offset
	return nil
}

// Header returns the header the built batch will have, before length and
// CRC are known.
func (b *Builder) Header() Header {
	maxTS := b.maxTS
	if b.TimestampType == LogAppendTime {
		maxTS = b.LogAppendTime
	}
	return Header{
		BaseOffset:           b.BaseOffset,
		PartitionLeaderEpoch: b.PartitionLeaderEpoch,
		Magic:                Magic,
		Attributes:           MakeAttributes(b.Compression, b.TimestampType, b.Transactional, b.Control, false),
		LastOffsetDelta:      int32(b.lastOffset - b.BaseOffset),
		BaseTimestamp:        b.baseTS,
		MaxTimestamp:         maxTS,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		BaseSequence:         b.BaseSequence,
		NumRecords:           b.count,
	}
}

// AppendTo appends the finished batch to dst: header, records (compressed
// with b.Compression), length and CRC.
func (b *Builder) AppendTo(dst []byte) ([]byte, error) {
	if b.count == 0 {
		return dst, fmt.Errorf("%w: no records", ErrBuild)
	}
	if !b.Compression.Valid() {
		return dst, fmt.Errorf("%w: Unknown compression type id: %d", ErrBuild, b.Compression)
	}
	if b.Compression == CodecNone {
		return AppendBatch(dst, b.Header(), b.records), nil
	}
	start := len(dst)
	h := b.Header()
	dst = h.AppendTo(dst)
	dst, err := Compress(dst, b.Compression, b.records)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: %w", ErrBuild, err)
	}
	binary.BigEndian.PutUint32(dst[start+lengthOffset:], uint32(len(dst)-start-LogOverhead))
	binary.BigEndian.PutUint32(dst[start+crcOffset:], Checksum(dst[start+attributesOffset:]))
	return dst, nil
}
