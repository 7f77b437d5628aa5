package recordbatch

// RecordHeader is one record header. A nil Value is a null value; the key
// is never null on the wire (a nil Key is written as the empty string).
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// Record is one decoded record. Key and Value are nil when null. The
// first group of fields is what the record holds on the wire; Offset,
// Timestamp and Sequence are derived from the batch header as Kafka
// derives them.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader

	Offset    int64 // baseOffset + OffsetDelta
	Timestamp int64 // baseTimestamp + TimestampDelta; maxTimestamp for LogAppendTime
	Sequence  int32 // baseSequence advanced by OffsetDelta with wrap; -1 without one
}

// RecordReader iterates the records of one batch at a time. It reuses its
// buffers: after the first few batches, iterating allocates nothing. The
// Record it returns, and the slices in it, point into the batch or into
// the reader's buffers and are valid until the next call to Next or Reset.
// A RecordReader is not safe for concurrent use.
//
//	var r recordbatch.RecordReader
//	if err := r.Reset(batch, limit); err != nil { ... }
//	for r.Next() {
//		rec := r.Record()
//	}
//	if err := r.Err(); err != nil { ... }
type RecordReader struct {
	data     []byte // uncompressed records section
	buf      []byte // decompression buffer, reused
	hdrs     []RecordHeader
	pos      int
	body     int   // position of the current record body in data
	left     int32 // records still to read
	baseOff  int64
	baseTS   int64
	appendTS int64 // maxTimestamp when LogAppendTime, else -1
	baseSeq  int32
	rec      Record
	err      error
}

// Reset starts iterating the records of b, which must come from Parse. Its
// CRC need not have been checked (a dump reads batches whose CRC is
// wrong): everything read from the records is checked. A compressed batch is inflated into the reader's
// buffer first; limit bounds the inflated size (a batch that inflates past
// it fails with ErrTooLarge), and limit <= 0 means no more than
// DefaultMaxRecordsBytes.
func (r *RecordReader) Reset(b Batch, limit int) error {
	*r = RecordReader{buf: r.buf, hdrs: r.hdrs[:0]}
	if limit <= 0 {
		limit = DefaultMaxRecordsBytes
	}
	if b.NumRecords() == 0 {
		// Like Kafka, an empty batch (which compaction may leave) yields
		// nothing, whatever bytes follow its header.
		return nil
	}
	codec := b.Attributes().Codec()
	if codec == CodecNone {
		r.data = b.Records()
	} else {
		out, err := Decompress(r.buf[:0], codec, b.Records(), limit)
		if err != nil {
			r.err = err
			return err
		}
		r.buf, r.data = out, out
	}
	r.left = b.NumRecords()
	if r.left < 0 {
		r.err = batchErr(recordsCountOffset, ErrRecordCount, "Found invalid record count %d in magic v2 batch", r.left)
		return r.err
	}
	r.baseOff = b.BaseOffset()
	r.baseTS = b.BaseTimestamp()
	r.appendTS = NoTimestamp
	if b.Attributes().TimestampType() == LogAppendTime {
		r.appendTS = b.MaxTimestamp()
	}
	r.baseSeq = b.BaseSequence()
	return nil
}

// DefaultMaxRecordsBytes bounds decompression when the caller gives no
// limit: 64 MiB, well above Kafka's default max.message.bytes.
const DefaultMaxRecordsBytes = 64 << 20

// Next decodes the next record. It returns false at the end of the batch
// or on an error, which Err then returns.
func (r *RecordReader) Next() bool {
	if r.err != nil {
		return false
	}
	if r.left == 0 {
		if r.pos != len(r.data) {
			r.err = recordsErr(r.pos, ErrRecord, "Incorrect declared batch size, records still remaining in file")
		}
		return false
	}
	if r.pos == len(r.data) {
		r.err = recordsErr(r.pos, ErrRecord, "Incorrect declared batch size, premature EOF reached")
		return false
	}
	n, err := r.decode(r.data[r.pos:])
	if err != nil {
		r.err = err
		return false
	}
	r.pos += n
	r.left--
	return true
}

// Record returns the record Next decoded.
func (r *RecordReader) Record() *Record { return &r.rec }

// Err returns the first error Next met, or nil.
func (r *RecordReader) Err() error { return r.err }

// decode parses one record at the start of b (r.pos in the section) into
// r.rec, following Kafka's DefaultRecord.readFrom, and returns its size.
func (r *RecordReader) decode(b []byte) (int, error) {
	r.body = r.pos
	size, sn := readVarint(b)
	if sn <= 0 {
		return 0, r.varintErr(0, sn, "record length")
	}
	if size < 0 || int(size) > len(b)-sn {
		return 0, recordsErr(r.pos, ErrRecord, "Invalid record size: expected %d bytes in record payload, but instead the buffer has only %d remaining bytes.", size, len(b)-sn)
	}
	body := b[sn : sn+int(size)]
	r.body = r.pos + sn
	var n int
	p := 0
	rec := &r.rec
	if len(body) < 1 {
		return 0, recordsErr(r.body, ErrRecord, "Found invalid record structure")
	}
	rec.Attributes = int8(body[0])
	p++
	if rec.TimestampDelta, n = readVarlong(body[p:]); n <= 0 {
		return 0, r.varintErr(p, n, "timestamp delta")
	}
	p += n
	if rec.OffsetDelta, n = readVarint(body[p:]); n <= 0 {
		return 0, r.varintErr(p, n, "offset delta")
	}
	p += n
	var err error
	if rec.Key, p, err = r.bytesField(body, p, "key"); err != nil {
		return 0, err
	}
	if rec.Value, p, err = r.bytesField(body, p, "value"); err != nil {
		return 0, err
	}
	count, n := readVarint(body[p:])
	if n <= 0 {
		return 0, r.varintErr(p, n, "header count")
	}
	// Each header takes at least two bytes, so a count above that is a lie
	// and must not size an allocation.
	if count < 0 || int(count) > (len(body)-p-n)/2 {
		return 0, recordsErr(r.body+p, ErrRecord, "Found invalid number of record headers %d", count)
	}
	p += n
	r.hdrs = r.hdrs[:0]
	for i := int32(0); i < count; i++ {
		klen, n := readVarint(body[p:])
		if n <= 0 {
			return 0, r.varintErr(p, n, "header key length")
		}
		if klen < 0 {
			return 0, recordsErr(r.body+p, ErrRecord, "Invalid negative header key size %d", klen)
		}
		if int(klen) > len(body)-p-n {
			return 0, recordsErr(r.body+p, ErrRecord, "Found invalid record structure: header key of %d bytes, %d left", klen, len(body)-p-n)
		}
		p += n
		key := body[p : p+int(klen) : p+int(klen)]
		p += int(klen)
		var val []byte
		if val, p, err = r.bytesField(body, p, "header value"); err != nil {
			return 0, err
		}
		r.hdrs = append(r.hdrs, RecordHeader{Key: key, Value: val})
	}
	if p != len(body) {
		return 0, recordsErr(r.pos, ErrRecord, "Invalid record size: expected to read %d bytes in record payload, but instead read %d", size, p)
	}
	rec.Headers = r.hdrs
	rec.Offset = r.baseOff + int64(rec.OffsetDelta)
	if r.appendTS != NoTimestamp {
		rec.Timestamp = r.appendTS
	} else {
		rec.Timestamp = r.baseTS + rec.TimestampDelta
	}
	rec.Sequence = NoSequence
	if r.baseSeq >= 0 {
		rec.Sequence = IncrementSequence(r.baseSeq, rec.OffsetDelta)
	}
	return sn + int(size), nil
}

// bytesField reads a varint length and that many bytes at body[p:]; a
// negative length is null.
func (r *RecordReader) bytesField(body []byte, p int, what string) ([]byte, int, error) {
	l, n := readVarint(body[p:])
	if n <= 0 {
		return nil, p, r.varintErr(p, n, what+" length")
	}
	if l < 0 {
		return nil, p + n, nil
	}
	if int(l) > len(body)-p-n {
		return nil, p, recordsErr(r.body+p, ErrRecord, "Found invalid record structure: %s of %d bytes, %d left", what, l, len(body)-p-n)
	}
	p += n
	return body[p : p+int(l) : p+int(l)], p + int(l), nil
}

func (r *RecordReader) varintErr(p, n int, what string) error {
	if n == 0 {
		return recordsErr(r.body+p, ErrRecord, "Found invalid record structure: %s cut short", what)
	}
	return recordsErr(r.body+p, ErrRecord, "Varint is too long, the most significant bit in the last byte is set (%s)", what)
}

// DecodeRecords returns copies of all records of b, for callers that keep
// them. It allocates; hot paths use RecordReader.
func (b Batch) DecodeRecords(limit int) ([]Record, error) {
	var r RecordReader
	if err := r.Reset(b, limit); err != nil {
		return nil, err
	}
	var out []Record
	for r.Next() {
		rec := *r.Record()
		rec.Key = cloneBytes(rec.Key)
		rec.Value = cloneBytes(rec.Value)
		rec.Headers = nil
		for _, h := range r.Record().Headers {
			rec.Headers = append(rec.Headers, RecordHeader{Key: cloneBytes(h.Key), Value: cloneBytes(h.Value)})
		}
		out = append(out, rec)
	}
	return out, r.Err()
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// AppendRecord appends one record, encoded as DefaultRecord.writeTo
// does (attributes 0), to dst: the deltas are relative to the batch's
// base timestamp and base offset. A nil key or value is null. It is for
// writers that rebuild a batch's records section themselves, such as
// the cleaner, which keeps each record's offset delta.
func AppendRecord(dst []byte, timestampDelta int64, offsetDelta int32, key, value []byte, headers []RecordHeader) []byte {
	return appendRecord(dst, timestampDelta, offsetDelta, key, value, headers)
}

// appendRecord encodes one record as DefaultRecord.writeTo does.
func appendRecord(dst []byte, tsDelta int64, offDelta int32, key, value []byte, headers []RecordHeader) []byte {
	size := 1 + sizeOfVarlong(tsDelta) + sizeOfVarint(offDelta) +
		sizeOfBytesField(key) + sizeOfBytesField(value) + sizeOfVarint(int32(len(headers)))
	for _, h := range headers {
		size += sizeOfVarint(int32(len(h.Key))) + len(h.Key) + sizeOfBytesField(h.Value)
	}
	if need := len(dst) + sizeOfVarint(int32(size)) + size; need > cap(dst) {
		// Double, as append does only for small slices: a builder of a
		// large batch then leaves twice its records behind, not five times.
		dst = append(make([]byte, 0, max(2*cap(dst), need)), dst...)
	}
	dst = appendVarint(dst, int32(size))
	dst = append(dst, 0) // record attributes: unused, always 0
	dst = appendVarlong(dst, tsDelta)
	dst = appendVarint(dst, offDelta)
	dst = appendBytesField(dst, key)
	dst = appendBytesField(dst, value)
	dst = appendVarint(dst, int32(len(headers)))
	for _, h := range headers {
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytesField(dst, h.Value)
	}
	return dst
}

func sizeOfBytesField(b []byte) int {
	if b == nil {
		return 1
	}
	return sizeOfVarint(int32(len(b))) + len(b)
}

func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
