package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// Part of the on-disk format of a stored value (see the package doc):
// never change these; a new layout gets a new version.
const (
	// ValueVersion is the format version AppendValue writes and the only
	// one DecodeValue reads.
	ValueVersion = 1

	valueHeaderSize = 6 // version uint16 + CRC-32C uint32
	valueCRCPos     = 2

	// The fewest bytes a producer and a batch can take: one per varint
	// and one for the window length. Counts are checked against them.
	minProducerSize = 6
	minBatchSize    = 5
)

// AppendValue appends the stored encoding of snap to dst, or returns an
// error wrapping ErrInvalidSnapshot (and dst unchanged) when snap does
// not fit the format.
func AppendValue(dst []byte, snap producerstate.Snapshot) ([]byte, error) {
	if err := checkSnapshot(snap); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, ValueVersion)
	dst = append(dst, 0, 0, 0, 0) // CRC, filled in below
	dst = binary.AppendUvarint(dst, uint64(snap.Offset))
	dst = binary.AppendUvarint(dst, uint64(len(snap.Producers)))
	var prevID int64
	for i := range snap.Producers {
		p := &snap.Producers[i]
		if i == 0 {
			dst = binary.AppendVarint(dst, p.ProducerID)
		} else {
			dst = binary.AppendUvarint(dst, uint64(p.ProducerID)-uint64(prevID))
		}
		prevID = p.ProducerID
		dst = binary.AppendVarint(dst, int64(p.Epoch))
		dst = binary.AppendVarint(dst, int64(p.CoordinatorEpoch))
		dst = binary.AppendVarint(dst, p.TxnFirstOffset)
		dst = binary.AppendVarint(dst, p.LastTimestamp)
		dst = append(dst, byte(len(p.Batches)))
		for j, b := range p.Batches {
			if j == 0 {
				dst = binary.AppendVarint(dst, int64(b.FirstSeq))
				dst = binary.AppendVarint(dst, int64(b.LastSeq-b.FirstSeq))
				dst = binary.AppendVarint(dst, b.FirstOffset)
				dst = binary.AppendVarint(dst, b.LastOffset-b.FirstOffset)
				dst = binary.AppendVarint(dst, b.Timestamp-p.LastTimestamp)
				continue
			}
			q := p.Batches[j-1]
			dst = binary.AppendVarint(dst, int64(b.FirstSeq-q.LastSeq-1))
			dst = binary.AppendVarint(dst, int64(b.LastSeq-b.FirstSeq))
			dst = binary.AppendVarint(dst, b.FirstOffset-q.LastOffset-1)
			dst = binary.AppendVarint(dst, b.LastOffset-b.FirstOffset)
			dst = binary.AppendVarint(dst, b.Timestamp-q.Timestamp)
		}
	}
	binary.BigEndian.PutUint32(dst[start+valueCRCPos:], recordbatch.Checksum(dst[start+valueHeaderSize:]))
	return dst, nil
}

// checkSnapshot says whether snap can be stored so that it reads back.
func checkSnapshot(snap producerstate.Snapshot) error {
	if snap.Offset < 0 {
		return fmt.Errorf("%w: offset %d is negative", ErrInvalidSnapshot, snap.Offset)
	}
	for i := range snap.Producers {
		p := &snap.Producers[i]
		if i > 0 && p.ProducerID <= snap.Producers[i-1].ProducerID {
			return fmt.Errorf("%w: producer %d follows producer %d (ids must strictly ascend)",
				ErrInvalidSnapshot, p.ProducerID, snap.Producers[i-1].ProducerID)
		}
		if len(p.Batches) > producerstate.WindowSize {
			return fmt.Errorf("%w: producer %d has %d batches, more than the window of %d",
				ErrInvalidSnapshot, p.ProducerID, len(p.Batches), producerstate.WindowSize)
		}
	}
	return nil
}

// DecodeValue decodes a stored snapshot value. Errors are *DecodeError
// (Offset -1) wrapping ErrCorrupt or ErrVersion. The result shares no
// memory with value. An empty window decodes as a nil Batches, and no
// producers as a nil Producers.
func DecodeValue(value []byte) (producerstate.Snapshot, error) {
	return decodeValue(value, -1)
}

// decodeValue decodes the value stored under key (-1: none known; else
// the value must carry that offset).
func decodeValue(value []byte, key int64) (producerstate.Snapshot, error) {
	r := valueReader{b: value, key: key}
	if len(value) < valueHeaderSize {
		return producerstate.Snapshot{}, r.errorf(len(value), ErrCorrupt,
			"%d bytes, shorter than the %d-byte header", len(value), valueHeaderSize)
	}
	if v := binary.BigEndian.Uint16(value); v != ValueVersion {
		return producerstate.Snapshot{}, r.errorf(0, ErrVersion, "format version %d, this build reads %d", v, ValueVersion)
	}
	stored := binary.BigEndian.Uint32(value[valueCRCPos:])
	if sum := recordbatch.Checksum(value[valueHeaderSize:]); sum != stored {
		return producerstate.Snapshot{}, r.errorf(valueCRCPos, ErrCorrupt,
			"crc32c mismatch: stored %08x, computed %08x", stored, sum)
	}
	r.pos = valueHeaderSize

	var snap producerstate.Snapshot
	at := r.pos
	off := r.uvarint("snapshot offset")
	if r.err == nil && off > math.MaxInt64 {
		r.fail(at, "snapshot offset %d does not fit an int64", off)
	}
	snap.Offset = int64(off)
	if r.err == nil && key >= 0 && snap.Offset != key {
		r.fail(at, "value holds offset %d, stored under offset %d", snap.Offset, key)
	}
	at = r.pos
	n := r.uvarint("producer count")
	if r.err == nil && n > uint64(r.left()/minProducerSize) {
		r.fail(at, "%d producers cannot fit in the %d bytes left", n, r.left())
	}
	if r.err != nil {
		return producerstate.Snapshot{}, r.err
	}
	if n == 0 {
		return r.finish(snap)
	}

	snap.Producers = make([]producerstate.Entry, n)
	// One backing array for every window: at most 5 per producer, and at
	// most one per minBatchSize bytes left, so it is bounded by the input.
	batches := make([]producerstate.BatchMeta, 0, min(n*producerstate.WindowSize, uint64(r.left()/minBatchSize)))
	var prevID int64
	for i := range snap.Producers {
		p := &snap.Producers[i]
		at := r.pos
		if i == 0 {
			p.ProducerID = r.varint("producer id")
		} else {
			d := r.uvarint("producer id delta")
			if r.err == nil && (d == 0 || d > uint64(math.MaxInt64)-uint64(prevID)) {
				r.fail(at, "producer id delta %d after %d is not in [1, %d]", d, prevID, uint64(math.MaxInt64)-uint64(prevID))
			}
			p.ProducerID = int64(uint64(prevID) + d)
		}
		prevID = p.ProducerID
		p.Epoch = int16(r.ranged("epoch", math.MinInt16, math.MaxInt16))
		p.CoordinatorEpoch = int32(r.ranged("coordinator epoch", math.MinInt32, math.MaxInt32))
		p.TxnFirstOffset = r.varint("transaction first offset")
		p.LastTimestamp = r.varint("last timestamp")
		at = r.pos
		k := int(r.byte("window length"))
		if r.err == nil && k > producerstate.WindowSize {
			r.fail(at, "window of %d batches, more than %d", k, producerstate.WindowSize)
		}
		if r.err == nil && k > r.left()/minBatchSize {
			r.fail(at, "%d batches cannot fit in the %d bytes left", k, r.left())
		}
		if r.err != nil {
			return producerstate.Snapshot{}, r.err
		}
		if k == 0 {
			continue
		}
		first := len(batches)
		for j := 0; j < k; j++ {
			var b producerstate.BatchMeta
			if j == 0 {
				b.FirstSeq = int32(r.ranged("first sequence", math.MinInt32, math.MaxInt32))
				b.LastSeq = b.FirstSeq + int32(r.ranged("sequence span", math.MinInt32, math.MaxInt32))
				b.FirstOffset = r.varint("first offset")
				b.LastOffset = b.FirstOffset + r.varint("offset span")
				b.Timestamp = p.LastTimestamp + r.varint("timestamp delta")
			} else {
				q := batches[len(batches)-1]
				b.FirstSeq = q.LastSeq + 1 + int32(r.ranged("sequence gap", math.MinInt32, math.MaxInt32))
				b.LastSeq = b.FirstSeq + int32(r.ranged("sequence span", math.MinInt32, math.MaxInt32))
				b.FirstOffset = q.LastOffset + 1 + r.varint("offset gap")
				b.LastOffset = b.FirstOffset + r.varint("offset span")
				b.Timestamp = q.Timestamp + r.varint("timestamp delta")
			}
			batches = append(batches, b)
		}
		if r.err != nil {
			return producerstate.Snapshot{}, r.err
		}
		p.Batches = batches[first:len(batches):len(batches)]
	}
	return r.finish(snap)
}

// valueReader reads the varints of a value. Its error is sticky: once a
// read fails, err keeps the first failure and what later reads return
// means nothing, so the caller checks err before using a value.
type valueReader struct {
	b   []byte
	pos int
	key int64
	err error
}

func (r *valueReader) left() int { return len(r.b) - r.pos }

func (r *valueReader) errorf(pos int, sentinel error, format string, args ...any) error {
	return &DecodeError{Offset: r.key, Pos: pos, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

func (r *valueReader) fail(pos int, format string, args ...any) {
	if r.err == nil {
		r.err = r.errorf(pos, ErrCorrupt, format, args...)
	}
}

// uvarint reads an unsigned varint in its minimal encoding. Most fields
// take one byte, so that case is kept small enough to inline.
func (r *valueReader) uvarint(what string) uint64 {
	if p := r.pos; p < len(r.b) && r.b[p] < 0x80 {
		r.pos = p + 1
		return uint64(r.b[p])
	}
	return r.uvarintSlow(what)
}

func (r *valueReader) uvarintSlow(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	switch {
	case n == 0:
		r.fail(r.pos, "%s: varint cut off by the end of the value", what)
		return 0
	case n < 0:
		r.fail(r.pos, "%s: varint overflows 64 bits", what)
		return 0
	case r.b[r.pos+n-1] == 0:
		// A last byte of 0 adds nothing: a shorter encoding exists.
		r.fail(r.pos, "%s: varint of %d bytes for a value that takes %d", what, n, uvarintLen(v))
		return 0
	}
	r.pos += n
	return v
}

// varint reads a zigzag varint in its minimal encoding.
func (r *valueReader) varint(what string) int64 {
	u := r.uvarint(what)
	return int64(u>>1) ^ -int64(u&1)
}

// ranged reads a zigzag varint that must lie in [lo, hi].
func (r *valueReader) ranged(what string, lo, hi int64) int64 {
	at := r.pos
	v := r.varint(what)
	if r.err == nil && (v < lo || v > hi) {
		r.fail(at, "%s %d is out of range [%d, %d]", what, v, lo, hi)
		return 0
	}
	return v
}

func (r *valueReader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail(r.pos, "%s: cut off by the end of the value", what)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// finish returns snap when the value ended exactly where it should.
func (r *valueReader) finish(snap producerstate.Snapshot) (producerstate.Snapshot, error) {
	if r.err == nil && r.pos != len(r.b) {
		r.fail(r.pos, "%d trailing bytes after the last producer", len(r.b)-r.pos)
	}
	if r.err != nil {
		return producerstate.Snapshot{}, r.err
	}
	return snap, nil
}

// uvarintLen is the length of v's minimal uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
