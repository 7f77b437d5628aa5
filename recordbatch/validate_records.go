package recordbatch

import (
	"errors"
	"fmt"
	"sync"
)

// Validating the records of a batch, before a store keeps it.
//
// Validate and ValidateClient read only the header: a batch whose CRC is
// right may still hold records no reader can decode (a record length or
// header count of 2^31-1, a record count the records section does not
// hold, a compressed section that is not a valid stream, or one that
// inflates to gigabytes). Once stored, such a batch fails every reader
// from its offset on. ValidateRecords and ValidateClientRecords decode
// every record, as Kafka's broker does in its LogValidator before it
// appends, so such a batch is never stored.

// ValidateClientRecords decodes every record of b, a batch as a producer
// sends it, and checks what any reader will rely on: every record decodes
// (varints of at most 5 or 10 bytes, lengths and counts within what is
// left, header keys present, nothing left over in a record), the record
// count equals the records present with no bytes after the last one, the
// offset deltas are 0, 1, ..., count-1 in order (the last one the
// header's LastOffsetDelta), and a compressed
// section is a valid stream that inflates to at most limit bytes (limit
// <= 0 means DefaultMaxRecordsBytes); a bomb is refused once limit bytes
// are out, without inflating the rest.
//
// Kafka's broker rewrites a compressed batch whose inner offsets are not
// 0..n-1 (and ignores them in an uncompressed one); a store that keeps
// the producer's bytes as they are refuses such a batch instead, since a
// reader would derive wrong offsets from it.
//
// The error is a *CorruptionError (Section "records", Offset in the
// uncompressed records section) wrapping ErrRecord, or ErrDecompress or
// ErrTooLarge for the compressed section; its message names the record
// (its index from 0) and its byte position, in the batch for an
// uncompressed one and in the decompressed records for a compressed one
// (or, when the section does not inflate, the section's position).
// It uses a pooled reader, so a call allocates nothing once the pool's
// buffers have grown.
func ValidateClientRecords(b Batch, limit int) error {
	r := readerPool.Get().(*RecordReader)
	err := r.ValidateClientRecords(b, limit)
	r.release()
	readerPool.Put(r)
	return err
}

// ValidateRecords decodes every record of b, a batch as a log may hold
// it, with ValidateClientRecords' checks but one: compaction removes
// records and keeps their batch's offset range, so the offset deltas need
// only increase and lie within 0..LastOffsetDelta, and an empty batch is
// valid whatever follows its header (Kafka reads nothing of it).
func ValidateRecords(b Batch, limit int) error {
	r := readerPool.Get().(*RecordReader)
	err := r.ValidateRecords(b, limit)
	r.release()
	readerPool.Put(r)
	return err
}

// ValidateClientRecords is the package function of that name, with r's
// buffers. It resets r: iterate again with Reset.
func (r *RecordReader) ValidateClientRecords(b Batch, limit int) error {
	return r.validate(b, limit, true)
}

// ValidateRecords is the package function of that name, with r's
// buffers. It resets r: iterate again with Reset.
func (r *RecordReader) ValidateRecords(b Batch, limit int) error {
	return r.validate(b, limit, false)
}

// readerPool holds the readers of the package functions, with their
// decompression buffers.
var readerPool = sync.Pool{New: func() any { return new(RecordReader) }}

// maxPooledBuffer is the largest decompression buffer a pooled reader
// keeps: a rare batch that inflates to more does not pin that memory.
const maxPooledBuffer = 8 << 20

// release drops what r holds of the last batch before r goes back to the
// pool.
func (r *RecordReader) release() {
	clear(r.hdrs[:cap(r.hdrs)])
	buf := r.buf
	if cap(buf) > maxPooledBuffer {
		buf = nil
	}
	*r = RecordReader{buf: buf[:0], hdrs: r.hdrs[:0]}
}

func (r *RecordReader) validate(b Batch, limit int, client bool) error {
	codec := b.Attributes().Codec()
	if err := r.Reset(b, limit); err != nil {
		var ce *CorruptionError
		if codec == CodecNone || !errors.As(err, &ce) {
			return err
		}
		return atRecord(err, -1, "the %s-compressed records section at byte %d of the batch", codec, HeaderSize+int(ce.Offset))
	}
	count, lastDelta := b.NumRecords(), b.LastOffsetDelta()
	if walkRecords(r.data, count, lastDelta, client) {
		return nil
	}
	// Something is wrong: decode again with the reader, which says what
	// and where (the section is inflated already).
	compressed := codec != CodecNone
	// where names a position in the records section as the message does.
	where := func(off int) string {
		if compressed {
			return fmt.Sprintf("byte %d of the decompressed records", off)
		}
		return fmt.Sprintf("byte %d of the batch", HeaderSize+off)
	}
	prev := int32(-1)
	for i := int32(0); ; i++ {
		start := r.pos
		if !r.Next() {
			err := r.Err()
			switch {
			case err == nil && client && i > 0 && prev != lastDelta:
				return withRecord(recordsErr(r.pos, ErrRecordCount, "the last record (record %d) has offset delta %d, the header's last offset delta is %d", i-1, prev, lastDelta), i-1)
			case err == nil:
				return nil
			case r.left == 0:
				return atRecord(err, -1, "after the last record (record %d), at %s", i-1, where(r.pos))
			case r.pos == len(r.data):
				return atRecord(err, i, "record %d at %s: the header claims %d records, the records section holds %d", i, where(r.pos), count, i)
			}
			return atRecord(err, i, "record %d at %s", i, where(start))
		}
		d := r.rec.OffsetDelta
		switch {
		case client && d != i:
			return withRecord(recordsErr(start, ErrRecord, "record %d at %s: offset delta %d, want %d (a producer numbers the records of a batch 0, 1, 2, ...)", i, where(start), d, i), i)
		case !client && (d <= prev || d > lastDelta):
			return withRecord(recordsErr(start, ErrRecord, "record %d at %s: offset delta %d, want above %d and at most the last offset delta %d", i, where(start), d, prev, lastDelta), i)
		}
		prev = d
	}
}

// atRecord returns err, a *CorruptionError, with what prefix says
// (the record and where it is) put before its detail, wrapping the same
// sentinel, and naming record index rec (none when rec < 0).
func atRecord(err error, rec int32, format string, args ...any) error {
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	sentinel, msg := ce.Err, fmt.Sprintf(format, args...)
	if d, ok := ce.Err.(*detailError); ok {
		sentinel = d.check
		if d.detail != "" {
			msg += ": " + d.detail
		}
	}
	return withRecord(&CorruptionError{Section: ce.Section, Offset: ce.Offset, Err: detail(sentinel, "%s", msg)}, rec)
}

// withRecord sets the record index that err, a *CorruptionError, names
// (none when rec < 0), and returns it.
func withRecord(err error, rec int32) error {
	if ce, ok := err.(*CorruptionError); ok && rec >= 0 {
		ce.record = int64(rec) + 1
	}
	return err
}

// walkRecords is the fast path of validate: it walks count records of
// data with RecordReader.decode's checks and validate's offset-delta
// rule, without filling a Record, and reports whether all of it is
// valid. It must agree with validate's slow path both ways: the fuzz
// target FuzzValidateRecords compares the two on every uncompressed
// section with records (compressed ones are not compared). When it
// says no, the slow path finds the error and its place. Measured on
// 2026-12-01 (go test -bench 'ValidateClientRecords/codec=none$', a
// 100-record 18.6 KB batch, 7 runs each, alternating, on a shared
// machine): 3.4-7.9 µs per batch, median 4.35, with the walk; 4.1-6.4,
// median 5.3, with the reader alone.
func walkRecords(data []byte, count, lastDelta int32, client bool) bool {
	pos, prev := 0, int32(-1)
	for i := int32(0); i < count; i++ {
		size, n := readVarint(data[pos:])
		if n <= 0 || size < 1 || int(size) > len(data)-pos-n {
			return false
		}
		body := data[pos+n : pos+n+int(size)]
		pos += n + int(size)
		p := 1 // attributes
		if _, n = readVarlong(body[p:]); n <= 0 {
			return false
		}
		p += n
		d, n := readVarint(body[p:])
		if n <= 0 || client && d != i || !client && (d <= prev || d > lastDelta) {
			return false
		}
		p += n
		prev = d
		for range 2 { // key and value: length, -1 for null
			l, n := readVarint(body[p:])
			if n <= 0 || int(l) > len(body)-p-n {
				return false
			}
			p += n + max(int(l), 0)
		}
		headers, n := readVarint(body[p:])
		if n <= 0 || headers < 0 || int(headers) > (len(body)-p-n)/2 {
			return false
		}
		p += n
		for range headers {
			k, n := readVarint(body[p:])
			if n <= 0 || k < 0 || int(k) > len(body)-p-n {
				return false
			}
			p += n + int(k)
			v, n := readVarint(body[p:])
			if n <= 0 || int(v) > len(body)-p-n {
				return false
			}
			p += n + max(int(v), 0)
		}
		if p != len(body) {
			return false
		}
	}
	if client && count > 0 && prev != lastDelta {
		return false
	}
	return pos == len(data)
}
