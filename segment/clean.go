package segment

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// Suffixes of the cleaner's files, after a segment file's own name, as
// Kafka names them: 00000000000000000000.log.cleaned, ... .log.swap.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// DefaultDeleteRetention is delete.retention.ms's default: how long a
// tombstone survives once a cleaning pass has stamped its batch.
const DefaultDeleteRetention = 24 * time.Hour

// CleanOptions says what a cleaning pass (Log.Clean) covers and keeps.
type CleanOptions struct {
	// FirstDirty is the first offset not yet cleaned (the caller's
	// cleaner checkpoint): the offset map is built from here.
	FirstDirty int64
	// Start: segments are rewritten from the one holding Start (0: the
	// first segment).
	Start int64
	// Upper bounds the pass (exclusive): the caller passes the last
	// stable offset. <= 0: no bound but the active segment and the
	// recovery point. Only whole segments ending at or below it are
	// cleaned; the active segment never is.
	Upper int64
	// Map is the offset map to use (it is reset first); when nil, one of
	// MapBytes (default DefaultOffsetMapBytes) is made.
	Map      *OffsetMap
	MapBytes int
	// Now is the time tombstones are judged by (default Config.Now).
	Now time.Time
	// DeleteRetention is delete.retention.ms: a batch that keeps
	// tombstones is stamped with the delete horizon Now+DeleteRetention,
	// and its tombstones go in the first pass at or after it. 0 takes
	// DefaultDeleteRetention; a negative value means none.
	DeleteRetention time.Duration
	// ActiveProducer, when set, says whether producerID is still active
	// and the last offset of its last batch (data or marker). That batch
	// is kept, empty if all its records go, so the producer's epoch and
	// sequence survive (Kafka's lastRecordsOfActiveProducers).
	ActiveProducer func(producerID int64) (lastOffset int64, active bool)
	// DiscardControl, when set, says whether a control batch (a
	// transaction marker) may go. Nil keeps every control batch.
	DiscardControl func(recordbatch.Batch) bool
}

// CleanResult is what a cleaning pass did.
type CleanResult struct {
	FirstDirty int64 // where the map began
	// End is where the map stopped (exclusive): the next pass's
	// FirstDirty. Below Upper when the map filled (Complete false).
	End      int64
	Upper    int64 // the bound the pass used
	Complete bool  // the map reached Upper
	Keys     int   // keys in the map
	// Groups are the base offsets of the segments replaced, one slice
	// per new segment (named after the group's first).
	Groups         [][]int64
	BytesRead      int64 // of the segments rewritten
	BytesWritten   int64
	BatchesRead    int64
	BatchesWritten int64
	RecordsRead    int64
	RecordsWritten int64
}

// Clean runs one pass of log compaction as Kafka's Cleaner does (see
// the package doc, "Cleaning"): it maps the dirty range [FirstDirty,
// upper) (upper: the first segment base at or above min(Upper, the
// active segment's base, the recovery point)) to each key's last offset,
// then rewrites the segments from Start's up to where the map stopped,
// in groups that fit one segment, each swapped in crash-safely. Readers
// go on meanwhile; appends too. It holds the checkpoint lock throughout,
// so retention, DeleteRecordsBefore and another Clean wait for it.
//
// An error before a group's swap is decided leaves the log as it was
// (the group's .cleaned files are removed) and usable; a failure once it
// is decided poisons the log, which the next Open completes.
func (l *Log) Clean(opts CleanOptions) (CleanResult, error) {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	res := CleanResult{FirstDirty: opts.FirstDirty, End: opts.FirstDirty}

	l.mu.RLock()
	if err := l.check(); err != nil {
		l.mu.RUnlock()
		return res, err
	}
	bound := l.active().base
	bound = min(bound, l.ckpt.recoveryPoint)
	if opts.Upper > 0 {
		bound = min(bound, opts.Upper)
	}
	// Whole segments only, each flushed (the recovery point has passed
	// it: its flush no longer touches it) and below the bound.
	var segs []*segment
	for i := 0; i < len(l.segs)-1 && l.segs[i+1].base <= bound; i++ {
		segs = append(segs, l.segs[i])
	}
	upper := l.active().base
	if len(segs) < len(l.segs) {
		upper = l.segs[len(segs)].base
	}
	txns := make([][]AbortedTxn, len(segs))
	for i, s := range segs {
		txns[i] = append([]AbortedTxn(nil), s.txn.entries...)
	}
	l.mu.RUnlock()
	res.Upper = upper
	if len(segs) == 0 {
		res.Complete = true
		return res, nil
	}

	m := opts.Map
	if m == nil {
		size := opts.MapBytes
		if size == 0 {
			size = DefaultOffsetMapBytes
		}
		var err error
		if m, err = NewOffsetMap(size); err != nil {
			return res, err
		}
	}
	c := &cleaner{l: l, m: m, opts: opts}
	if c.opts.Now.IsZero() {
		c.opts.Now = l.cfg.Now()
	}
	switch {
	case c.opts.DeleteRetention == 0:
		c.opts.DeleteRetention = DefaultDeleteRetention
	case c.opts.DeleteRetention < 0:
		c.opts.DeleteRetention = 0
	}
	c.now = c.opts.Now.UnixMilli()
	full, err := c.buildMap(segs, opts.FirstDirty, upper)
	if err != nil {
		return res, err
	}
	res.Keys = m.Len()
	if m.Latest() < opts.FirstDirty {
		if full {
			return res, fmt.Errorf("logstore/segment: cleaning %s: an offset map of %d slots holds no key of the dirty range from %d", l.dir, m.Slots(), opts.FirstDirty)
		}
		m.UpdateLatest(upper - 1) // a dirty range without keys
	}
	res.End = max(m.Latest()+1, opts.FirstDirty)
	res.Complete = res.End >= upper

	// The segments rewritten: from Start's to the last the map reached.
	first := 0
	for first+1 < len(segs) && segs[first+1].base <= opts.Start {
		first++
	}
	last := first
	for last < len(segs) && segs[last].base < res.End {
		last++
	}
	for _, g := range l.groupBySize(segs[first:last]) {
		l.mu.RLock()
		err := l.check()
		l.mu.RUnlock()
		if err != nil {
			return res, err
		}
		gi := first
		for segs[gi] != g[0] {
			gi++
		}
		var entries []AbortedTxn
		for i := range g {
			entries = append(entries, txns[gi+i]...)
		}
		if err := c.cleanGroup(g, entries, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// groupBySize is Kafka's groupSegmentsBySize: consecutive segments whose
// log bytes, offset-index bytes and time-index bytes each fit one
// segment (Config.SegmentBytes, Config.IndexMaxBytes), and whose offsets
// stay within an int32 of the group's base.
func (l *Log) groupBySize(segs []*segment) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		g := segs[:1]
		logBytes := segs[0].size
		idx := int64(len(segs[0].index.buf))
		tidx := int64(len(segs[0].timeIndex.buf))
		for len(g) < len(segs) {
			s := segs[len(g)]
			if logBytes+s.size > l.cfg.SegmentBytes ||
				idx+int64(len(s.index.buf)) > int64(l.cfg.IndexMaxBytes) ||
				tidx+int64(len(s.timeIndex.buf)) > int64(l.cfg.IndexMaxBytes) ||
				(s.size > 0 && s.nextOffset-1-g[0].base > math.MaxInt32) {
				break
			}
			g = segs[:len(g)+1]
			logBytes += s.size
			idx += int64(len(s.index.buf))
			tidx += int64(len(s.timeIndex.buf))
		}
		groups = append(groups, g)
		segs = segs[len(g):]
	}
	return groups
}

// cleaner is one pass's state.
type cleaner struct {
	l    *Log
	m    *OffsetMap
	opts CleanOptions
	now  int64 // opts.Now in milliseconds

	rr      recordbatch.RecordReader
	records []byte // a rebuilt batch's uncompressed records
	comp    []byte // ... compressed
	read    []byte // the batch read
}

// eachBatch calls fn with every batch of s from the one holding offset
// from, each checked (framing, magic, CRC). The batch is valid during the
// call only.
func (c *cleaner) eachBatch(s *segment, from int64, fn func(pos int64, b recordbatch.Batch) error) error {
	_, pos := s.index.lookup(from)
	size := s.size
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, pos, size-pos), 1<<20)
	for pos < size {
		left := size - pos
		head, err := r.Peek(int(min(left, recordbatch.HeaderSize)))
		if err != nil {
			return fmt.Errorf("logstore/segment: cleaning %s: reading at byte %d: %w", s.logName, pos, err)
		}
		f, stop := recordbatch.NextFrame(head, left)
		if stop != recordbatch.FrameOK || f.Magic != recordbatch.Magic || f.Size < recordbatch.HeaderSize {
			return &CorruptionError{File: s.logName, Offset: pos, Err: frameErr(f, stop, left)}
		}
		if int64(cap(c.read)) < f.Size {
			c.read = make([]byte, f.Size)
		}
		buf := c.read[:f.Size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("logstore/segment: cleaning %s: reading at byte %d: %w", s.logName, pos, err)
		}
		b, err := recordbatch.Parse(buf, 0)
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			return &CorruptionError{File: s.logName, Offset: pos, Err: err}
		}
		if b.LastOffset() >= from {
			if err := fn(pos, b); err != nil {
				return err
			}
		}
		pos += f.Size
	}
	return nil
}

// buildMap is Kafka's buildOffsetMap: every key of the data batches in
// [from, upper), with its last offset. It stops at the first record
// whose key does not fit (full), with m.Latest() the last offset
// mapped; else m.Latest() is upper-1 (the end of the last segment,
// past any gap).
func (c *cleaner) buildMap(segs []*segment, from, upper int64) (full bool, err error) {
	c.m.Reset()
	errFull := errors.New("full")
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		err := c.eachBatch(s, from, func(pos int64, b recordbatch.Batch) error {
			if !b.Attributes().Control() {
				if err := c.rr.Reset(b, 0); err != nil {
					return &CorruptionError{File: s.logName, Offset: pos, Err: err}
				}
				for c.rr.Next() {
					r := c.rr.Record()
					if r.Key == nil || r.Offset < from {
						continue
					}
					if !c.m.Put(r.Key, r.Offset) {
						return errFull
					}
				}
				if err := c.rr.Err(); err != nil {
					return &CorruptionError{File: s.logName, Offset: pos, Err: err}
				}
			}
			c.m.UpdateLatest(b.LastOffset())
			return nil
		})
		if err == errFull {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		next := upper
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		c.m.UpdateLatest(next - 1)
	}
	return false, nil
}

// cleanGroup rewrites the segments g (whose aborted transactions are
// txns) into one new segment and swaps it in.
func (c *cleaner) cleanGroup(g []*segment, txns []AbortedTxn, res *CleanResult) error {
	l := c.l
	w, err := newCleanedSegment(l, g[0].base)
	if err != nil {
		return err
	}
	err = c.writeGroup(w, g, res)
	if err == nil {
		err = w.finish(txns)
	}
	if err != nil {
		return errors.Join(err, w.discard())
	}
	group := make([]int64, len(g))
	for i, s := range g {
		group[i] = s.base
	}
	if err := l.swapIn(g, w.s); err != nil {
		return err
	}
	res.Groups = append(res.Groups, group)
	return nil
}

// writeGroup filters every batch of g into w.
func (c *cleaner) writeGroup(w *cleanedSegment, g []*segment, res *CleanResult) error {
	// The last batch of the group is kept, empty if need be, so the new
	// segment ends where the group did (Kafka keeps the last batch of
	// the cleaning round for the same reason).
	end := g[len(g)-1].nextOffset
	for _, s := range g {
		res.BytesRead += s.size
		err := c.eachBatch(s, s.base, func(pos int64, b recordbatch.Batch) error {
			res.BatchesRead++
			res.RecordsRead += int64(b.NumRecords())
			out, n, err := c.filter(w.pending, b, b.LastOffset()+1 == end)
			if err != nil {
				return &CorruptionError{File: s.logName, Offset: pos, Err: err}
			}
			if len(out) == len(w.pending) {
				return nil
			}
			res.BatchesWritten++
			res.RecordsWritten += int64(n)
			res.BytesWritten += int64(len(out) - len(w.pending))
			return w.add(out)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// filter appends to dst what is kept of b (nothing, b itself, b with
// some records, or b empty) and returns how many records it holds.
// keepEmpty asks for b to be kept even when no record is.
func (c *cleaner) filter(dst []byte, b recordbatch.Batch, keepEmpty bool) ([]byte, int, error) {
	if c.opts.ActiveProducer != nil && b.HasProducerID() {
		if last, ok := c.opts.ActiveProducer(b.ProducerID()); ok && last == b.LastOffset() {
			keepEmpty = true
		}
	}
	a := b.Attributes()
	if a.Control() {
		if c.opts.DiscardControl == nil || !c.opts.DiscardControl(b) {
			return append(dst, b...), int(b.NumRecords()), nil
		}
		if keepEmpty {
			return appendEmptyBatch(dst, b), 0, nil
		}
		return dst, 0, nil
	}
	horizon, hasHorizon := b.DeleteHorizonMs()
	// The records are encoded against the base timestamp: the delete
	// horizon when the batch has one, else the first kept record's
	// timestamp, as MemoryRecordsBuilder does. A batch that keeps a
	// tombstone and has no horizon yet gets one, and is encoded again.
	p, err := c.keep(b, horizon, hasHorizon)
	if err != nil {
		return dst, 0, err
	}
	if p.kept == 0 {
		if keepEmpty {
			return appendEmptyBatch(dst, b), 0, nil
		}
		return dst, 0, nil
	}
	setHorizon := p.tombstones && !hasHorizon
	if p.all && !setHorizon {
		return append(dst, b...), p.kept, nil
	}
	if setHorizon {
		horizon, hasHorizon = c.now+c.opts.DeleteRetention.Milliseconds(), true
		if p, err = c.keep(b, horizon, true); err != nil {
			return dst, 0, err
		}
	}
	maxTS := p.maxTS
	if a.TimestampType() == recordbatch.LogAppendTime {
		maxTS = b.MaxTimestamp()
	}
	h := recordbatch.Header{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           recordbatch.MakeAttributes(a.Codec(), a.TimestampType(), a.Transactional(), false, hasHorizon),
		LastOffsetDelta:      b.LastOffsetDelta(),
		BaseTimestamp:        p.baseTS,
		MaxTimestamp:         maxTS,
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		NumRecords:           int32(p.kept),
	}
	recs := c.records
	if codec := a.Codec(); codec != recordbatch.CodecNone {
		var err error
		if c.comp, err = recordbatch.Compress(c.comp[:0], codec, c.records); err != nil {
			return dst, 0, err
		}
		recs = c.comp
	}
	return recordbatch.AppendBatch(dst, h, recs), p.kept, nil
}

// kept is what keep found in a batch.
type kept struct {
	kept       int   // records kept
	all        bool  // every record is kept
	tombstones bool  // a kept record is a tombstone
	baseTS     int64 // the base timestamp they are encoded against
	maxTS      int64 // the largest kept timestamp
}

// keep encodes into c.records the records of b that the pass keeps (see
// the package doc, "Cleaning"), against the base timestamp base when
// fixed, else the first kept record's.
func (c *cleaner) keep(b recordbatch.Batch, horizon int64, hasHorizon bool) (kept, error) {
	p := kept{all: true, baseTS: recordbatch.NoTimestamp, maxTS: recordbatch.NoTimestamp}
	if hasHorizon {
		p.baseTS = horizon
	}
	if err := c.rr.Reset(b, 0); err != nil {
		return p, err
	}
	latest := c.m.Latest()
	c.records = c.records[:0]
	for c.rr.Next() {
		r := c.rr.Record()
		if !(r.Offset > latest || r.Key == nil ||
			r.Offset >= c.m.Get(r.Key) && (r.Value != nil || !hasHorizon || c.now < horizon)) {
			p.all = false
			continue
		}
		if p.kept == 0 && !hasHorizon {
			p.baseTS = r.Timestamp
		}
		p.kept++
		p.maxTS = max(p.maxTS, r.Timestamp)
		p.tombstones = p.tombstones || r.Value == nil
		c.records = recordbatch.AppendRecord(c.records, r.Timestamp-p.baseTS, r.OffsetDelta, r.Key, r.Value, r.Headers)
	}
	return p, c.rr.Err()
}

// appendEmptyBatch appends b's header with no records, as Kafka's
// writeEmptyHeader writes it: the same offsets, producer id, epoch,
// sequence, leader epoch, timestamp type, transactional and control
// bits; no compression and no delete horizon; both timestamps b's max.
func appendEmptyBatch(dst []byte, b recordbatch.Batch) []byte {
	a := b.Attributes()
	h := recordbatch.Header{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Attributes:           recordbatch.MakeAttributes(recordbatch.CodecNone, a.TimestampType(), a.Transactional(), a.Control(), false),
		LastOffsetDelta:      b.LastOffsetDelta(),
		BaseTimestamp:        b.MaxTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
	}
	return recordbatch.AppendBatch(dst, h, nil)
}

// cleanedSegment is a group's new segment while it is written: a
// segment named after the group's first, whose files are open under
// their .cleaned names.
type cleanedSegment struct {
	l       *Log
	s       *segment
	pending []byte // batches not yet written
	written int64  // bytes of the log file written
}

func newCleanedSegment(l *Log, base int64) (*cleanedSegment, error) {
	s := newSegment(&l.cfg, l.dir, base)
	s.created = l.cfg.Now()
	w := &cleanedSegment{l: l, s: s}
	flag := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	var err error
	if s.log, err = l.cfg.FS.OpenFile(s.logName+cleanedSuffix, flag, 0o644); err != nil {
		return nil, err
	}
	if s.index.f, err = l.cfg.FS.OpenFile(s.index.name+cleanedSuffix, flag, 0o644); err != nil {
		return nil, errors.Join(err, w.discard())
	}
	if s.timeIndex.f, err = l.cfg.FS.OpenFile(s.timeIndex.name+cleanedSuffix, flag, 0o644); err != nil {
		return nil, errors.Join(err, w.discard())
	}
	return w, nil
}

const cleanWriteBlock = 1 << 20

// add appends the batch at the end of w.pending (already there) to the
// segment, with index entries by Kafka's rule, as segment.append does.
func (w *cleanedSegment) add(out []byte) error {
	s := w.s
	b := recordbatch.Batch(out[len(w.pending):])
	pos := s.size
	if s.size == 0 {
		s.firstBatchMaxTS = b.MaxTimestamp()
	}
	if b.BaseOffset() < s.nextOffset && s.size > 0 {
		return fmt.Errorf("batch base offset %d is below the expected %d", b.BaseOffset(), s.nextOffset)
	}
	if err := s.indexAppended(b, pos, int64(w.l.cfg.IndexIntervalBytes)); err != nil {
		return err
	}
	w.pending = out
	if len(w.pending) >= cleanWriteBlock {
		return w.writeOut()
	}
	return nil
}

func (w *cleanedSegment) writeOut() error {
	if len(w.pending) == 0 {
		return nil
	}
	if _, err := w.s.log.WriteAt(w.pending, w.written); err != nil {
		return err
	}
	w.written += int64(len(w.pending))
	w.pending = w.pending[:0]
	return nil
}

// finish writes out the rest, the closing time-index entry, the indexes
// and the aborted transactions txns, and syncs every file.
func (w *cleanedSegment) finish(txns []AbortedTxn) error {
	s := w.s
	if err := w.writeOut(); err != nil {
		return err
	}
	if s.size > math.MaxInt32 {
		return fmt.Errorf("logstore/segment: cleaned segment %s of %d bytes", s.logName, s.size)
	}
	if err := s.finish(); err != nil {
		return err
	}
	if err := s.sync(true); err != nil {
		return err
	}
	if len(txns) > 0 {
		f, err := w.l.cfg.FS.OpenFile(s.txn.name+cleanedSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		s.txn.f = f
		buf := make([]byte, 0, len(txns)*TxnEntrySize)
		for _, t := range txns {
			buf = AppendTxnEntry(buf, t)
		}
		if _, err := f.WriteAt(buf, 0); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		s.txn.entries = txns
	}
	return nil
}

// discard closes and removes the .cleaned files: the pass gave up before
// the swap was decided.
func (w *cleanedSegment) discard() error {
	errs := []error{w.s.close()}
	for _, n := range []string{w.s.logName, w.s.index.name, w.s.timeIndex.name, w.s.txn.name} {
		if err := w.l.cfg.FS.Remove(n + cleanedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// swapIn replaces the segments g with ns, whose files are synced under
// their .cleaned names, as Kafka's replaceSegments does: each file is
// renamed to .swap (the .log first: once BASE.log.swap exists the swap
// is decided) and the directory synced; the old segments' files are
// removed and the directory synced; the .swap files get their final
// names (the .log first) and the directory is synced. Open finishes
// whatever a crash interrupted (recoverCleaning). Then, under mu, the
// segment list changes in one step; the old segments' files are closed
// once no reader (Batches) holds them.
func (l *Log) swapIn(g []*segment, ns *segment) error {
	fsys := l.cfg.FS
	names := []string{ns.logName, ns.index.name, ns.timeIndex.name}
	if ns.txn.f != nil {
		names = append(names, ns.txn.name)
	}
	var err error
	for i, n := range names {
		if err = fsys.Rename(n+cleanedSuffix, n+swapSuffix); err != nil {
			if i == 0 {
				// Not decided: the log is as it was.
				return errors.Join(err, (&cleanedSegment{l: l, s: ns}).discard())
			}
			break
		}
	}
	if err == nil {
		err = fsys.SyncDir(l.dir)
	}
	for _, s := range g {
		if err != nil {
			break
		}
		err = s.removeFiles()
	}
	if err == nil {
		err = fsys.SyncDir(l.dir)
	}
	for _, n := range names {
		if err != nil {
			break
		}
		err = fsys.Rename(n+swapSuffix, n)
	}
	if err == nil {
		err = fsys.SyncDir(l.dir)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		// Decided but not done: the files are in between, which only
		// Open may finish.
		err = errors.Join(err, ns.close())
		if l.err == nil {
			return l.poison("clean", err)
		}
		return l.err
	}
	i := 0
	for i < len(l.segs) && l.segs[i] != g[0] {
		i++
	}
	if i+len(g) > len(l.segs)-1 {
		return l.poison("clean", fmt.Errorf("segments of %d..%d are no longer in the log", g[0].base, g[len(g)-1].base))
	}
	segs := make([]*segment, 0, len(l.segs)-len(g)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, ns)
	segs = append(segs, l.segs[i+len(g):]...)
	l.segs = segs
	for _, s := range g {
		s.retire()
	}
	return nil
}

// recoverCleaning finishes or undoes what an interrupted cleaning pass
// left in the directory listing names, before anything else of an open
// reads it:
//
//   - *.cleaned files are removed: the pass stopped before its swap was
//     decided.
//   - BASE.log.swap: the swap was decided. The files of every segment
//     whose base lies in [BASE, the swap log's end) are removed, then the
//     .swap files get their final names, the .log first.
//   - an index's BASE.*.swap without BASE.log.swap: the swap had renamed
//     its log; the index gets its final name when BASE.log exists, else
//     it is removed.
//
// It returns whether it changed the directory (the caller syncs it).
func recoverCleaning(l *Log, names []string) (bool, error) {
	fsys := l.cfg.FS
	path := func(n string) string { return filepath.Join(l.dir, n) }
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	changed := false
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) {
			if err := fsys.Remove(path(n)); err != nil {
				return changed, err
			}
			delete(have, n)
			changed = true
		}
	}
	bases := listSegments(names, map[int64]bool{})
	for _, n := range names {
		base, ok := parseSegmentName(n, logSuffix+swapSuffix)
		if !ok {
			continue
		}
		end, err := swapEnd(l, path(n), base)
		if err != nil {
			return changed, err
		}
		for _, b := range bases {
			if b < base || b >= max(end, base+1) {
				continue
			}
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := fsys.Remove(fileName(l.dir, b, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return changed, err
				}
				delete(have, segmentFile(b, suf))
			}
		}
		if err := fsys.SyncDir(l.dir); err != nil {
			return changed, err
		}
		if err := fsys.Rename(path(n), fileName(l.dir, base, logSuffix)); err != nil {
			return changed, err
		}
		delete(have, n)
		have[segmentFile(base, logSuffix)] = true
		changed = true
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		for _, n := range names {
			base, ok := parseSegmentName(n, suf+swapSuffix)
			if !ok || !have[n] {
				continue
			}
			var err error
			if have[segmentFile(base, logSuffix)] {
				err = fsys.Rename(path(n), fileName(l.dir, base, suf))
			} else {
				err = fsys.Remove(path(n))
			}
			if err != nil {
				return changed, err
			}
			changed = true
		}
	}
	return changed, nil
}

// segmentFile is the name, without the directory, of a segment's file.
func segmentFile(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// swapEnd returns the offset after the last batch of the swap log name,
// a segment based at base (whose every byte was synced before it got
// that name), or base when it holds none.
func swapEnd(l *Log, name string, base int64) (int64, error) {
	f, err := l.cfg.FS.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	end := base
	hb := make([]byte, recordbatch.HeaderSize)
	for pos := int64(0); pos < size; {
		if _, err := f.ReadAt(hb[:min(int64(len(hb)), size-pos)], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		fr, stop := recordbatch.NextFrame(hb[:min(int64(len(hb)), size-pos)], size-pos)
		if stop != recordbatch.FrameOK || fr.Size < recordbatch.HeaderSize {
			return 0, &CorruptionError{File: name, Offset: pos, Err: frameErr(fr, stop, size-pos)}
		}
		end = max(end, recordbatch.Batch(hb).LastOffset()+1)
		pos += fr.Size
	}
	return end, nil
}
