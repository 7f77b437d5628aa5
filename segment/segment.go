package segment

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// File name suffixes, as Kafka names a segment's files.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// fileName is <dir>/<20-digit base offset><suffix>.
func fileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one .log file and its two indexes. While it is active, its
// fields change under the Log's lock held for writing, and readers read
// them under it. Once a roll seals it, its offsets, size and index
// entries never change again; its flush goroutine writes the index
// entries out and syncs the files without the lock (indexFile.written and
// the files), while readers use only the entries in memory. See the
// package doc, "Locking".
type segment struct {
	fs        vfs.FS
	dir       string
	base      int64
	log       vfs.File
	logName   string
	index     offsetIndex
	timeIndex timeIndex
	txn       txnIndex // the .txnindex: aborted transactions (txnindex.go)

	size            int64 // bytes of whole batches; the file may hold more after a failed write
	nextOffset      int64 // last offset + 1, or base when empty
	bytesSinceIndex int64
	maxTS           int64 // largest batch max timestamp so far, -1 when none
	maxTSOffset     int64 // last offset of the batch that has it
	firstBatchMaxTS int64 // max timestamp of the first batch, -1 when none (segment.ms)
	created         time.Time
	indexMissing    bool // an index file did not exist at open: rebuild it

	refs segmentRefs // readers holding the files without the Log's lock
}

// segmentRefs counts the readers (Batches) that hold a segment's files
// without the Log's lock, so that a segment the cleaner replaced
// (retired) keeps its files open until the last of them is done: the
// files are unlinked already, and an unlinked open file still reads.
type segmentRefs struct {
	mu      sync.Mutex
	n       int
	retired bool
}

// acquire is called under the Log's lock, while s is in its list.
func (s *segment) acquire() {
	s.refs.mu.Lock()
	s.refs.n++
	s.refs.mu.Unlock()
}

// release ends a reader's hold; the last one closes a retired segment.
// Nothing was written through its files since they were synced, so an
// error closing them says nothing about the data: it is dropped.
func (s *segment) release() {
	s.refs.mu.Lock()
	s.refs.n--
	last := s.refs.n == 0 && s.refs.retired
	s.refs.mu.Unlock()
	if last {
		_ = s.close()
	}
}

// retire closes s, which has left the Log's list, once no reader holds
// it (see release).
func (s *segment) retire() {
	s.refs.mu.Lock()
	s.refs.retired = true
	now := s.refs.n == 0
	s.refs.mu.Unlock()
	if now {
		_ = s.close()
	}
}

// createSegment creates the three files of a new, empty segment. The
// caller syncs the directory.
func createSegment(cfg *Config, dir string, base int64) (*segment, error) {
	s := newSegment(cfg, dir, base)
	var err error
	flag := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if s.log, err = cfg.FS.OpenFile(s.logName, flag, 0o644); err != nil {
		return nil, err
	}
	if s.index.f, err = cfg.FS.OpenFile(s.index.name, flag, 0o644); err != nil {
		return nil, errors.Join(err, s.close())
	}
	if s.timeIndex.f, err = cfg.FS.OpenFile(s.timeIndex.name, flag, 0o644); err != nil {
		return nil, errors.Join(err, s.close())
	}
	s.created = cfg.Now()
	return s, nil
}

func newSegment(cfg *Config, dir string, base int64) *segment {
	return &segment{
		fs:              cfg.FS,
		dir:             dir,
		base:            base,
		logName:         fileName(dir, base, logSuffix),
		index:           offsetIndex{indexFile: indexFile{name: fileName(dir, base, indexSuffix), base: base, maxEntries: cfg.IndexMaxBytes / offsetEntrySize}},
		timeIndex:       timeIndex{indexFile: indexFile{name: fileName(dir, base, timeIndexSuffix), base: base, maxEntries: cfg.IndexMaxBytes / timeEntrySize}},
		txn:             txnIndex{name: fileName(dir, base, txnIndexSuffix)},
		nextOffset:      base,
		maxTS:           -1,
		maxTSOffset:     base,
		firstBatchMaxTS: -1,
	}
}

// openSegment opens an existing segment's files, creating missing index
// files. Its offsets and indexes are not known until load or recover.
func openSegment(cfg *Config, dir string, base int64) (*segment, error) {
	s := newSegment(cfg, dir, base)
	var err error
	if s.log, err = cfg.FS.OpenFile(s.logName, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if s.size, err = s.log.Size(); err != nil {
		return nil, errors.Join(err, s.close())
	}
	if s.size > math.MaxInt32 {
		return nil, errors.Join(&CorruptionError{File: s.logName, Offset: 0, Err: fmt.Errorf("segment of %d bytes, above the 2 GiB positions an index can hold", s.size)}, s.close())
	}
	if s.index.f, err = openOrCreate(cfg.FS, s.index.name, &s.indexMissing); err != nil {
		return nil, errors.Join(err, s.close())
	}
	if s.timeIndex.f, err = openOrCreate(cfg.FS, s.timeIndex.name, &s.indexMissing); err != nil {
		return nil, errors.Join(err, s.close())
	}
	s.created = cfg.Now()
	return s, nil
}

// openOrCreate opens name, creating it (and setting *created) when it
// does not exist.
func openOrCreate(fsys vfs.FS, name string, created *bool) (vfs.File, error) {
	f, err := fsys.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		*created = true
		f, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	}
	return f, err
}

// readEntries reads the entries of an index file of esize-byte entries
// into dst (reusing its storage): at most limit of them, the most the
// segment's log can justify. So a file that claims more, even a sparse
// multi-GiB one, costs no more memory than its log allows. The file may
// go on after those entries only with a zero slot (isZero), as Kafka's
// preallocated files do; a further real entry, or a length that is not
// a multiple of esize, makes trusted false: the file is rebuilt from the
// log.
func readEntries(f vfs.File, dst []byte, esize, limit int64, isZero func([]byte) bool) (data []byte, size int64, trusted bool, err error) {
	if size, err = f.Size(); err != nil {
		return nil, 0, false, err
	}
	if size%esize != 0 {
		return nil, size, false, nil
	}
	n := min(size/esize, limit)
	data = slices.Grow(dst[:0], int(n*esize))[:n*esize]
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, size, false, err
	}
	if size/esize > n {
		next := make([]byte, esize)
		if _, err := f.ReadAt(next, n*esize); err != nil && !errors.Is(err, io.EOF) {
			return nil, size, false, err
		}
		if !isZero(next) {
			return data, size, false, nil
		}
	}
	return data, size, true, nil
}

// justifiedEntries is the most entries an index of a log of logSize bytes can
// hold: each entry names a different batch, and a batch is at least a
// v2 header long.
func justifiedEntries(logSize int64) int64 { return logSize/recordbatch.HeaderSize + 1 }

// load trusts the log (a clean shutdown) and reads the indexes. It finds
// the end offset by scanning batch headers from the last index entry. It
// returns false when an index file cannot be trusted; the caller then
// rebuilds with recover.
func (s *segment) load() (bool, error) {
	if s.indexMissing && s.size > 0 {
		return false, nil
	}
	data, fileLen, ok, err := readEntries(s.index.f, s.index.buf, offsetEntrySize, justifiedEntries(s.size), offsetSlotZero)
	if err != nil || !ok {
		return false, err
	}
	if !s.index.load(data, fileLen, s.size) {
		return false, nil
	}
	hb := make([]byte, recordbatch.HeaderSize)
	_, pos := s.index.lookup(math.MaxInt64)
	for pos < s.size {
		h, err := s.header(hb, pos)
		if err != nil {
			return false, nil
		}
		s.noteBatch(h)
		pos += int64(h.Size())
	}
	if pos != s.size {
		return false, nil
	}
	if data, fileLen, ok, err = readEntries(s.timeIndex.f, s.timeIndex.buf, timeEntrySize, justifiedEntries(s.size), timeSlotZero); err != nil || !ok {
		return false, err
	}
	if !s.timeIndex.load(data, fileLen, s.nextOffset) {
		return false, nil
	}
	if ts, off := s.timeIndex.last(); ts > s.maxTS {
		s.maxTS, s.maxTSOffset = ts, off
	}
	if s.size > 0 {
		h, err := s.header(hb, 0)
		if err != nil {
			return false, nil
		}
		s.firstBatchMaxTS = h.MaxTimestamp()
	}
	return true, s.trimIndexes()
}

// header reads and checks the 61-byte header of the batch at pos into
// buf (len >= 61), which the caller reuses across calls: the header is
// valid until the next call with the same buf.
func (s *segment) header(buf []byte, pos int64) (recordbatch.Batch, error) {
	buf = buf[:recordbatch.HeaderSize]
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		return nil, err
	}
	f, stop := recordbatch.NextFrame(buf, s.size-pos)
	if stop != recordbatch.FrameOK || f.Size < recordbatch.HeaderSize || f.Magic != recordbatch.Magic {
		return nil, &CorruptionError{File: s.logName, Offset: pos, Err: fmt.Errorf("bad batch header (size %d, magic %d)", f.Size, f.Magic)}
	}
	return recordbatch.Batch(buf), nil
}

// noteBatch advances the segment's end and max timestamp past h, a batch
// header already in the file.
func (s *segment) noteBatch(h recordbatch.Batch) {
	s.nextOffset = h.LastOffset() + 1
	if ts := h.MaxTimestamp(); ts > s.maxTS {
		s.maxTS, s.maxTSOffset = ts, h.LastOffset()
	}
}

// ScanResult is what recover found in one segment.
type scanResult struct {
	validBytes int64
	batches    int64  // the batches in validBytes
	cutReason  error  // why scanning stopped before the end of the file, nil at a clean end
	cutFile    string // the file that keeps the bytes cut, "" when none were
}

// recover rebuilds the segment's indexes from its .log, following Kafka's
// LogSegment.recover: every batch is checked (size, magic, CRC, codec,
// offsets increasing) and the scan stops at the first that fails. When
// the valid batches end at offset cutFrom or later, the file is then cut
// to them; below it, the stop is returned as a *CorruptionError and the
// file is left as it is.
func (s *segment) recover(indexInterval int64, cutFrom int64) (scanResult, error) {
	if err := s.index.reset(); err != nil {
		return scanResult{}, err
	}
	if err := s.timeIndex.reset(); err != nil {
		return scanResult{}, err
	}
	s.nextOffset, s.maxTS, s.maxTSOffset, s.firstBatchMaxTS = s.base, -1, s.base, -1
	fileSize := s.size
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, fileSize), 1<<20)
	var res scanResult
	var pos, lastIndexed int64
	for pos < fileSize {
		b, err := s.nextBatch(r, pos, fileSize)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				return res, err // an I/O error, or a format we do not read
			}
			res.cutReason = err
			break
		}
		if b.BaseOffset() < s.nextOffset && pos > 0 || b.BaseOffset() < s.base {
			res.cutReason = &CorruptionError{File: s.logName, Offset: pos, Err: fmt.Errorf("batch base offset %d is below the expected %d", b.BaseOffset(), s.nextOffset)}
			break
		}
		if b.LastOffset()-s.base > math.MaxInt32 {
			res.cutReason = &CorruptionError{File: s.logName, Offset: pos, Err: fmt.Errorf("offset %d does not fit a segment based at %d", b.LastOffset(), s.base)}
			break
		}
		if pos == 0 {
			s.firstBatchMaxTS = b.MaxTimestamp()
		}
		if ts := b.MaxTimestamp(); ts > s.maxTS {
			s.maxTS, s.maxTSOffset = ts, b.LastOffset()
		}
		if pos-lastIndexed > indexInterval {
			if err := s.index.append(b.LastOffset(), pos); err != nil {
				return res, err
			}
			if err := s.timeIndex.maybeAppend(s.maxTS, s.maxTSOffset, false); err != nil {
				return res, err
			}
			lastIndexed = pos
		}
		s.nextOffset = b.LastOffset() + 1
		pos += int64(b.Size())
		res.batches++
		if _, err := r.Discard(b.Size()); err != nil {
			return res, err
		}
	}
	res.validBytes = pos
	if res.cutReason != nil && !mayCut(s.nextOffset, cutFrom) {
		return res, res.cutReason
	}
	if pos < fileSize {
		// The cut bytes are kept first (see keepCut): a crash between
		// the two leaves them in the log, and the next open cuts again.
		name, err := s.keepCut(pos, fileSize)
		if err != nil {
			return res, err
		}
		res.cutFile = name
		if err := s.log.Truncate(pos); err != nil {
			return res, err
		}
	}
	s.size = pos
	if err := s.timeIndex.maybeAppend(s.maxTS, s.maxTSOffset, true); err != nil {
		return res, err
	}
	// The rebuilt indexes reach their files now: a clean open syncs
	// only the segments from the recovery point on.
	if err := s.index.writeOut(); err != nil {
		return res, err
	}
	return res, s.timeIndex.writeOut()
}

// nextBatch checks the batch at pos, which r is positioned at, and
// returns its header (61 bytes, enough for every header field). The batch
// itself stays in r. Problems in the bytes are *CorruptionErrors;
// ErrTruncated among them marks a torn tail.
func (s *segment) nextBatch(r *bufio.Reader, pos, fileSize int64) (recordbatch.Batch, error) {
	corrupt := func(err error) error { return &CorruptionError{File: s.logName, Offset: pos, Err: err} }
	left := fileSize - pos
	hdr, err := r.Peek(int(min(left, recordbatch.HeaderSize)))
	if err != nil {
		return nil, err
	}
	f, stop := recordbatch.NextFrame(hdr, left)
	if stop != recordbatch.FrameOK {
		return nil, corrupt(frameErr(f, stop, left))
	}
	size := f.Size
	if f.Magic < recordbatch.Magic {
		return nil, fmt.Errorf("logstore/segment: %s at byte %d: a magic %d message set (before Kafka 0.11) is not supported", s.logName, pos, f.Magic)
	}
	if size <= int64(r.Size()) {
		whole, err := r.Peek(int(size))
		if err != nil {
			return nil, err
		}
		b, err := recordbatch.Parse(whole, 0)
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			return nil, corrupt(err)
		}
		return b[:recordbatch.HeaderSize:recordbatch.HeaderSize], nil
	}
	// Too large to hold: check the CRC as the bytes stream by.
	if _, err := recordbatch.Parse(hdr, 0); err != nil && !errors.Is(err, recordbatch.ErrTruncated) {
		return nil, corrupt(err)
	}
	b := recordbatch.Batch(append([]byte(nil), hdr...))
	crc := recordbatch.UpdateChecksum(0, hdr[21:])
	sr := io.NewSectionReader(s.log, pos+recordbatch.HeaderSize, size-recordbatch.HeaderSize)
	buf := make([]byte, 1<<20)
	for {
		n, err := sr.Read(buf)
		crc = recordbatch.UpdateChecksum(crc, buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if crc != b.CRC() {
		return nil, corrupt(fmt.Errorf("%w: Record is corrupt (stored crc = %d, computed crc = %d)", recordbatch.ErrCRC, b.CRC(), crc))
	}
	if c := b.Attributes().Codec(); !c.Valid() || b.NumRecords() < 0 {
		return nil, corrupt(fmt.Errorf("%w: codec %d, count %d", recordbatch.ErrCorrupt, c, b.NumRecords()))
	}
	return b, nil
}

// append writes b, whose offsets are already stamped, at the end of the
// segment and adds index entries by Kafka's live rule: an entry (this
// batch's last offset, its position) once more than indexInterval bytes
// were written since the last one.
func (s *segment) append(b recordbatch.Batch, indexInterval int64) error {
	pos := s.size
	if s.size == 0 {
		s.firstBatchMaxTS = b.MaxTimestamp()
	}
	if _, err := s.log.WriteAt(b, pos); err != nil {
		return err
	}
	return s.indexAppended(b, pos, indexInterval)
}

// indexAppended accounts for b, just written at pos: the largest
// timestamp, the index entries by Kafka's live rule (see append), the
// size and the next offset.
func (s *segment) indexAppended(b recordbatch.Batch, pos, indexInterval int64) error {
	if ts := b.MaxTimestamp(); ts > s.maxTS {
		s.maxTS, s.maxTSOffset = ts, b.LastOffset()
	}
	if s.bytesSinceIndex > indexInterval {
		if err := s.index.append(b.LastOffset(), pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTS, s.maxTSOffset, false); err != nil {
			return err
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(len(b))
	s.size += int64(len(b))
	s.nextOffset = b.LastOffset() + 1
	return nil
}

// rollReason says why b (stamped) cannot go into this segment, or "".
func (s *segment) rollReason(b recordbatch.Batch, cfg *Config) string {
	switch {
	case s.size > cfg.SegmentBytes-int64(len(b)):
		return "segment.bytes"
	case s.size > 0 && s.timeWaited(b, cfg.Now) > cfg.SegmentMaxAge:
		return "segment.ms"
	case s.index.full():
		return "offset index full"
	case s.timeIndex.full():
		return "time index full"
	case b.LastOffset()-s.base > math.MaxInt32:
		return "relative offset overflow"
	}
	return ""
}

// timeWaited is Kafka's timeWaitedForRoll: by the batches' timestamps when
// the first batch has one, else by the clock since the segment was made
// (read only then: an append need not pay for it).
func (s *segment) timeWaited(b recordbatch.Batch, now func() time.Time) time.Duration {
	if s.firstBatchMaxTS >= 0 {
		return time.Duration(b.MaxTimestamp()-s.firstBatchMaxTS) * time.Millisecond
	}
	return now().Sub(s.created)
}

// finish ends the segment's active life: its closing time index entry.
// It takes no more appends; a roll then flushes it in the background.
func (s *segment) finish() error {
	return s.timeIndex.maybeAppend(s.maxTS, s.maxTSOffset, true)
}

// seal finishes the segment and makes its log and indexes durable.
func (s *segment) seal() error {
	if err := s.finish(); err != nil {
		return err
	}
	return s.sync(true)
}

// sync makes the log durable, and the indexes too when withIndexes (they
// are rebuilt from the log after a crash, so appends do not wait for them).
func (s *segment) sync(withIndexes bool) error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	if !withIndexes {
		return nil
	}
	return s.syncIndexes()
}

func (s *segment) syncIndexes() error {
	if err := s.index.sync(); err != nil {
		return err
	}
	return s.timeIndex.sync()
}

func (s *segment) trimIndexes() error {
	if err := s.index.trim(); err != nil {
		return err
	}
	return s.timeIndex.trim()
}

// findBatch returns the position of the first batch whose last offset is
// >= offset, starting from the index, or -1 when the segment has none.
// hb is room for a batch header.
func (s *segment) findBatch(hb []byte, offset int64, size int64) (int64, error) {
	_, pos := s.index.lookup(offset)
	for pos < size {
		h, err := s.header(hb, pos)
		if err != nil {
			return 0, err
		}
		if h.LastOffset() >= offset {
			return pos, nil
		}
		pos += int64(h.Size())
	}
	return -1, nil
}

// offsetForTime returns the first offset in the segment whose record
// timestamp is >= ts, or -1.
func (s *segment) offsetForTime(ts int64, size int64) (int64, error) {
	_, off := s.timeIndex.lookup(ts)
	hb := make([]byte, recordbatch.HeaderSize)
	pos, err := s.findBatch(hb, off, size)
	if err != nil || pos < 0 {
		return -1, err
	}
	var r recordbatch.RecordReader
	for pos < size {
		h, err := s.header(hb, pos)
		if err != nil {
			return -1, err
		}
		if h.MaxTimestamp() >= ts {
			buf := make([]byte, h.Size())
			if _, err := s.log.ReadAt(buf, pos); err != nil {
				return -1, err
			}
			if err := r.Reset(recordbatch.Batch(buf), 0); err != nil {
				return -1, &CorruptionError{File: s.logName, Offset: pos, Err: err}
			}
			for r.Next() {
				if r.Record().Timestamp >= ts {
					return r.Record().Offset, nil
				}
			}
			if err := r.Err(); err != nil {
				return -1, &CorruptionError{File: s.logName, Offset: pos, Err: err}
			}
		}
		pos += int64(h.Size())
	}
	return -1, nil
}

// close closes whichever files are open.
func (s *segment) close() error {
	var errs []error
	for _, f := range []vfs.File{s.log, s.index.f, s.timeIndex.f, s.txn.f} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// remove closes and deletes the segment's files; the caller syncs the
// directory.
func (s *segment) remove() error {
	return errors.Join(s.close(), s.removeFiles())
}

// removeFiles deletes the segment's files, leaving them open; the caller
// syncs the directory.
func (s *segment) removeFiles() error {
	var errs []error
	for _, name := range []string{s.logName, s.index.name, s.timeIndex.name, s.txn.name} {
		if err := s.fs.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
