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
	// ValueVersion is the format version AppendValue writes. DecodeValue
	// reads it and every older version (valueVersion1).
	ValueVersion = 2
	// valueVersion1 is the layout before seen times were kept: a
	// producer has no seen time, and decodes with
	// producerstate.SeenUnknown.
	valueVersion1 = 1

	valueHeaderSize = 6 // version uint16 + CRC-32C uint32
	valueCRCPos     = 2

	// The fewest bytes a producer and a batch can take: one per varint
	// and one for the window length (the seen time and last applied
	// offset of version 2 add two to a producer; the bound of version 1
	// holds for both). Counts are checked against them.
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
		dst = binary.AppendVarint(dst, p.LastSeen-p.LastTimestamp)
		dst = binary.AppendVarint(dst, snap.Offset-1-p.LastApplied)
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

// DecodeValue decodes a stored snapshot value, of format version 1 or
// 2. Errors are *DecodeError (Offset -1) wrapping ErrCorrupt or
// ErrVersion. The result shares no memory with value. An empty window
// decodes as a nil Batches, and no producers as a nil Producers. A
// version 1 value has no seen times and no last applied offsets: its
// producers decode with LastSeen producerstate.SeenUnknown and
// LastApplied the last offset of their newest batch (-1 without one).
func DecodeValue(value []byte) (producerstate.Snapshot, error) {
	return decodeValue(value, -1)
}

// decodeValue decodes the value stored under key (-1: none known; else
// the value must carry that offset) into a Snapshot.
func decodeValue(value []byte, key int64) (producerstate.Snapshot, error) {
	d, n, err := newDecoder(value, key)
	if err != nil {
		return producerstate.Snapshot{}, err
	}
	snap := producerstate.Snapshot{Offset: d.offset}
	if n > 0 {
		snap.Producers = make([]producerstate.Entry, n)
		// One backing array for every window, bounded by the input.
		d.producers(snap.Producers, make([]producerstate.BatchMeta, d.maxBatches(n)))
	}
	if err := d.finish(); err != nil {
		return producerstate.Snapshot{}, err
	}
	return snap, nil
}

// decodeState decodes the value stored under key into a State, as
// producerstate.FromSnapshot would make it from the Snapshot decodeValue
// returns, without that Snapshot: it decodes a few producers at a time
// into the same small buffers and hands them to a producerstate.Loader.
func decodeState(value []byte, key int64, cfg producerstate.Config) (*producerstate.State, error) {
	d, n, err := newDecoder(value, key)
	if err != nil {
		return nil, err
	}
	l := producerstate.NewLoader(cfg, d.offset, int(n))
	const step = 256
	var (
		entries [step]producerstate.Entry
		batches [step * producerstate.WindowSize]producerstate.BatchMeta
	)
	for left := n; left > 0; {
		part := entries[:min(left, step)]
		d.producers(part, batches[:])
		if d.err != nil {
			return nil, d.err
		}
		for i := range part {
			l.Add(&part[i])
		}
		left -= uint64(len(part))
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return l.State(), nil
}

// decoder reads one value. It is a sticky-error reader, as tsdb's
// Decbuf and franz-go's kbin.Reader are: every read checks what it reads
// (minimal varint encoding, range, bounds) and the first failure is kept
// in err, with what failed and at which byte, while later reads return
// zero; the caller looks at err once per producer or batch, not after
// every field. The one- and two-byte varints that make up most of a
// value are read without a call (uvarints), so this one decoder is both
// the fast path and the one that says what is wrong and where.
type decoder struct {
	b       []byte
	pos     int
	key     int64
	err     error
	version uint16
	offset  int64 // the snapshot's offset
	first   bool  // the next producer is the value's first
	prevID  int64 // id of the producer read last
}

// newDecoder checks the header and the CRC, and reads the snapshot
// offset and the producer count n, checked against the bytes left.
func newDecoder(b []byte, key int64) (dec decoder, n uint64, err error) {
	dec = decoder{b: b, key: key, first: true}
	d := &dec
	if len(b) < valueHeaderSize {
		return dec, 0, d.errorf(len(b), ErrCorrupt, "%d bytes, shorter than the %d-byte header", len(b), valueHeaderSize)
	}
	d.version = binary.BigEndian.Uint16(b)
	if d.version != ValueVersion && d.version != valueVersion1 {
		return dec, 0, d.errorf(0, ErrVersion, "format version %d, this build reads %d and %d", d.version, valueVersion1, ValueVersion)
	}
	stored := binary.BigEndian.Uint32(b[valueCRCPos:])
	if sum := recordbatch.Checksum(b[valueHeaderSize:]); sum != stored {
		return dec, 0, d.errorf(valueCRCPos, ErrCorrupt, "crc32c mismatch: stored %08x, computed %08x", stored, sum)
	}
	d.pos = valueHeaderSize
	at := d.pos
	off := d.uvarint("snapshot offset")
	if d.err == nil && off > math.MaxInt64 {
		d.fail(at, "snapshot offset %d does not fit an int64", off)
	}
	d.offset = int64(off)
	if d.err == nil && key >= 0 && d.offset != key {
		d.fail(at, "value holds offset %d, stored under offset %d", d.offset, key)
	}
	at = d.pos
	n = d.uvarint("producer count")
	if d.err == nil && n > uint64(d.left()/minProducerSize) {
		d.fail(at, "%d producers cannot fit in the %d bytes left", n, d.left())
	}
	if d.err != nil {
		return dec, 0, d.err
	}
	return dec, n, nil
}

// maxBatches bounds the batches of the n producers that follow: at most
// 5 each, and one per minBatchSize bytes left.
func (d *decoder) maxBatches(n uint64) int {
	return int(min(n*producerstate.WindowSize, uint64(d.left()/minBatchSize)))
}

// The names of the varints that start a producer and that make a
// batch, for errors.
var (
	producerFields = [...]string{"producer id", "epoch", "coordinator epoch", "transaction first offset", "last timestamp", "last seen", "last applied"}
	nextFields     = [...]string{"producer id delta", "epoch", "coordinator epoch", "transaction first offset", "last timestamp", "last seen", "last applied"}
	batchFields    = [...]string{"first sequence", "sequence span", "first offset", "offset span", "timestamp delta"}
	laterFields    = [...]string{"sequence gap", "sequence span", "offset gap", "offset span", "timestamp delta"}
)

// producers reads the next len(dst) producers into dst, their windows
// into batches, and returns how many batches it used. On a failure it
// stops, with d.err set; the entries read by then mean nothing.
//
// It reads the varints of a producer, and those of a batch, in one call
// of uvarints each, and checks their ranges afterwards: the position of
// a field is worked out only for an error.
func (d *decoder) producers(dst []producerstate.Entry, batches []producerstate.BatchMeta) (used int) {
	nf := len(producerFields)
	if d.version == valueVersion1 {
		nf -= 2 // no seen time, no last applied offset
	}
	var f [len(producerFields)]uint64
	for i := range dst {
		e := &dst[i]
		at := d.pos
		names := producerFields[:nf]
		if !d.first {
			names = nextFields[:nf]
		}
		if !d.uvarints(f[:nf], names) {
			return used
		}
		if d.first {
			e.ProducerID = unzigzag(f[0])
			d.first = false
		} else {
			delta := f[0]
			if delta == 0 || delta > uint64(math.MaxInt64)-uint64(d.prevID) {
				d.fail(at, "producer id delta %d after %d is not in [1, %d]", delta, d.prevID, uint64(math.MaxInt64)-uint64(d.prevID))
				return used
			}
			e.ProducerID = int64(uint64(d.prevID) + delta)
		}
		d.prevID = e.ProducerID
		epoch, coord := unzigzag(f[1]), unzigzag(f[2])
		if epoch != int64(int16(epoch)) {
			d.fail(d.fieldPos(at, 1), "epoch %d is out of range [%d, %d]", epoch, math.MinInt16, math.MaxInt16)
			return used
		}
		if coord != int64(int32(coord)) {
			d.fail(d.fieldPos(at, 2), "coordinator epoch %d is out of range [%d, %d]", coord, math.MinInt32, math.MaxInt32)
			return used
		}
		e.Epoch, e.CoordinatorEpoch = int16(epoch), int32(coord)
		e.TxnFirstOffset, e.LastTimestamp = unzigzag(f[3]), unzigzag(f[4])
		e.LastSeen, e.LastApplied = producerstate.SeenUnknown, -1
		if d.version != valueVersion1 {
			e.LastSeen = e.LastTimestamp + unzigzag(f[5])
			e.LastApplied = d.offset - 1 - unzigzag(f[6])
		}

		at = d.pos
		if at >= len(d.b) {
			d.fail(at, "window length: cut off by the end of the value")
			return used
		}
		k := int(d.b[at])
		d.pos++
		switch {
		case k > producerstate.WindowSize:
			d.fail(at, "window of %d batches, more than %d", k, producerstate.WindowSize)
		case k > d.left()/minBatchSize:
			d.fail(at, "%d batches cannot fit in the %d bytes left", k, d.left())
		case used+k > len(batches):
			// Not reached: the bound above is what batches was made for.
			d.fail(at, "%d batches after %d, more than the %d the value can hold", k, used, len(batches))
		}
		if d.err != nil {
			return used
		}
		e.Batches = nil
		if k == 0 {
			continue
		}
		w := batches[used : used+k : used+k]
		used += k
		// Each batch: first sequence, sequence span, first offset,
		// offset span, timestamp; the first relative to the producer's
		// fields and every later one to the batch before it.
		lastSeq, lastOffset, ts := int32(-1), int64(-1), e.LastTimestamp
		var g [len(batchFields)]uint64
		for j := range w {
			at := d.pos
			names := batchFields[:]
			if j > 0 {
				names = laterFields[:]
			}
			if !d.uvarints(g[:], names) {
				return used
			}
			gap, span := unzigzag(g[0]), unzigzag(g[1])
			if gap != int64(int32(gap)) {
				d.fail(at, "%s %d is out of range [%d, %d]", names[0], gap, math.MinInt32, math.MaxInt32)
				return used
			}
			if span != int64(int32(span)) {
				d.fail(d.fieldPos(at, 1), "%s %d is out of range [%d, %d]", names[1], span, math.MinInt32, math.MaxInt32)
				return used
			}
			m := &w[j]
			if j == 0 {
				m.FirstSeq = int32(gap)
				m.FirstOffset = unzigzag(g[2])
			} else {
				m.FirstSeq = lastSeq + 1 + int32(gap)
				m.FirstOffset = lastOffset + 1 + unzigzag(g[2])
			}
			m.LastSeq = m.FirstSeq + int32(span)
			m.LastOffset = m.FirstOffset + unzigzag(g[3])
			m.Timestamp = ts + unzigzag(g[4])
			lastSeq, lastOffset, ts = m.LastSeq, m.LastOffset, m.Timestamp
		}
		e.Batches = w
		if d.version == valueVersion1 {
			e.LastApplied = lastOffset // the newest batch's, the best version 1 knows
		}
	}
	return used
}

// uvarints reads len(dst) unsigned varints, each in its minimal
// encoding; names[i] names dst[i] in an error. It reports whether all
// were read. The common one- and two-byte cases take no call.
func (d *decoder) uvarints(dst []uint64, names []string) bool {
	b, p := d.b, d.pos
	for i := range dst {
		if uint(p) < uint(len(b)) {
			if c := b[p]; c < 0x80 {
				dst[i] = uint64(c)
				p++
				continue
			} else if p+1 < len(b) && b[p+1] < 0x80 && b[p+1] != 0 { // two bytes, minimal
				dst[i] = uint64(c&0x7f) | uint64(b[p+1])<<7
				p += 2
				continue
			}
		}
		d.pos = p
		dst[i] = d.uvarintSlow(names[i])
		if d.err != nil {
			return false
		}
		p = d.pos
	}
	d.pos = p
	return true
}

// fieldPos is the position of the i-th varint of the run that starts at
// from, which uvarints has read: for an error.
func (d *decoder) fieldPos(from, i int) int {
	for ; i > 0; i-- {
		_, n := binary.Uvarint(d.b[from:])
		from += n
	}
	return from
}

func (d *decoder) left() int { return len(d.b) - d.pos }

func (d *decoder) errorf(pos int, sentinel error, format string, args ...any) error {
	return &DecodeError{Offset: d.key, Pos: pos, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// fail records a corruption at byte pos, unless a failure is recorded
// already.
func (d *decoder) fail(pos int, format string, args ...any) {
	if d.err == nil {
		d.err = d.errorf(pos, ErrCorrupt, format, args...)
	}
}

// uvarint reads an unsigned varint in its minimal encoding (for the
// header; producers and batches use uvarints). After a failure it
// returns 0.
func (d *decoder) uvarint(what string) uint64 {
	var v [1]uint64
	d.uvarints(v[:], []string{what})
	return v[0]
}

// uvarintSlow reads the varint at the position the long way, for
// uvarints: any length, and the error when it is not there.
func (d *decoder) uvarintSlow(what string) uint64 {
	if d.err != nil {
		return 0
	}
	b := d.b[d.pos:]
	if len(b) >= 2 && b[1] < 0x80 && b[1] != 0 { // two bytes, minimal
		d.pos += 2
		return uint64(b[0]&0x7f) | uint64(b[1])<<7
	}
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		d.fail(d.pos, "%s: varint cut off by the end of the value", what)
		return 0
	case n < 0:
		d.fail(d.pos, "%s: varint overflows 64 bits", what)
		return 0
	case b[n-1] == 0:
		// A last byte of 0 adds nothing: a shorter encoding exists.
		d.fail(d.pos, "%s: varint of %d bytes for a value that takes %d", what, n, uvarintLen(v))
		return 0
	}
	d.pos += n
	return v
}

// finish returns the decoder's error, or a corruption when the value
// does not end where the reading did.
func (d *decoder) finish() error {
	if d.err == nil && d.pos != len(d.b) {
		d.fail(d.pos, "%d trailing bytes after the last producer", len(d.b)-d.pos)
	}
	return d.err
}

// uvarintLen is the length of v's minimal uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// unzigzag is the signed value of a zigzag varint.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
