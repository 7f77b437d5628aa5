package kafkadump

// The .index and .timeindex dumps: DumpLogSegments.dumpIndex and
// dumpTimeIndex of Kafka 3.x, over OffsetIndex and TimeIndex opened
// read-only, reading the index in chunks and the segment's .log only
// where an entry points.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/logstore/logstore/recordbatch"
)

// Kafka's index layouts (OffsetIndex, TimeIndex, AbstractIndex).
const (
	// offsetIndexEntrySize: int32 offset relative to the base, int32 position.
	offsetIndexEntrySize = 8
	// timeIndexEntrySize: int64 timestamp, int32 offset relative to the base.
	timeIndexEntrySize = 12
	// indexWarmSectionBytes is AbstractIndex's warm section: a lookup first
	// searches the last 8192/entrySize entries.
	indexWarmSectionBytes = 8192
	// dumpIndexChunkBytes is how much of an index is read at a time.
	dumpIndexChunkBytes = 64 << 10
)

// dumpIndexError names the index file, the entry and its byte position.
type dumpIndexError struct {
	file  javaFile
	entry int64
	size  int // entry size
	err   error
}

func (e *dumpIndexError) Error() string {
	return fmt.Sprintf("%s: entry %d at byte %d: %v", e.file, e.entry, e.entry*int64(e.size), e.err)
}

func (e *dumpIndexError) Unwrap() error { return e.err }

// dumpIndexFile is an index opened as Kafka opens one read-only: every whole
// entry counts, the zero slots of a preallocated file included.
type dumpIndexFile struct {
	file      javaFile
	f         io.ReaderAt
	length    int64
	entries   int64
	entrySize int
	base      int64
	buf       [timeIndexEntrySize]byte
}

// openDumpIndex opens f as an index of entrySize-byte entries. Kafka creates
// a missing index (and then fails); this opens nothing that is not there.
func openDumpIndex(f javaFile, base int64, entrySize int) (*dumpIndexFile, io.Closer, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, nil, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		file.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", f)
	}
	if info.Size() > math.MaxInt32 {
		file.Close()
		// Kafka maps the whole file, which Java cannot beyond 2 GiB.
		return nil, nil, fmt.Errorf("%s: %d bytes, more than an index can map (%d)", f, info.Size(), math.MaxInt32)
	}
	return newDumpIndexFile(f, file, info.Size(), base, entrySize), file, nil
}

// newDumpIndexFile reads an index of length bytes from r.
func newDumpIndexFile(f javaFile, r io.ReaderAt, length, base int64, entrySize int) *dumpIndexFile {
	return &dumpIndexFile{file: f, f: r, length: length, entries: length / int64(entrySize), entrySize: entrySize, base: base}
}

// at reads entry n.
func (x *dumpIndexFile) at(n int64) ([]byte, error) {
	e := x.buf[:x.entrySize]
	if _, err := x.f.ReadAt(e, n*int64(x.entrySize)); err != nil {
		return nil, &dumpIndexError{x.file, n, x.entrySize, fmt.Errorf("reading the entry: %w", noEOF(err))}
	}
	return e, nil
}

// offsetAt is OffsetIndex.parseEntry: the absolute offset and position.
func (x *dumpIndexFile) offsetAt(n int64) (int64, int32, error) {
	e, err := x.at(n)
	if err != nil {
		return 0, 0, err
	}
	off, pos := parseOffsetIndexEntry(x.base, e)
	return off, pos, nil
}

// parseOffsetIndexEntry reads an .index entry: the offset (relative in
// the file, absolute here) and the position in the log.
func parseOffsetIndexEntry(base int64, e []byte) (int64, int32) {
	return base + int64(int32(binary.BigEndian.Uint32(e))), int32(binary.BigEndian.Uint32(e[4:]))
}

// parseTimeIndexEntry reads a .timeindex entry: the timestamp and the
// offset (relative in the file, absolute here).
func parseTimeIndexEntry(base int64, e []byte) (ts, offset int64) {
	return int64(binary.BigEndian.Uint64(e)), base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// each calls fn for entries 0, 1, ... in order, reading the file in
// chunks, until fn returns false or an error.
func (x *dumpIndexFile) each(buf *[]byte, fn func(n int64, e []byte) (bool, error)) error {
	chunk := dumpIndexChunkBytes / x.entrySize * x.entrySize
	if cap(*buf) < chunk {
		*buf = make([]byte, chunk)
	}
	size := x.entries * int64(x.entrySize)
	for start := int64(0); start < size; start += int64(chunk) {
		b := (*buf)[:min(int64(chunk), size-start)]
		if _, err := x.f.ReadAt(b, start); err != nil {
			return &dumpIndexError{x.file, start / int64(x.entrySize), x.entrySize, fmt.Errorf("reading the index: %w", noEOF(err))}
		}
		for i := 0; i < len(b); i += x.entrySize {
			more, err := fn(start/int64(x.entrySize)+int64(i/x.entrySize), b[i:i+x.entrySize])
			if err != nil || !more {
				return err
			}
		}
	}
	return nil
}

// lookup is OffsetIndex.lookup: the position of the greatest entry whose
// offset is at most target, searched as AbstractIndex searches (the warm
// section first, then a binary search that assumes the entries sorted,
// which the zero slots of an untrimmed file are not), or 0 when there is
// none.
func (x *dumpIndexFile) lookup(target int64) (int32, error) {
	if x.entries == 0 {
		return 0, nil
	}
	firstHot := max(0, x.entries-1-indexWarmSectionBytes/offsetIndexEntrySize)
	off, _, err := x.offsetAt(firstHot)
	if err != nil {
		return 0, err
	}
	lo, hi := int64(0), firstHot
	if off < target {
		lo, hi = firstHot, x.entries-1
	} else {
		first, _, err := x.offsetAt(0)
		if err != nil {
			return 0, err
		}
		if first > target {
			return 0, nil
		}
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		off, _, err := x.offsetAt(mid)
		if err != nil {
			return 0, err
		}
		switch {
		case off > target:
			hi = mid - 1
		case off < target:
			lo = mid
		default:
			lo, hi = mid, mid
		}
	}
	_, pos, err := x.offsetAt(lo)
	return pos, err
}

// dumpSiblingFile is the file of the same segment with another suffix, as
// Kafka finds it: the name up to its first '.', plus suffix, in the same
// directory.
func dumpSiblingFile(f javaFile, suffix string) javaFile {
	name := f.Name()
	dir := f.path[:len(f.path)-len(name)]
	return newJavaFile(dir + name[:strings.IndexByte(name, '.')] + suffix)
}

// dumpSegmentLog is a segment's .log, read where an index points.
type dumpSegmentLog struct {
	file javaFile
	f    io.ReaderAt
	size int64
}

func openDumpSegmentLog(index javaFile) (*dumpSegmentLog, io.Closer, error) {
	lf := dumpSiblingFile(index, ".log")
	f, size, err := openDumpLog(lf)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: opening its segment's log: %w", index, err)
	}
	return &dumpSegmentLog{file: lf, f: f, size: size}, f, nil
}

// dumpBatchHead is what FileLogInputStream.nextBatch learns of a batch, and
// its lastOffset.
type dumpBatchHead struct {
	pos        int64
	size       int64 // length field + 12
	magic      int8
	lastOffset int64
}

// batchAt is FileLogInputStream.nextBatch over the slice [pos, end) of the
// log, followed by the batch's lastOffset: ok is false where Kafka's
// iterator ends (fewer than 18 bytes left, or a batch running past end).
// hdr receives the batch's first 61 bytes.
func (l *dumpSegmentLog) batchAt(hdr *[recordbatch.HeaderSize]byte, pos, end int64) (dumpBatchHead, bool, error) {
	left := end - pos
	if !recordbatch.HasFrameHead(left) {
		return dumpBatchHead{}, false, nil
	}
	n, err := l.f.ReadAt(hdr[:], pos)
	if n < recordbatch.HeaderSizeUpToMagic {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return dumpBatchHead{}, false, l.errorAt(pos, fmt.Errorf("reading the batch header: %w", err))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return dumpBatchHead{}, false, l.errorAt(pos, err)
	}
	f, stop := recordbatch.NextFrame(hdr[:n], left)
	switch stop {
	case recordbatch.FrameTooSmall:
		return dumpBatchHead{}, false, l.errorAt(pos, recordSizeErr(f))
	case recordbatch.FrameShortTail, recordbatch.FramePastEnd:
		return dumpBatchHead{}, false, nil
	}
	h := dumpBatchHead{pos: pos, size: f.Size, magic: f.Magic}
	// lastOffset: a legacy message's offset is its last; a v2 batch's is
	// read from its 61-byte header, which Kafka reads in full even when
	// the batch is shorter.
	h.lastOffset = int64(binary.BigEndian.Uint64(hdr[0:8]))
	if h.magic >= recordbatch.Magic {
		if n < recordbatch.HeaderSize {
			return dumpBatchHead{}, false, l.errorAt(pos, fmt.Errorf("the log ends %d bytes into the batch's %d-byte header", n, recordbatch.HeaderSize))
		}
		h.lastOffset = recordbatch.Batch(hdr[:]).LastOffset()
	}
	return h, true, nil
}

func (l *dumpSegmentLog) errorAt(pos int64, err error) error {
	return &dumpError{file: l.file, pos: pos, err: err}
}

// checkSlice is FileRecords.slice's check of a position read from an
// index.
func (l *dumpSegmentLog) checkSlice(pos int32) error {
	switch {
	case pos < 0:
		return fmt.Errorf("position %d is negative", pos)
	case int64(pos) > l.size:
		return fmt.Errorf("position %d is past the end of %s (%d bytes)", pos, l.file, l.size)
	}
	return nil
}

// dumpOffsetIndex prints an .index file: Kafka's dumpIndex.
func (d *dumper) dumpOffsetIndex(f javaFile, base int64) error {
	log, lc, err := openDumpSegmentLog(f)
	if err != nil {
		return err
	}
	defer lc.Close()
	idx, ic, err := openDumpIndex(f, base, offsetIndexEntrySize)
	if err != nil {
		return err
	}
	defer ic.Close()
	return d.offsetIndex(idx, log)
}

// offsetIndex is dumpOffsetIndex once the files are open.
func (d *dumper) offsetIndex(idx *dumpIndexFile, log *dumpSegmentLog) error {
	f, base := idx.file, idx.base
	if idx.entries == 0 {
		if !d.opts.JSON {
			d.printf("%s is empty.\n", f)
		}
		return nil
	}
	if d.opts.IndexSanityCheck {
		if err := d.offsetIndexSanity(idx); err != nil {
			return err
		}
		d.passedSanityCheck(f)
		return nil
	}
	if d.opts.MaxMessageSize < 0 {
		return fmt.Errorf("%s: --max-message-size %d is negative", f, d.opts.MaxMessageSize)
	}
	var absPath string
	return idx.each(&d.ibuf, func(i int64, e []byte) (bool, error) {
		off, pos := parseOffsetIndexEntry(base, e)
		// A zero slot after the first entry ends the index.
		if off == base && i > 0 {
			return false, nil
		}
		entryErr := func(err error) error { return &dumpIndexError{f, i, offsetIndexEntrySize, err} }
		if err := log.checkSlice(pos); err != nil {
			return false, entryErr(fmt.Errorf("offset %d: %w", off, err))
		}
		end := min(int64(pos)+int64(d.opts.MaxMessageSize), log.size)
		h, ok, err := log.batchAt(&d.hdr, int64(pos), end)
		if err != nil {
			return false, entryErr(fmt.Errorf("offset %d: %w", off, err))
		}
		if !ok {
			return false, entryErr(fmt.Errorf("offset %d: %w", off, dumpNoBatchAt(log, int64(pos), end)))
		}
		if d.opts.JSON {
			if !d.opts.VerifyIndexOnly {
				d.line = djBegin(d.line[:0], "indexEntry", f.path)
				d.line = djInt(d.line, "offset", off)
				d.write(djEnd(djInt(d.line, "position", int64(pos))))
			}
			if h.lastOffset != off {
				d.line = djBegin(d.line[:0], "indexMismatch", f.path)
				d.line = djInt(d.line, "indexOffset", off)
				d.write(djEnd(djInt(d.line, "logOffset", h.lastOffset)))
			}
		} else {
			if h.lastOffset != off {
				if absPath == "" {
					absPath = d.absPath(f)
				}
				d.indexMismatches.put(absPath, off, h.lastOffset)
			}
			if !d.opts.VerifyIndexOnly {
				d.printf("offset: %d position: %d\n", off, pos)
			}
		}
		d.progress(f, i+1, idx.entries)
		return d.werr == nil, nil
	})
}

// dumpNoBatchAt says why Kafka's iterator finds no batch at pos in [pos, end).
func dumpNoBatchAt(log *dumpSegmentLog, pos, end int64) error {
	if left := log.size - pos; !recordbatch.HasFrameHead(left) {
		return fmt.Errorf("no batch at position %d of %s: only %d bytes are left", pos, log.file, left)
	}
	if end < log.size {
		return fmt.Errorf("no batch at position %d of %s within --max-message-size %d bytes", pos, log.file, end-pos)
	}
	return fmt.Errorf("no batch at position %d of %s: the batch there runs past the end of the log", pos, log.file)
}

func (d *dumper) passedSanityCheck(f javaFile) {
	if d.opts.JSON {
		d.line = djBegin(d.line[:0], "sanityCheck", f.path)
		d.write(djEnd(djBool(d.line, "passed", true)))
		return
	}
	d.printf("%s passed sanity check.\n", f)
}

// offsetIndexSanity is OffsetIndex.sanityCheck, with Kafka's messages.
func (d *dumper) offsetIndexSanity(idx *dumpIndexFile) error {
	abs := d.absPath(idx.file)
	last, _, err := idx.offsetAt(idx.entries - 1)
	if err != nil {
		return err
	}
	if last < idx.base {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return fmt.Errorf("Corrupt index found, index file %s has non-zero size but the last offset is %d which is less than the base offset %d", abs, last, idx.base)
	}
	if idx.length%offsetIndexEntrySize != 0 {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return fmt.Errorf("Index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", abs, idx.length, offsetIndexEntrySize)
	}
	return nil
}

// timeIndexSanity is TimeIndex.sanityCheck, with Kafka's messages.
func (d *dumper) timeIndexSanity(idx *dumpIndexFile) error {
	abs := d.absPath(idx.file)
	if idx.entries != 0 {
		e, err := idx.at(idx.entries - 1)
		if err != nil {
			return err
		}
		lastTS, lastOff := parseTimeIndexEntry(idx.base, e)
		e, err = idx.at(0)
		if err != nil {
			return err
		}
		firstTS, _ := parseTimeIndexEntry(idx.base, e)
		if lastTS < firstTS {
			//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
			return fmt.Errorf("Corrupt time index found, time index file (%s) has non-zero size but the last timestamp is %d which is less than the first timestamp %d", abs, lastTS, firstTS)
		}
		if lastOff < idx.base {
			//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
			return fmt.Errorf("Corrupt time index found, time index file (%s) has non-zero size but the last offset is %d which is less than the first offset %d", abs, lastOff, idx.base)
		}
	}
	if idx.length%timeIndexEntrySize != 0 {
		//lint:ignore ST1005 Kafka's own message, kept verbatim for the dump's output
		return fmt.Errorf("Time index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", abs, idx.length, timeIndexEntrySize)
	}
	return nil
}

// dumpTimeIndex prints a .timeindex file: Kafka's dumpTimeIndex. For each
// entry it finds the batch the entry names, from where the offset index
// points, and checks the entry's timestamp against the batch's records.
func (d *dumper) dumpTimeIndex(f javaFile, base int64) error {
	log, lc, err := openDumpSegmentLog(f)
	if err != nil {
		return err
	}
	defer lc.Close()
	offIdx, oc, err := openDumpIndex(dumpSiblingFile(f, ".index"), base, offsetIndexEntrySize)
	if err != nil {
		return fmt.Errorf("%s: opening its segment's offset index: %w", f, err)
	}
	defer oc.Close()
	idx, ic, err := openDumpIndex(f, base, timeIndexEntrySize)
	if err != nil {
		return err
	}
	defer ic.Close()
	return d.timeIndex(idx, offIdx, log)
}

// timeIndex is dumpTimeIndex once the files are open.
func (d *dumper) timeIndex(idx, offIdx *dumpIndexFile, log *dumpSegmentLog) error {
	f, base := idx.file, idx.base
	if d.opts.IndexSanityCheck {
		if err := d.timeIndexSanity(idx); err != nil {
			return err
		}
		d.passedSanityCheck(f)
		return nil
	}
	var absPath string
	report := func(m *scalaReportMap, typ, k1, k2 string, a, b int64) {
		if d.opts.JSON {
			d.line = djBegin(d.line[:0], typ, f.path)
			d.line = djInt(d.line, k1, a)
			d.write(djEnd(djInt(d.line, k2, b)))
			return
		}
		if absPath == "" {
			absPath = d.absPath(f)
		}
		m.add(absPath, a, b)
	}
	prevTS := recordbatch.NoTimestamp
	return idx.each(&d.ibuf, func(i int64, e []byte) (bool, error) {
		ts, off := parseTimeIndexEntry(base, e)
		if off == base && i > 0 {
			return false, nil
		}
		entryErr := func(err error) error { return &dumpIndexError{f, i, timeIndexEntrySize, err} }
		pos, err := offIdx.lookup(off)
		if err != nil {
			return false, entryErr(fmt.Errorf("looking up offset %d: %w", off, err))
		}
		if err := log.checkSlice(pos); err != nil {
			return false, entryErr(fmt.Errorf("offset %d: from the offset index, %w", off, err))
		}
		// The first batch from pos whose last offset reaches the entry's.
		var h dumpBatchHead
		found := false
		for p := int64(pos); ; p += h.size {
			var ok bool
			if h, ok, err = log.batchAt(&d.hdr, p, log.size); err != nil {
				return false, entryErr(fmt.Errorf("offset %d: %w", off, err))
			}
			if !ok {
				break
			}
			if h.lastOffset >= off {
				found = true
				break
			}
		}
		// Reports come before the entry's line in Kafka; with --json the
		// entry's line comes first, then what is wrong with it.
		var pending []func()
		switch {
		case !found:
			pending = append(pending, func() { report(d.timeNotFound, "offsetNotFound", "indexOffset", "logOffset", off, -1) })
		case h.lastOffset != off:
			pending = append(pending, func() { report(d.timeNotFound, "offsetNotFound", "indexOffset", "logOffset", off, h.lastOffset) })
		default:
			maxTS, err := d.maxTimestampAt(log, h)
			if err != nil {
				return false, entryErr(fmt.Errorf("offset %d: %w", off, err))
			}
			if maxTS != ts {
				pending = append(pending, func() { report(d.timeMismatches, "timestampMismatch", "indexTimestamp", "logTimestamp", ts, maxTS) })
			}
			if prevTS >= ts {
				prev := prevTS
				pending = append(pending, func() {
					report(d.timeOutOfOrder, "outOfOrderTimestamp", "indexTimestamp", "previousTimestamp", ts, prev)
				})
			}
		}
		if !d.opts.JSON {
			for _, p := range pending {
				p()
			}
		}
		if !d.opts.VerifyIndexOnly {
			if d.opts.JSON {
				d.line = djBegin(d.line[:0], "timeIndexEntry", f.path)
				d.line = djInt(d.line, "timestamp", ts)
				d.write(djEnd(djInt(d.line, "offset", off)))
			} else {
				d.printf("timestamp: %d offset: %d\n", ts, off)
			}
		}
		if d.opts.JSON {
			for _, p := range pending {
				p()
			}
		}
		prevTS = ts
		d.progress(f, i+1, idx.entries)
		return d.werr == nil, nil
	})
}

// maxTimestampAt reads the batch h and returns the largest timestamp of
// its records (-1 when it has none), as Kafka iterates them.
func (d *dumper) maxTimestampAt(log *dumpSegmentLog, h dumpBatchHead) (int64, error) {
	if h.magic < recordbatch.Magic {
		return 0, log.errorAt(h.pos, fmt.Errorf("a magic v%d message set (legacy format, before Kafka 0.11) is %w", h.magic, ErrNotSupported))
	}
	// The batch lies within the file (batchAt checked), so this
	// allocation is bounded by the file's size, not by a length field.
	if int64(cap(d.batch)) < h.size {
		d.batch = make([]byte, h.size)
	}
	buf := d.batch[:h.size]
	if _, err := log.f.ReadAt(buf, h.pos); err != nil {
		return 0, log.errorAt(h.pos, fmt.Errorf("reading a batch of %d bytes: %w", h.size, noEOF(err)))
	}
	b, err := recordbatch.Parse(buf, 0)
	if err != nil {
		return 0, log.errorAt(h.pos, err)
	}
	maxTS := recordbatch.NoTimestamp
	if err := d.rr.Reset(b, maxInflatedRecords); err != nil {
		return 0, log.errorAt(h.pos, err)
	}
	for d.rr.Next() {
		maxTS = max(maxTS, d.rr.Record().Timestamp)
	}
	if err := d.rr.Err(); err != nil {
		return 0, log.errorAt(h.pos, err)
	}
	return maxTS, nil
}
