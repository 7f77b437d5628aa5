package kafkadump

// The .log dump: DumpLogSegments.dumpLog and printBatchLevel of Kafka 3.x
// (core/src/main/scala/kafka/tools/DumpLogSegments.scala), line for line,
// over batches read the way FileLogInputStream.nextBatch reads them.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/logstore/logstore/recordbatch"
)

const (
	// maxInflatedRecords bounds what one compressed batch may inflate to.
	maxInflatedRecords = recordbatch.DefaultMaxRecordsBytes
)

// dumpError names the file (as given) and the byte position in it where
// the dump failed.
type dumpError struct {
	file javaFile
	pos  int64
	err  error
}

func (e *dumpError) Error() string {
	return fmt.Sprintf("%s: position %d: %v", e.file, e.pos, e.err)
}

func (e *dumpError) Unwrap() error { return e.err }

// fileState is what one dumpLog call tracks: the file, and the previous
// record offset of the non-consecutive check (-1 before the first record,
// and, as in Kafka, after a record whose offset is -1).
type fileState struct {
	file       javaFile
	absPath    string
	lastOffset int64
}

// dumpLog prints one .log file: the starting offset, every batch that lies
// wholly within the first --max-bytes bytes, and the size of what is left
// when --max-bytes is at its default.
func (d *dumper) dumpLog(f javaFile, start int64) error {
	if !d.opts.JSON {
		d.printf("Log starting offset: %d\n", start)
	}
	file, size, err := openDumpLog(f)
	if err != nil {
		return err
	}
	defer file.Close()
	end := min(size, int64(d.opts.MaxBytes))
	d.seg.reset(file, end)
	st := fileState{file: f, lastOffset: -1}
	var valid int64
	for {
		b, err := d.seg.next()
		if err != nil {
			return &dumpError{file: f, pos: d.seg.pos, err: err}
		}
		if b == nil {
			break
		}
		if err := d.dumpBatch(&st, b, valid); err != nil {
			return err
		}
		valid += int64(b.Size())
		if d.werr != nil {
			return fmt.Errorf("writing the output: %w", d.werr)
		}
		d.progress(f, valid, end)
	}
	if trailing := end - valid; trailing > 0 && d.opts.MaxBytes == DefaultMaxBytes {
		if d.opts.JSON {
			d.line = djBegin(d.line[:0], "invalidBytes", f.path)
			d.line = djInt(d.line, "position", valid)
			d.write(djEnd(djInt(d.line, "size", trailing)))
		} else {
			d.printf("Found %d invalid bytes at the end of %s\n", trailing, f.Name())
		}
	}
	return nil
}

// openDumpLog opens a segment's .log as FileRecords.open does, refusing one
// larger than Kafka's segments can be.
func openDumpLog(f javaFile) (*os.File, int64, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, 0, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	size := info.Size()
	if size > math.MaxInt32 {
		file.Close()
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return nil, 0, fmt.Errorf("The size of segment %s (%d) is larger than the maximum allowed segment size of %d", f, size, math.MaxInt32)
	}
	return file, size, nil
}

// segmentReader reads batches one at a time through a small buffer, into
// one reused batch buffer, exactly as far as Kafka's FileLogInputStream
// would: it stops quietly when fewer than 18 bytes are left, or when a
// batch runs past the end (a torn write, or the --max-bytes limit).
type segmentReader struct {
	r   *bufio.Reader
	end int64 // end of the slice: file size or --max-bytes
	pos int64 // position of the next batch
	buf []byte
}

func (s *segmentReader) reset(f *os.File, end int64) {
	src := io.NewSectionReader(f, 0, end)
	if s.r == nil {
		s.r = bufio.NewReaderSize(src, 64<<10)
	} else {
		s.r.Reset(src)
	}
	s.end, s.pos = end, 0
}

// next returns the next batch, or nil at the end. A returned batch is
// valid until the next call. On error, s.pos is where the batch starts.
func (s *segmentReader) next() (recordbatch.Batch, error) {
	left := s.end - s.pos
	if !recordbatch.HasFrameHead(left) {
		return nil, nil
	}
	if cap(s.buf) < recordbatch.HeaderSizeUpToMagic {
		s.buf = make([]byte, 64<<10)
	}
	hdr := s.buf[:recordbatch.HeaderSizeUpToMagic]
	if _, err := io.ReadFull(s.r, hdr); err != nil {
		return nil, fmt.Errorf("reading the batch header: %w", noEOF(err))
	}
	f, stop := recordbatch.NextFrame(hdr, left)
	switch stop {
	case recordbatch.FrameTooSmall:
		return nil, recordSizeErr(f)
	case recordbatch.FrameShortTail, recordbatch.FramePastEnd:
		return nil, nil
	}
	size := f.Size
	if magic := f.Magic; magic != recordbatch.Magic {
		if magic < recordbatch.Magic {
			return nil, fmt.Errorf("a magic v%d message set (legacy format, before Kafka 0.11) is %w", magic, ErrNotSupported)
		}
		return nil, fmt.Errorf("magic %d: %w", magic, recordbatch.ErrMagic)
	}
	if int64(cap(s.buf)) < size {
		grown := make([]byte, min(max(size, 2*int64(cap(s.buf))), s.end))
		copy(grown, hdr)
		s.buf = grown
	}
	buf := s.buf[:size]
	if _, err := io.ReadFull(s.r, buf[recordbatch.HeaderSizeUpToMagic:]); err != nil {
		return nil, fmt.Errorf("reading a batch of %d bytes: %w", size, noEOF(err))
	}
	b, err := recordbatch.Parse(buf, 0)
	if err != nil {
		return nil, err
	}
	s.pos += size
	return b, nil
}

// recordSizeErr is Kafka's exception for a length field below
// RECORD_OVERHEAD_V0, the one framing stop that is an error.
func recordSizeErr(f recordbatch.Frame) error {
	//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
	return fmt.Errorf("Found record size %d smaller than minimum record overhead (%d)", f.Length, recordbatch.MinRecordOverhead)
}

// noEOF reports a file that ends before the size it had when opened.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// dumpBatch prints the batch line and, with deep iteration, a line per
// record. Like Kafka, it decodes every record of a compressed batch before
// it prints any, and prints the records of an uncompressed batch up to the
// first that fails to decode.
func (d *dumper) dumpBatch(st *fileState, b recordbatch.Batch, pos int64) error {
	attrs := b.Attributes()
	codec := attrs.Codec()
	if !codec.Valid() {
		// Kafka throws while it prints the batch line.
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return &dumpError{file: st.file, pos: pos, err: fmt.Errorf("Unknown compression type id: %d: %w", codec, recordbatch.ErrUnknownCodec)}
	}
	// isvalid is Kafka's isValid: the CRC check alone.
	valid := !errors.Is(b.Validate(), recordbatch.ErrCRC)
	if d.opts.JSON {
		d.line = dumpBatchJSON(d.line[:0], st.file.path, b, pos, valid)
	} else {
		d.line = appendBatchLine(d.line[:0], b, pos, valid)
	}
	d.write(d.line)

	count := b.NumRecords()
	if !d.opts.DeepIteration || count == 0 {
		return nil // Kafka's iterator of an empty batch reads nothing
	}
	batchErr := func(err error) error { return &dumpError{file: st.file, pos: pos, err: err} }
	if count < 0 {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return batchErr(fmt.Errorf("Found invalid record count %d in magic v2 batch: %w", count, recordbatch.ErrRecordCount))
	}
	src := b
	if codec != recordbatch.CodecNone {
		plain, err := d.decompress(b)
		if err != nil {
			return batchErr(err)
		}
		// Kafka decodes the whole batch before printing a record of it.
		if err := d.rr.Reset(plain, 0); err != nil {
			return batchErr(err)
		}
		for d.rr.Next() {
		}
		if err := d.rr.Err(); err != nil {
			return batchErr(fmt.Errorf("decompressed records: %w", err))
		}
		src = plain
	}
	if err := d.rr.Reset(src, 0); err != nil {
		return batchErr(err)
	}
	// Each line waits until the next record decodes: when the last record
	// leaves bytes behind, Kafka fails before it prints that record.
	pending := false
	var read int32
	for d.rr.Next() {
		read++
		if pending {
			d.write(d.line)
		}
		line, err := d.appendRecordLine(d.line[:0], st, b, d.rr.Record())
		d.line = line
		if err != nil {
			return batchErr(err)
		}
		pending = true
	}
	if err := d.rr.Err(); err != nil {
		if pending && read < count {
			d.write(d.line)
		}
		if codec == recordbatch.CodecNone {
			var ce *recordbatch.CorruptionError
			if errors.As(err, &ce) && ce.Section == "records" {
				return &dumpError{file: st.file, pos: pos + recordbatch.HeaderSize + ce.Offset, err: fmt.Errorf("in the batch at position %d: %w", pos, err)}
			}
		}
		return batchErr(err)
	}
	if pending {
		d.write(d.line)
	}
	return nil
}

// decompress returns b rebuilt with its records section inflated and the
// codec set to none, so that its records can be read twice without
// inflating them twice.
func (d *dumper) decompress(b recordbatch.Batch) (recordbatch.Batch, error) {
	attrs := b.Attributes()
	inflated, err := recordbatch.Decompress(d.inflated[:0], attrs.Codec(), b.Records(), maxInflatedRecords)
	if err != nil {
		return nil, err
	}
	d.inflated = inflated
	h := b.Header()
	h.Attributes = recordbatch.MakeAttributes(recordbatch.CodecNone, attrs.TimestampType(), attrs.Transactional(), attrs.Control(), attrs.HasDeleteHorizon())
	d.plain = recordbatch.AppendBatch(d.plain[:0], h, d.inflated)
	return recordbatch.Batch(d.plain), nil
}

// appendBatchLine formats printBatchLevel's line for a v2 batch.
func appendBatchLine(dst []byte, b recordbatch.Batch, pos int64, valid bool) []byte {
	attrs := b.Attributes()
	dst = append(dst, "baseOffset: "...)
	dst = strconv.AppendInt(dst, b.BaseOffset(), 10)
	dst = append(dst, " lastOffset: "...)
	dst = strconv.AppendInt(dst, b.LastOffset(), 10)
	dst = append(dst, " count: "...)
	dst = strconv.AppendInt(dst, int64(b.NumRecords()), 10)
	dst = append(dst, " baseSequence: "...)
	dst = strconv.AppendInt(dst, int64(b.BaseSequence()), 10)
	dst = append(dst, " lastSequence: "...)
	dst = strconv.AppendInt(dst, int64(b.LastSequence()), 10)
	dst = append(dst, " producerId: "...)
	dst = strconv.AppendInt(dst, b.ProducerID(), 10)
	dst = append(dst, " producerEpoch: "...)
	dst = strconv.AppendInt(dst, int64(b.ProducerEpoch()), 10)
	dst = append(dst, " partitionLeaderEpoch: "...)
	dst = strconv.AppendInt(dst, int64(b.PartitionLeaderEpoch()), 10)
	dst = append(dst, " isTransactional: "...)
	dst = strconv.AppendBool(dst, attrs.Transactional())
	dst = append(dst, " isControl: "...)
	dst = strconv.AppendBool(dst, attrs.Control())
	dst = append(dst, " deleteHorizonMs: "...)
	if h, ok := b.DeleteHorizonMs(); ok {
		dst = append(dst, "OptionalLong["...)
		dst = strconv.AppendInt(dst, h, 10)
		dst = append(dst, ']')
	} else {
		dst = append(dst, "OptionalLong.empty"...)
	}
	dst = append(dst, " position: "...)
	dst = strconv.AppendInt(dst, pos, 10)
	dst = append(dst, ' ')
	dst = append(dst, attrs.TimestampType().String()...)
	dst = append(dst, ": "...)
	dst = strconv.AppendInt(dst, b.MaxTimestamp(), 10)
	dst = append(dst, " size: "...)
	dst = strconv.AppendInt(dst, int64(b.Size()), 10)
	dst = append(dst, " magic: "...)
	dst = strconv.AppendInt(dst, int64(b.Magic()), 10)
	dst = append(dst, " compresscodec: "...)
	dst = append(dst, attrs.Codec().String()...)
	dst = append(dst, " crc: "...)
	dst = strconv.AppendUint(dst, uint64(b.CRC()), 10)
	dst = append(dst, " isvalid: "...)
	dst = strconv.AppendBool(dst, valid)
	return append(dst, '\n')
}

// appendRecordLine formats one record as dumpLog's deep iteration does,
// with its quirks: after the metadata, or after a key, the separator is
// " "; without metadata a key starts with "| " but a payload with " " only,
// and a control record prints an empty line. With --json it formats the
// record's JSON line instead, and the non-consecutive offset found at it.
func (d *dumper) appendRecordLine(dst []byte, st *fileState, b recordbatch.Batch, rec *recordbatch.Record) ([]byte, error) {
	prev, gap := d.checkConsecutive(st, rec.Offset)
	if d.opts.JSON {
		dst, err := d.appendRecordJSON(dst, st.file.path, b, rec)
		if err == nil && gap {
			dst = djBegin(dst, "nonConsecutive", st.file.path)
			dst = djInt(dst, "offset", prev)
			dst = djEnd(djInt(dst, "nextOffset", rec.Offset))
		}
		return dst, err
	}
	control := b.Attributes().Control()
	prefix := "| "
	if !d.opts.SkipRecordMetadata {
		dst = append(dst, "| offset: "...)
		dst = strconv.AppendInt(dst, rec.Offset, 10)
		dst = append(dst, ' ')
		dst = append(dst, b.Attributes().TimestampType().String()...)
		dst = append(dst, ": "...)
		dst = strconv.AppendInt(dst, rec.Timestamp, 10)
		dst = append(dst, " keySize: "...)
		dst = strconv.AppendInt(dst, int64(nullableLen(rec.Key)), 10)
		dst = append(dst, " valueSize: "...)
		dst = strconv.AppendInt(dst, int64(nullableLen(rec.Value)), 10)
		prefix = " "
		dst = append(dst, " sequence: "...)
		dst = strconv.AppendInt(dst, int64(rec.Sequence), 10)
		dst = append(dst, " headerKeys: ["...)
		for i, h := range rec.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJavaString(dst, h.Key)
		}
		dst = append(dst, ']')
		if control {
			var err error
			if dst, err = appendControl(dst, rec); err != nil {
				return dst, fmt.Errorf("control record at offset %d: %w", rec.Offset, err)
			}
		}
	}
	if d.opts.PrintDataLog && !control {
		if rec.Key != nil {
			dst = append(dst, prefix...)
			dst = append(dst, "key: "...)
			dst = d.opts.KeyDecoder.appendText(dst, rec.Key)
		}
		if rec.Value != nil {
			dst = append(dst, " payload: "...)
			dst = d.opts.ValueDecoder.appendText(dst, rec.Value)
		}
	}
	return append(dst, '\n'), nil
}

// checkConsecutive is dumpLog's non-consecutive offset check, across all
// batches of one file. It returns the previous offset and whether offset
// does not follow it.
func (d *dumper) checkConsecutive(st *fileState, offset int64) (int64, bool) {
	prev := st.lastOffset
	st.lastOffset = offset
	if prev == -1 || offset == prev+1 {
		return prev, false
	}
	if !d.opts.JSON {
		if st.absPath == "" {
			st.absPath = d.absPath(st.file)
		}
		d.gaps.put(st.absPath, prev, offset)
	}
	return prev, true
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// appendControl prints what dumpLog prints for a control record: the end
// transaction marker for ABORT and COMMIT, the type and id for the others.
// The types Kafka prints as JSON are refused rather than printed wrong.
func appendControl(dst []byte, rec *recordbatch.Record) ([]byte, error) {
	t, err := recordbatch.ParseControlKey(rec.Key)
	if err != nil {
		return dst, err
	}
	id := int16(binary.BigEndian.Uint16(rec.Key[2:4]))
	switch t {
	case recordbatch.ControlAbort, recordbatch.ControlCommit:
		m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
		if err != nil {
			return dst, err
		}
		dst = append(dst, " endTxnMarker: "...)
		dst = append(dst, m.Type.String()...)
		dst = append(dst, " coordinatorEpoch: "...)
		return strconv.AppendInt(dst, int64(m.CoordinatorEpoch), 10), nil
	case recordbatch.ControlSnapshotHeader, recordbatch.ControlSnapshotFooter,
		recordbatch.ControlKRaftVersion, recordbatch.ControlKRaftVoters:
		return dst, fmt.Errorf("type %s(%d), which Kafka prints as JSON, is %w (--skip-record-metadata leaves it out)", t, id, ErrNotSupported)
	default:
		dst = append(dst, " controlType: "...)
		dst = append(dst, t.String()...)
		dst = append(dst, '(')
		dst = strconv.AppendInt(dst, int64(id), 10)
		return append(dst, ')'), nil
	}
}
