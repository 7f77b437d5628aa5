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
//
// It runs decodeFast, which is quick but says nothing of what is wrong
// with a value it refuses, and only for such a value the checked decoder
// decodeSlow, which finds the error and where it is. Both accept exactly
// the same values (TestDecodeFastMatchesSlow, FuzzDecodeFastMatchesSlow).
func decodeValue(value []byte, key int64) (producerstate.Snapshot, error) {
	snap, ok, bufs := decodeFast(value, key)
	if ok {
		return snap, nil
	}
	// What decodeFast allocated goes to decodeSlow, which needs the same,
	// so that a bad value costs no more memory than a good one.
	return decodeSlow(value, key, bufs)
}

// decodeBufs are the two arrays a decoding allocates: the producers, and
// the windows of them all.
type decodeBufs struct {
	producers []producerstate.Entry
	batches   []producerstate.BatchMeta
}

// decodeSlow is decodeValue with every check made as the field is read,
// so that a refusal names the field and its byte. It uses bufs instead
// of allocating when they are large enough.
func decodeSlow(value []byte, key int64, bufs decodeBufs) (producerstate.Snapshot, error) {
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

	if uint64(cap(bufs.producers)) >= n {
		snap.Producers = bufs.producers[:n]
		clear(snap.Producers)
	} else {
		snap.Producers = make([]producerstate.Entry, n)
	}
	// One backing array for every window: at most 5 per producer, and at
	// most one per minBatchSize bytes left, so it is bounded by the input.
	windows := min(n*producerstate.WindowSize, uint64(r.left()/minBatchSize))
	batches := bufs.batches[:0]
	if uint64(cap(batches)) < windows {
		batches = make([]producerstate.BatchMeta, 0, windows)
	}
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

// decodeFast decodes a value as decodeSlow does, with the same checks,
// but keeps no account of what failed: ok is false for any value
// decodeSlow refuses, and then snap means nothing.
func decodeFast(b []byte, key int64) (snap producerstate.Snapshot, ok bool, bufs decodeBufs) {
	r, n, ok := newFastReader(b, key)
	if !ok {
		return snap, false, bufs
	}
	snap.Offset = r.offset
	if n == 0 {
		return snap, r.end(), bufs
	}
	snap.Producers = make([]producerstate.Entry, n)
	bufs = decodeBufs{snap.Producers, make([]producerstate.BatchMeta, r.maxBatches(n))}
	if _, ok := r.producers(snap.Producers, bufs.batches); !ok {
		return snap, false, bufs
	}
	return snap, r.end(), bufs
}

// decodeState is decodeFast into a State, as producerstate.FromSnapshot
// would make it from the Snapshot decodeFast returns, without that
// Snapshot: it decodes a few producers at a time into the same small
// buffers and hands them to a producerstate.Loader.
func decodeState(b []byte, key int64, cfg producerstate.Config) (*producerstate.State, bool) {
	r, n, ok := newFastReader(b, key)
	if !ok {
		return nil, false
	}
	l := producerstate.NewLoader(cfg, r.offset, int(n))
	const step = 256
	var (
		entries [step]producerstate.Entry
		batches [step * producerstate.WindowSize]producerstate.BatchMeta
	)
	for left := n; left > 0; {
		part := entries[:min(left, step)]
		if _, ok := r.producers(part, batches[:]); !ok {
			return nil, false
		}
		for i := range part {
			l.Add(&part[i])
		}
		left -= uint64(len(part))
	}
	if !r.end() {
		return nil, false
	}
	return l.State(), true
}

// fastReader reads a value's producers for decodeFast and decodeState.
// A read that fails sets the position to -1, which every later read
// passes on, so most checks are made once per producer or batch.
type fastReader struct {
	b      []byte
	p      int
	offset int64
	next   int   // index of the next producer in the value
	prevID int64 // id of the producer before it
}

// newFastReader checks the header and the CRC and reads the snapshot
// offset and the producer count n.
func newFastReader(b []byte, key int64) (r fastReader, n uint64, ok bool) {
	if len(b) < valueHeaderSize || binary.BigEndian.Uint16(b) != ValueVersion ||
		binary.BigEndian.Uint32(b[valueCRCPos:]) != recordbatch.Checksum(b[valueHeaderSize:]) {
		return r, 0, false
	}
	var f [2]uint64
	p := uvarints(b, valueHeaderSize, f[:])
	off, n := f[0], f[1]
	if p < 0 || off > math.MaxInt64 || key >= 0 && int64(off) != key ||
		n > uint64((len(b)-p)/minProducerSize) {
		return r, 0, false
	}
	return fastReader{b: b, p: p, offset: int64(off)}, n, true
}

// maxBatches bounds the batches of the n producers that follow, as
// decodeSlow does: at most 5 each, and one per minBatchSize bytes left.
func (r *fastReader) maxBatches(n uint64) int {
	return int(min(n*producerstate.WindowSize, uint64((len(r.b)-r.p)/minBatchSize)))
}

// end reports whether the value ends where the reader is.
func (r *fastReader) end() bool { return r.p == len(r.b) }

// producers reads the next len(dst) producers into dst, their windows
// into batches, and returns how many batches it used; ok is false when
// the value is not valid there (or batches has too little room).
func (r *fastReader) producers(dst []producerstate.Entry, batches []producerstate.BatchMeta) (used int, ok bool) {
	b, p, prevID, first := r.b, r.p, r.prevID, r.next == 0
	var f [5]uint64
	for i := range dst {
		e := &dst[i]
		// id, epoch, coordinator epoch, transaction first offset, last
		// timestamp; then the window length.
		if p = uvarints(b, p, f[:]); p < 0 || p >= len(b) {
			return used, false
		}
		if first {
			e.ProducerID = unzigzag(f[0])
			first = false
		} else {
			if f[0] == 0 || f[0] > uint64(math.MaxInt64)-uint64(prevID) {
				return used, false
			}
			e.ProducerID = int64(uint64(prevID) + f[0])
		}
		prevID = e.ProducerID
		epoch, coord := unzigzag(f[1]), unzigzag(f[2])
		if epoch != int64(int16(epoch)) || coord != int64(int32(coord)) {
			return used, false
		}
		e.Epoch, e.CoordinatorEpoch = int16(epoch), int32(coord)
		e.TxnFirstOffset, e.LastTimestamp = unzigzag(f[3]), unzigzag(f[4])
		k := int(b[p])
		p++
		e.Batches = nil
		if k == 0 {
			continue
		}
		if k > producerstate.WindowSize || k > (len(b)-p)/minBatchSize || used+k > len(batches) {
			return used, false
		}
		w := batches[used : used+k : used+k]
		used += k
		// Each batch: first sequence, sequence span, first offset,
		// offset span, timestamp, the first relative to the producer's
		// fields and every later one to the batch before it.
		lastSeq, lastOffset, ts := int32(-1), int64(-1), e.LastTimestamp
		for j := range w {
			if p = uvarints(b, p, f[:]); p < 0 {
				return used, false
			}
			gap, span := unzigzag(f[0]), unzigzag(f[1])
			if gap != int64(int32(gap)) || span != int64(int32(span)) {
				return used, false
			}
			m := &w[j]
			if j == 0 {
				m.FirstSeq = int32(gap)
				m.FirstOffset = unzigzag(f[2])
			} else {
				m.FirstSeq = lastSeq + 1 + int32(gap)
				m.FirstOffset = lastOffset + 1 + unzigzag(f[2])
			}
			m.LastSeq = m.FirstSeq + int32(span)
			m.LastOffset = m.FirstOffset + unzigzag(f[3])
			m.Timestamp = ts + unzigzag(f[4])
			lastSeq, lastOffset, ts = m.LastSeq, m.LastOffset, m.Timestamp
		}
		e.Batches = w
	}
	r.p, r.prevID = p, prevID
	r.next += len(dst)
	return used, true
}

// uvarints reads len(dst) unsigned varints, each in its minimal
// encoding, from position p and returns the position after them, or -1
// when they are not all there. Most take one byte, a case it handles
// without a call.
func uvarints(b []byte, p int, dst []uint64) int {
	for i := range dst {
		if uint(p) >= uint(len(b)) {
			return -1
		}
		c := b[p]
		if c < 0x80 {
			dst[i] = uint64(c)
			p++
			continue
		}
		if p+1 < len(b) && b[p+1] < 0x80 && b[p+1] != 0 { // two bytes, minimal
			dst[i] = uint64(c&0x7f) | uint64(b[p+1])<<7
			p += 2
			continue
		}
		v, n := binary.Uvarint(b[p:])
		if n <= 0 || b[p+n-1] == 0 { // cut off, overflowing, or not minimal
			return -1
		}
		dst[i] = v
		p += n
	}
	return p
}

// unzigzag is the signed value of a zigzag varint.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
