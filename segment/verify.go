package segment

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// ProblemKind classifies a finding of Verify, and of the root package's
// Check, which reports Verify's findings with its own about the store
// directory and the producer-state snapshots. Every kind but ProblemNote
// is a problem: something is wrong in the store.
type ProblemKind uint8

const (
	// ProblemNote is not an error: something the next open tidies up
	// (an index Kafka preallocated and never trimmed, a leftover
	// temporary file, a missing index, a snapshot below the log start),
	// or what could not be checked.
	ProblemNote ProblemKind = iota
	// ProblemTornTail: after an unclean shutdown, the active segment ends
	// in bytes that are not a whole valid batch, with no valid batch
	// after them: a write the crash interrupted. The next open cuts them.
	ProblemTornTail
	// ProblemCorrupt: damaged log data: a batch whose size, magic, CRC,
	// codec, record count or offsets are wrong, anywhere but in a torn
	// tail, or a whole batch with a valid CRC whose records cannot be
	// decoded (which the next open keeps, and every read of it fails).
	ProblemCorrupt
	// ProblemIndex: an .index or .timeindex entry that disagrees with the
	// log, in a segment the next open does not rebuild.
	ProblemIndex
	// ProblemSnapshot: a producer-state snapshot that cannot be read, or
	// that differs from the state a replay of the log gives at its
	// offset, or that lies where no snapshot can be. Only Check reports
	// it: Verify does not read snapshots.
	ProblemSnapshot
	// ProblemPartition: an entry of the store directory named as a
	// partition (<topic>-<partition>) that is not a directory the store
	// can open: a regular file, a dangling symbolic link or a loop of
	// them, a directory that cannot be read. Only Check reports it:
	// Verify is given a partition directory.
	ProblemPartition
)

// String is the kind's word, as `logstore check` prints it: NOTE,
// TORN_TAIL, CORRUPT, INDEX, SNAPSHOT or PARTITION.
func (k ProblemKind) String() string {
	switch k {
	case ProblemNote:
		return "NOTE"
	case ProblemTornTail:
		return "TORN_TAIL"
	case ProblemCorrupt:
		return "CORRUPT"
	case ProblemIndex:
		return "INDEX"
	case ProblemSnapshot:
		return "SNAPSHOT"
	case ProblemPartition:
		return "PARTITION"
	}
	return fmt.Sprintf("ProblemKind(%d)", k)
}

// Problem is one finding of Verify.
type Problem struct {
	Kind   ProblemKind
	File   string // the file: the directory given to Verify joined with its name
	Pos    int64  // byte position in File; -1 when the finding is about the whole file
	Detail string
}

// VerifyStats sums up what Verify read.
type VerifyStats struct {
	Segments int   // segments verified (those below the log start are skipped)
	Batches  int64 // batches framed, valid or not
	Records  int64 // records in the valid batches (records decoded), by their record counts
	// UndecodedBatches counts the valid batches above 8 MiB, whose
	// records Verify did not decode (it holds no more than that).
	UndecodedBatches int64
	Bytes            int64 // bytes of .log files read
	IndexEntries     int64 // offset-index entries checked
	TimeIndexEntries int64 // time-index entries checked
	Clean            bool  // the checkpoint says the last shutdown was clean
	StartOffset      int64 // the log start offset the next open uses
	// EndOffset is the offset after the last valid batch before the
	// first damage (torn or corrupt) found, or after the last batch when
	// there is none: where the next open's log would end if it cut at
	// the first damage.
	EndOffset int64
	// Damaged: a ProblemCorrupt was found. Batch was not called for the
	// batches after it.
	Damaged bool
	// TornBytes is the size of the torn tail the next open cuts, 0 when
	// there is none.
	TornBytes int64
}

// Verifier checks a partition directory without changing it. The zero
// value verifies with the OS filesystem and drops what it finds; set
// Report to see it.
type Verifier struct {
	// FS is the filesystem to read from; nil means vfs.OS. Verify only calls
	// ReadDir and OpenFile with os.O_RDONLY, and only reads the files.
	FS vfs.FS
	// Report is called with every finding, a file at a time (its log,
	// then its offset index, then its time index) and in byte order
	// within a file.
	Report func(Problem)
	// Begin, when set, is called once before any Batch with the base
	// offset of the first segment the next open keeps: where its replay
	// of the producer state may start. (The log start it uses, the
	// checkpoint's, may be above it, inside that segment; VerifyStats'
	// StartOffset is that.)
	Begin func(firstBase int64) error
	// Batch, when set, is called with every valid batch in log order, up
	// to the first damage found (so that what it sees is a log the next
	// open keeps), with the .log file it is in and its byte position
	// there. The batch is valid only during the call. It holds the whole
	// batch when the batch is at most 8 MiB, else only its 61-byte
	// header. An error stops Verify and is returned.
	Batch func(b recordbatch.Batch, file string, pos int64) error
	// Progress, when set, is called with the number of .log bytes read
	// since its last call, about every MiB.
	Progress func(n int64)
	// Predict, when set, is called once at the end with what the next
	// Open will do, in RecoveryReport's terms.
	Predict func(OpenPrediction)
	// AdoptedLogStart is Config.AdoptedLogStart of the next open: where
	// the directory has no readable checkpoint of its own, Verify starts
	// the log where that open will (with a note saying so).
	AdoptedLogStart int64
}

// OpenPrediction is what Verify predicts the next Open does to the
// directory, from the same plan Open follows (plan.go). Refusals are
// predicted where Open scans (and for the layout of the segments);
// damage in a segment Open loads without a scan is reported by Verify
// but not predicted here.
type OpenPrediction struct {
	Refused      bool  // Open returns a *CorruptionError
	AdoptedSpare int64 // the base offset a spare segment is named after, -1 when none
	// Scanned are the segments Open scans and whose indexes it rebuilds
	// (RecoveryReport.ScannedSegments).
	Scanned        []int64
	CutSegment     int64 // RecoveryReport.TruncatedSegment: -1 when nothing is cut
	CutPos         int64 // the byte position of the cut in CutSegment, -1 when none
	CutBytes       int64 // RecoveryReport.TruncatedBytes
	DeletedSegment int64 // RecoveryReport.DeletedSegment: -1 when none
	// BelowStart are the segments Open removes as lying wholly below the
	// log start.
	BelowStart []int64
	// Rebuilt are segments Open does not scan whose indexes it rebuilds
	// (an index file is missing); MayRebuild are those whose indexes or
	// log Verify found fault with, which Open may not trust either. The
	// indexes of every other segment not scanned are loaded as they are.
	Rebuilt, MayRebuild []int64
}

// Verify checks the partition directory dir as Verifier{FS: fs, Report:
// report} does. It never writes: files are opened with os.O_RDONLY, and
// nothing is created, truncated, renamed or removed.
func Verify(dir string, fs vfs.FS, report func(Problem)) (VerifyStats, error) {
	v := Verifier{FS: fs, Report: report}
	return v.Verify(dir)
}

// Limits of Verify.
const (
	// verifyHoldBytes is the largest batch Verify holds whole for Batch;
	// larger ones are checked as they stream by.
	verifyHoldBytes = 8 << 20
	// verifyListed is how many findings Verify reports per file before
	// it only counts them, so a file full of garbage does not flood the
	// report.
	verifyListed = 20
	// verifyReadBuffer is the read buffer of each file Verify reads.
	verifyReadBuffer = 64 << 10
	// progressEvery is how many bytes pass between Progress calls.
	progressEvery = 1 << 20
)

// Verify checks every segment of the partition directory dir as the
// next open would find it, and reports what is wrong:
//
//   - every batch of every .log file, streaming: its size, magic, CRC,
//     codec and record count, and its offsets (increasing within a
//     segment and across segments, no lower than the segment's base,
//     within int32 of it);
//   - every record of every batch of at most 8 MiB, decoded as a reader
//     decodes it (recordbatch.ValidateRecords, inflating at most
//     recordbatch.DefaultMaxRecordsBytes, what the readers allow): a
//     batch whose CRC is valid but whose records cannot be decoded is
//     ProblemCorrupt, whatever its place (the next open keeps it, and
//     every read of it fails), and counts as damage; a larger batch's
//     records are not decoded (VerifyStats.UndecodedBatches counts them);
//   - every .index entry: it must name a batch's last offset at the
//     batch's byte position, entries increasing;
//   - every .timeindex entry: it must name an offset of a batch (its
//     last, as logstore and Kafka write it; some Kafka versions name the
//     record holding the timestamp) and that batch's max timestamp,
//     timestamps increasing;
//   - the checkpoint, leftover temporary files and orphan index files.
//
// What the next open would cut is told apart from corruption, using the
// checkpoint as Open does: after an unclean shutdown, damage in the
// active segment with no valid batch after it is a torn tail
// (ProblemTornTail); any other damage is ProblemCorrupt, and when it lies
// where the next open scans, the report says what that open will cut.
// Index disagreements in segments the next open rebuilds (those it scans
// after an unclean shutdown) are notes; elsewhere they are ProblemIndex.
// Kafka's zero-filled index tails are notes.
//
// The error is for what stops the check: I/O errors, or an error from
// Begin or Batch. Memory stays flat whatever the size of the segments.
func (v *Verifier) Verify(dir string) (VerifyStats, error) {
	fsys := v.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	w := &verifyRun{v: v, fs: fsys, dir: dir}
	return w.run()
}

// verifyRun is one Verify call.
type verifyRun struct {
	v     *Verifier
	fs    vfs.FS
	dir   string
	stats VerifyStats
	// firstDamage is set at the first torn or corrupt batch; Batch is not
	// called after it.
	firstDamage bool
	sinceReport int64 // bytes read since the last Progress call
	pred        OpenPrediction
	hold        []byte // the whole batch, for its records and Batch; grows to the largest held
	chunk       []byte // buffer for the batches streamed past
	records     recordbatch.RecordReader
}

func (w *verifyRun) report(p Problem) {
	if w.v.Report != nil {
		w.v.Report(p)
	}
}

func (w *verifyRun) run() (VerifyStats, error) {
	w.pred = OpenPrediction{AdoptedSpare: -1, CutSegment: -1, CutPos: -1, DeletedSegment: -1}
	names, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return w.stats, err
	}
	logs := map[int64]bool{}
	bases := listSegments(names, logs)
	// As Open does: a spare .log holding batches is the newest segment,
	// whose rename a crash interrupted; it is checked where it is.
	spareAt, sparePath := int64(-1), filepath.Join(w.dir, spareName)
	if slices.Contains(names, spareName) {
		base, ok, err := spareBase(w.fs, sparePath)
		if err != nil {
			return w.stats, err
		}
		if ok {
			if err := planSpare(sparePath, base, logs); err != nil {
				w.firstDamage, w.stats.Damaged, w.pred.Refused = true, true, true
				w.report(Problem{Kind: ProblemCorrupt, File: sparePath, Pos: 0,
					Detail: fmt.Sprintf("a spare segment whose first batch's base offset %d is not a new segment's: the next open refuses the partition", base)})
			} else {
				logs[base], spareAt, w.pred.AdoptedSpare = true, base, base
				bases = append(bases, base)
				w.report(Problem{Kind: ProblemNote, File: sparePath, Pos: -1, Detail: fmt.Sprintf("the newest segment, whose rename a crash interrupted: the next open names it %s and rebuilds its indexes", filepath.Base(fileName("", base, logSuffix)))})
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, n := range names {
		path := filepath.Join(w.dir, n)
		switch leftover(n, logs) {
		case leftoverTmp:
			w.report(Problem{Kind: ProblemNote, File: path, Pos: -1, Detail: "left over by an interrupted operation: the next open removes it"})
		case orphanIndex:
			w.report(Problem{Kind: ProblemNote, File: path, Pos: -1, Detail: "an index without its .log file: the next open removes it"})
		default:
			if base, pos, ok := IsCutFile(n); ok {
				w.report(Problem{Kind: ProblemNote, File: path, Pos: -1, Detail: fmt.Sprintf("bytes a recovery cut off segment %020d at byte %d, kept for inspection: nothing reads or removes this file; delete it once looked at", base, pos)})
			}
		}
	}

	ck, ok, err := readCheckpoint(w.fs, w.dir)
	if err != nil {
		if !errors.Is(err, errBadCheckpoint) {
			return w.stats, err
		}
		w.report(Problem{Kind: ProblemNote, File: filepath.Join(w.dir, checkpointName), Pos: -1,
			Detail: fmt.Sprintf("%v: the next open treats the last shutdown as unclean and scans every segment", err)})
	}
	plan := planRecovery(bases, ck, ok, w.v.AdoptedLogStart)
	ck.logStart, w.stats.Clean = plan.logStart, plan.clean
	if plan.adopted {
		w.report(Problem{Kind: ProblemNote, File: w.dir, Pos: -1,
			Detail: fmt.Sprintf("no checkpoint of its own: the next open starts the log at the adopted log start offset %d (Kafka's log-start-offset-checkpoint), above the first segment's base %d", plan.logStart, bases[0])})
	}

	// Segments wholly below the log start are deleted by the next open.
	drop := belowStart(bases, ck.logStart)
	w.pred.BelowStart = slices.Clone(bases[:drop])
	for _, base := range bases[:drop] {
		w.report(Problem{Kind: ProblemNote, File: fileName(w.dir, base, logSuffix), Pos: -1,
			Detail: fmt.Sprintf("the segment lies below the log start offset %d: the next open deletes it", ck.logStart)})
	}
	firstBase := ck.logStart
	if len(bases) > 0 {
		firstBase = bases[drop]
		ck.logStart = max(ck.logStart, firstBase)
	}
	w.stats.StartOffset, w.stats.EndOffset = ck.logStart, ck.logStart
	if plan.adopted {
		// The batches move the end from the first segment's base; the
		// start is capped at it below, as Open caps it.
		w.stats.EndOffset = firstBase
	}
	if w.v.Begin != nil {
		if err := w.v.Begin(firstBase); err != nil {
			return w.stats, err
		}
	}

	// After an unclean shutdown the next open scans from the segment
	// holding the recovery point, and cuts or refuses as plan decides.
	prevEnd := int64(-1) // offset after the previous segment's last batch
	var prev *segCheck
	for i := drop; i < len(bases); i++ {
		base := bases[i]
		sc := &segCheck{
			run:     w,
			plan:    &plan,
			i:       i,
			base:    base,
			logName: fileName(w.dir, base, logSuffix),
			next:    base,
		}
		if base == spareAt {
			sc.logName = sparePath
		}
		if overlaps(prevEnd, base) {
			w.firstDamage, w.stats.Damaged, w.pred.Refused = true, true, true
			w.report(Problem{Kind: ProblemCorrupt, File: sc.logName, Pos: 0,
				Detail: fmt.Sprintf("the segment starts at offset %d, but the previous segment ends at offset %d: the next open refuses the partition", base, prevEnd-1)})
		}
		lostTail := false
		if prev != nil && prev.scanned() && !w.firstDamage {
			d := plan.segmentEnd(prev.i, segmentScan{damaged: prev.framing, end: prevEnd})
			if d.lostTail && d.refuse {
				w.firstDamage, w.stats.Damaged, w.pred.Refused = true, true, true
				w.report(Problem{Kind: ProblemCorrupt, File: prev.logName, Pos: prev.size,
					Detail: fmt.Sprintf("the segment ends at offset %d, but the next one starts at %d, below the recovery point: the next open refuses the partition", prevEnd, base)})
			}
			lostTail = d.lostTail && d.cut
		}
		if lostTail {
			// As Open decides: the segment before this one lost whole
			// batches at its end in a crash before its roll's flush.
			w.firstDamage, w.stats.Damaged = true, true
			w.predictCut(prev.base, prev.size, 0, base)
			w.report(Problem{Kind: ProblemTornTail, File: prev.logName, Pos: prev.size,
				Detail: fmt.Sprintf("torn tail: the segment ends at offset %d, but the next one starts at %d: its last batches were lost in a crash before its roll was flushed; the next open deletes the last segment", prevEnd, base)})
		}
		if err := sc.verify(); err != nil {
			return w.stats, err
		}
		if lostTail {
			w.stats.TornBytes = sc.size
		}
		w.stats.Segments++
		prevEnd = max(prevEnd, sc.next)
		prev = sc
	}
	if plan.adopted {
		w.stats.StartOffset = min(w.stats.StartOffset, w.stats.EndOffset)
	}
	if w.v.Progress != nil && w.sinceReport > 0 {
		w.v.Progress(w.sinceReport)
		w.sinceReport = 0
	}
	if w.v.Predict != nil {
		for i, base := range bases {
			if plan.scanned(i) && base != w.pred.DeletedSegment {
				w.pred.Scanned = append(w.pred.Scanned, base)
			}
		}
		w.v.Predict(w.pred)
	}
	return w.stats, nil
}

// predictCut notes the cut the next open makes: the first, as Open stops
// scanning after a cut that deletes the last segment, and a cut in the
// last segment ends the log.
func (w *verifyRun) predictCut(seg, pos, bytes, deleted int64) {
	if w.pred.CutSegment >= 0 {
		return
	}
	w.pred.CutSegment, w.pred.CutPos, w.pred.CutBytes, w.pred.DeletedSegment = seg, pos, bytes, deleted
}

func (w *verifyRun) progress(n int64) {
	if w.v.Progress == nil {
		return
	}
	w.sinceReport += n
	if w.sinceReport >= progressEvery {
		w.v.Progress(w.sinceReport)
		w.sinceReport = 0
	}
}

// failure is one bad batch (or unreadable stretch) of a .log file.
type failure struct {
	pos    int64
	detail string
	// records: the batch is whole and its header and CRC valid, but its
	// records cannot be decoded. The next open keeps it: it is no torn
	// tail, nor where the open would cut.
	records bool
}

// findings collects the findings of one file, keeping the first
// verifyListed and counting the rest.
type findings struct {
	listed []Problem
	more   int
}

func (f *findings) add(p Problem) {
	if len(f.listed) < verifyListed {
		f.listed = append(f.listed, p)
		return
	}
	f.more++
}

func (f *findings) any() bool { return len(f.listed) > 0 }

func (f *findings) flush(w *verifyRun, file string) {
	for _, p := range f.listed {
		w.report(p)
	}
	if f.more > 0 {
		kind := f.listed[len(f.listed)-1].Kind
		w.report(Problem{Kind: kind, File: file, Pos: -1, Detail: fmt.Sprintf("%d more findings like the ones above in this file, not listed", f.more)})
	}
}

// segCheck verifies one segment: its .log, streaming, and beside it the
// entries of its two indexes, merged by position and offset.
type segCheck struct {
	run     *verifyRun
	base    int64
	logName string
	plan    *recoveryPlan // the next open's
	i       int           // the segment's index in plan.bases
	cutAt   int64         // offset after the last valid batch before the first framing failure
	framing bool          // a failure other than undecodable records was found

	size       int64
	next       int64 // offset after the last batch so far (base before any)
	failures   []failure
	validAfter bool // a batch with a valid header followed the first framing failure

	idx  *indexCheck
	tidx *indexCheck
}

// scanned says the next open scans the segment, cuts at its first
// damage and rebuilds its indexes.
func (s *segCheck) scanned() bool { return s.plan.scanned(s.i) }

func (s *segCheck) fail(f failure) {
	s.run.firstDamage = true
	if !f.records && !s.framing {
		s.framing = true
		s.cutAt = s.next
	}
	s.failures = append(s.failures, f)
}

func (s *segCheck) verify() error {
	w := s.run
	f, err := w.fs.OpenFile(s.logName, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if s.size, err = f.Size(); err != nil {
		return fmt.Errorf("logstore/segment: %s: %w", s.logName, err)
	}
	if s.size > math.MaxInt32 {
		// Open refuses such a segment outright, wherever it scans.
		w.firstDamage, w.stats.Damaged, w.pred.Refused = true, true, true
		w.report(Problem{Kind: ProblemCorrupt, File: s.logName, Pos: 0,
			Detail: fmt.Sprintf("the segment is %d bytes, above the 2 GiB an index position can address: the next open refuses the partition", s.size)})
	}
	if s.idx, err = openIndexCheck(w.fs, fileName(w.dir, s.base, indexSuffix), s.base, offsetEntrySize, s.size); err != nil {
		return err
	}
	defer s.idx.close()
	if s.tidx, err = openIndexCheck(w.fs, fileName(w.dir, s.base, timeIndexSuffix), s.base, timeEntrySize, s.size); err != nil {
		return err
	}
	defer s.tidx.close()
	if s.scanned() {
		s.idx.rebuilt, s.tidx.rebuilt = "the next open rebuilds this index", "the next open rebuilds this index"
	}

	endPos, err := s.scanLog(f)
	if err != nil {
		return err
	}
	w.stats.Bytes += s.size
	w.progress(s.size - endPos) // what framing stopped short of
	s.finishIndexes(endPos)
	s.reportLog()
	s.idx.findings.flush(w, s.idx.name)
	s.tidx.findings.flush(w, s.tidx.name)
	if !s.scanned() {
		// As load decides: a missing index is rebuilt; one with findings,
		// or beside a log with findings, may not be trusted.
		switch {
		case s.size > 0 && (s.idx.missing || s.tidx.missing):
			w.pred.Rebuilt = append(w.pred.Rebuilt, s.base)
		case len(s.failures) > 0 || s.idx.findings.any() || s.tidx.findings.any():
			w.pred.MayRebuild = append(w.pred.MayRebuild, s.base)
		}
	}
	return nil
}

// scanLog reads the .log from start to end, checking each batch, and
// returns the position where framing stopped (the file size when every
// byte was framed into batches).
func (s *segCheck) scanLog(f vfs.File) (int64, error) {
	w := s.run
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, s.size), verifyReadBuffer)
	var hdr [recordbatch.HeaderSize]byte
	if w.chunk == nil {
		w.chunk = make([]byte, 32<<10)
	}
	crcw := &crcWriter{} // CRC of a streamed batch
	readErr := func(pos int64, err error) error {
		return fmt.Errorf("logstore/segment: reading %s at byte %d: %w", s.logName, pos, err)
	}
	pos := int64(0)
	for pos < s.size {
		left := s.size - pos
		// Up to the magic first: a legacy message set may be smaller
		// than a v2 header.
		head := hdr[:min(left, recordbatch.HeaderSizeUpToMagic)]
		if _, err := io.ReadFull(r, head); err != nil {
			return pos, readErr(pos, err)
		}
		f, stop := recordbatch.NextFrame(head, left)
		if stop != recordbatch.FrameOK {
			s.fail(failure{pos: pos, detail: frameDetail(f, stop, left)})
			return pos, nil
		}
		size, magic := f.Size, f.Magic
		switch {
		case magic > recordbatch.Magic || magic < 0:
			s.fail(failure{pos: pos, detail: fmt.Sprintf("magic byte %d: not a record batch; the file cannot be read past here", magic)})
			return pos, nil
		case magic < recordbatch.Magic:
			s.fail(failure{pos: pos, detail: fmt.Sprintf("a magic %d message set (before Kafka 0.11), which logstore does not read", magic)})
		case size < recordbatch.HeaderSize:
			s.fail(failure{pos: pos, detail: fmt.Sprintf("batch size %d is below the %d-byte batch header", size, recordbatch.HeaderSize)})
		}
		if magic != recordbatch.Magic || size < recordbatch.HeaderSize {
			if _, err := r.Discard(int(size) - recordbatch.HeaderSizeUpToMagic); err != nil {
				return pos, readErr(pos, err)
			}
			w.progress(size)
			w.stats.Batches++
			pos += size
			continue
		}
		if _, err := io.ReadFull(r, hdr[recordbatch.HeaderSizeUpToMagic:]); err != nil {
			return pos, readErr(pos, err)
		}

		// A whole v2 header: read the rest, computing the CRC.
		b := recordbatch.Batch(hdr[:])
		var whole recordbatch.Batch
		rest := size - recordbatch.HeaderSize
		var crc uint32
		if size <= verifyHoldBytes {
			if int64(cap(w.hold)) < size {
				w.hold = make([]byte, size)
			}
			w.hold = w.hold[:size]
			copy(w.hold, hdr[:])
			if _, err := io.ReadFull(r, w.hold[recordbatch.HeaderSize:]); err != nil {
				return pos, readErr(pos, err)
			}
			whole = recordbatch.Batch(w.hold)
			crc = whole.ComputeCRC()
		} else {
			crcw.crc = recordbatch.UpdateChecksum(0, hdr[21:])
			if _, err := io.CopyBuffer(crcw, io.LimitReader(r, rest), w.chunk); err != nil {
				return pos, readErr(pos, err)
			}
			crc = crcw.crc
			whole = b
		}
		w.progress(size)
		w.stats.Batches++

		s.idx.batch(pos, b.BaseOffset(), b.LastOffset(), 0)
		s.tidx.batch(pos, b.BaseOffset(), b.LastOffset(), b.MaxTimestamp())
		if detail := s.checkBatch(b, crc); detail != "" {
			s.fail(failure{pos: pos, detail: detail})
		} else {
			if s.framing {
				s.validAfter = true
			}
			if detail := s.checkRecords(whole, size); detail != "" {
				s.fail(failure{pos: pos, detail: detail, records: true})
			} else {
				w.stats.Records += int64(b.NumRecords())
			}
			if !w.firstDamage {
				w.stats.EndOffset = b.LastOffset() + 1
				if w.v.Batch != nil {
					if err := w.v.Batch(whole, s.logName, pos); err != nil {
						return pos, err
					}
				}
			}
		}
		s.next = max(s.next, b.LastOffset()+1)
		pos += size
	}
	return pos, nil
}

// checkBatch checks a v2 batch header and its computed CRC, and returns
// what is wrong, or "".
func (s *segCheck) checkBatch(b recordbatch.Batch, crc uint32) string {
	if stored := b.CRC(); stored != crc {
		return fmt.Sprintf("crc mismatch: stored crc = %d, computed crc = %d (a batch of %d bytes claiming offsets %d..%d)", stored, crc, b.Size(), b.BaseOffset(), b.LastOffset())
	}
	if c := b.Attributes().Codec(); !c.Valid() {
		return fmt.Sprintf("unknown compression codec %d", c)
	}
	if n := b.NumRecords(); n < 0 {
		return fmt.Sprintf("record count %d is negative", n)
	}
	if d := b.LastOffsetDelta(); d < 0 {
		return fmt.Sprintf("last offset delta %d is negative", d)
	}
	switch base := b.BaseOffset(); {
	case base < s.base:
		return fmt.Sprintf("batch base offset %d is below the segment's base offset %d", base, s.base)
	case base < s.next:
		return fmt.Sprintf("batch base offset %d is not above the previous batch's last offset %d", base, s.next-1)
	case b.LastOffset()-s.base > math.MaxInt32:
		return fmt.Sprintf("offset %d does not fit a segment based at %d", b.LastOffset(), s.base)
	}
	return ""
}

// checkRecords decodes every record of a batch whose header is valid,
// and returns what is wrong, or "". whole holds the batch when it is
// held (at most verifyHoldBytes), else only its header.
func (s *segCheck) checkRecords(whole recordbatch.Batch, size int64) string {
	if size > verifyHoldBytes {
		s.run.stats.UndecodedBatches++
		return ""
	}
	if err := s.run.records.ValidateRecords(whole, 0); err != nil {
		// The message names the record and its byte position: leave out
		// the error's position in the records section, which says less.
		var ce *recordbatch.CorruptionError
		if errors.As(err, &ce) {
			err = ce.Err
		}
		detail := fmt.Sprintf("the records of the batch of offsets %d..%d cannot be decoded: %s",
			whole.BaseOffset(), whole.LastOffset(), strings.TrimPrefix(err.Error(), "logstore/recordbatch: "))
		if !s.framing { // else the batch lies after what the next open may cut
			detail += "; the next open keeps the batch (it is whole and its CRC is valid), and every read of it fails"
		}
		return detail
	}
	return ""
}

// reportLog reports the .log's failures: the first framing failure as
// the next open will treat it, the others as corruption.
func (s *segCheck) reportLog() {
	w := s.run
	var out findings
	first := true
	for _, f := range s.failures {
		p := Problem{Kind: ProblemCorrupt, File: s.logName, Pos: f.pos, Detail: f.detail}
		if f.records {
			w.stats.Damaged = true
			out.add(p)
			continue
		}
		isFirst := first
		first = false
		if isFirst && s.scanned() {
			lost := s.size - f.pos
			d := s.plan.segmentEnd(s.i, segmentScan{damaged: true, end: s.cutAt})
			cut := d.cut
			if cut {
				w.predictCut(s.base, f.pos, lost, d.dropNext)
			} else {
				w.pred.Refused = true
			}
			also := ""
			if d.dropNext >= 0 {
				also = ", and the last segment (from a roll whose flush had not finished) deleted, its .log kept as <segment>.log.cut-0"
			}
			kept := filepath.Base(cutFileName(s.logName, f.pos, 0))
			if cut && !s.validAfter {
				p.Kind = ProblemTornTail
				p.Detail = fmt.Sprintf("torn tail: %d bytes, will be cut at the next open and kept in %s%s (%s)", lost, kept, also, f.detail)
				w.stats.TornBytes = lost
				out.add(p)
				// What follows is inside the torn tail.
				break
			}
			if cut {
				p.Detail += fmt.Sprintf("; the next open cuts the log here, dropping %d bytes of this file (kept in %s)%s", lost, kept, also)
			} else {
				p.Detail += "; the next open refuses the partition: this is synced data (below the recovery point, or in a segment whose roll was flushed), so it is not cut"
			}
		}
		w.stats.Damaged = true
		out.add(p)
	}
	out.flush(w, s.logName)
}

// finishIndexes checks the index entries left after the last batch.
// endPos is where the log's framing stopped.
func (s *segCheck) finishIndexes(endPos int64) {
	framedAll := endPos == s.size
	s.idx.finish(framedAll, endPos, s.next)
	s.tidx.finish(framedAll, endPos, s.next)
	s.run.stats.IndexEntries += s.idx.checked
	s.run.stats.TimeIndexEntries += s.tidx.checked
}

// crcWriter computes a CRC-32C of what is written to it.
type crcWriter struct{ crc uint32 }

func (c *crcWriter) Write(p []byte) (int, error) {
	c.crc = recordbatch.UpdateChecksum(c.crc, p)
	return len(p), nil
}

// indexCheck reads one index file (.index or .timeindex) entry by entry
// and checks the entries against the batches of the log as they go by,
// in one merged pass: both are ordered, the offset index by position and
// the time index by offset.
type indexCheck struct {
	name     string
	base     int64
	esize    int64 // entry size: offsetEntrySize or timeEntrySize
	f        vfs.File
	r        *bufio.Reader
	size     int64
	entries  int64  // whole entries in the file
	i        int64  // entries read so far
	rebuilt  string // set by the caller when the next open rebuilds the index or deletes the segment: says so
	checked  int64
	findings findings

	// The current entry, when has.
	has      bool
	at       int64 // its byte position in the file
	off, pos int64 // offset index: offset and position; time index: offset, and ts in ts
	ts       int64
	prevOff  int64
	prevKey  int64 // the previous entry's position (offset index) or timestamp (time index)
	done     bool  // the real entries ended (zero slots or end of file)
	missing  bool  // the file does not exist

	// For the message of an entry inside a batch: the last batch seen.
	lastBatchPos, lastBatchOff int64
}

func openIndexCheck(fsys vfs.FS, name string, base, esize, logSize int64) (*indexCheck, error) {
	x := &indexCheck{name: name, base: base, esize: esize, prevOff: -1, prevKey: math.MinInt64, lastBatchPos: -1, lastBatchOff: -1}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		if logSize > 0 {
			x.note(-1, "missing: the next open rebuilds it from the log")
		}
		x.done, x.missing = true, true
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	x.f = f
	if x.size, err = f.Size(); err != nil {
		f.Close()
		return nil, fmt.Errorf("logstore/segment: %s: %w", name, err)
	}
	x.entries = x.size / esize
	x.r = bufio.NewReaderSize(io.NewSectionReader(f, 0, x.entries*esize), verifyReadBuffer)
	return x, nil
}

func (x *indexCheck) close() {
	if x.f != nil {
		x.f.Close()
	}
}

func (x *indexCheck) isTime() bool { return x.esize == timeEntrySize }

func (x *indexCheck) kindName() string {
	if x.isTime() {
		return "time index"
	}
	return "offset index"
}

func (x *indexCheck) note(pos int64, detail string) {
	x.findings.add(Problem{Kind: ProblemNote, File: x.name, Pos: pos, Detail: detail})
}

// problem reports an entry that disagrees with the log: a note when the
// next open rebuilds the index anyway.
func (x *indexCheck) problem(pos int64, detail string) {
	if x.rebuilt != "" {
		x.note(pos, detail+"; "+x.rebuilt)
		return
	}
	x.findings.add(Problem{Kind: ProblemIndex, File: x.name, Pos: pos, Detail: detail})
}

// describe names the current entry.
func (x *indexCheck) describe() string {
	if x.isTime() {
		return fmt.Sprintf("entry (timestamp %d, offset %d)", x.ts, x.off)
	}
	return fmt.Sprintf("entry (offset %d, position %d)", x.off, x.pos)
}

// advance reads the next well-ordered entry into the cursor, reporting
// the entries that are out of order, and the zero slots that end the
// real entries, as an open reads them.
func (x *indexCheck) advance() {
	x.has = false
	var e [timeEntrySize]byte
	for !x.done {
		if x.i >= x.entries {
			x.done = true
			return
		}
		at := x.i * x.esize
		if _, err := io.ReadFull(x.r, e[:x.esize]); err != nil {
			x.problem(at, fmt.Sprintf("unreadable: %v", err))
			x.done = true
			return
		}
		x.i++
		var rel int32
		var key int64
		if x.isTime() {
			key = int64(binary.BigEndian.Uint64(e[:]))
			rel = int32(binary.BigEndian.Uint32(e[8:]))
			x.ts = key
		} else {
			rel = int32(binary.BigEndian.Uint32(e[:]))
			key = int64(int32(binary.BigEndian.Uint32(e[4:])))
			x.pos = key
		}
		// A zero slot ends the entries: after the first entry, an entry
		// with relative offset 0 (and, in a time index, timestamp 0), or
		// a first entry of all zeros (no real entry puts the first batch
		// at position 0, nor timestamp 0 at the base).
		if rel == 0 && (x.isTime() && key == 0 || !x.isTime() && (x.i > 1 || key == 0)) {
			x.zeroTail(at)
			return
		}
		x.off = x.base + int64(rel)
		x.at = at
		x.checked++
		switch {
		case rel < 0:
			x.problem(at, fmt.Sprintf("%s: the offset is below the segment's base offset %d", x.describe(), x.base))
		case !x.isTime() && key < 0:
			x.problem(at, fmt.Sprintf("%s: the position is negative", x.describe()))
		case !x.isTime() && x.off <= x.prevOff:
			x.problem(at, fmt.Sprintf("%s: the offset is not above the previous entry's %d", x.describe(), x.prevOff))
		case !x.isTime() && key <= x.prevKey:
			x.problem(at, fmt.Sprintf("%s: the position is not above the previous entry's %d", x.describe(), x.prevKey))
		case x.isTime() && key <= x.prevKey:
			x.problem(at, fmt.Sprintf("%s: the timestamp is not above the previous entry's %d", x.describe(), x.prevKey))
		case x.isTime() && x.off < x.prevOff:
			x.problem(at, fmt.Sprintf("%s: the offset is below the previous entry's %d", x.describe(), x.prevOff))
		default:
			x.prevOff, x.prevKey = x.off, key
			x.has = true
			return
		}
	}
}

// zeroTail handles the zero slot at byte at: the rest of the file should
// be zeros, which is Kafka's preallocation, left untrimmed.
func (x *indexCheck) zeroTail(at int64) {
	x.done = true
	rest := x.size - at
	// The slot just read was zero up to the fields examined; check it
	// and everything after it byte by byte.
	sr := io.NewSectionReader(x.f, at, rest)
	buf := make([]byte, 32<<10)
	var p int64
	for {
		n, err := sr.Read(buf)
		for i, c := range buf[:n] {
			if c != 0 {
				x.problem(at+p+int64(i), fmt.Sprintf("non-zero byte after the %s's zero slots from byte %d: an open reads no entry past byte %d", x.kindName(), at, at))
				return
			}
		}
		p += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			x.problem(at+p, fmt.Sprintf("unreadable: %v", err))
			return
		}
	}
	x.note(at, fmt.Sprintf("%d bytes of zero slots after %s (an index preallocated and not trimmed, as Kafka leaves it): the next open drops them", rest, entriesText(x.i-1)))
}

// batch moves the cursor past the entries that belong before or at the
// batch at pos (offsets base..last, max timestamp maxTS) and checks the
// ones that name it. A time-index entry may name any offset of the batch
// whose max timestamp it holds: logstore writes the batch's last offset,
// as Kafka's LogSegment does, but some Kafka versions write the offset of
// the record that has the timestamp.
func (x *indexCheck) batch(pos, base, last, maxTS int64) {
	if x.i == 0 && !x.done {
		x.advance()
	}
	for x.has {
		if x.isTime() {
			if x.off > last {
				break
			}
			switch {
			case x.off < base:
				x.problem(x.at, fmt.Sprintf("%s: offset %d is in no batch (the next batch, at byte %d, holds offsets %d..%d)", x.describe(), x.off, pos, base, last))
			case x.ts != maxTS:
				x.problem(x.at, fmt.Sprintf("%s: the batch ending at offset %d has max timestamp %d", x.describe(), last, maxTS))
			}
		} else {
			if x.pos > pos {
				break
			}
			switch {
			case x.pos < pos:
				x.problem(x.at, fmt.Sprintf("%s: position %d is not the start of a batch (it lies inside the batch at byte %d, which ends at offset %d)", x.describe(), x.pos, x.lastBatchPos, x.lastBatchOff))
			case x.off != last:
				x.problem(x.at, fmt.Sprintf("%s: the batch at byte %d ends at offset %d", x.describe(), pos, last))
			}
		}
		x.advance()
	}
	x.lastBatchPos, x.lastBatchOff = pos, last
}

// finish reports the entries left after the last batch: past the end of
// the log when the whole log was read, unchecked when its reading
// stopped early.
func (x *indexCheck) finish(framedAll bool, endPos, next int64) {
	if x.i == 0 && !x.done {
		x.advance()
	}
	unchecked := 0
	for x.has {
		switch {
		case !framedAll:
			unchecked++
		case x.isTime():
			x.problem(x.at, fmt.Sprintf("%s: past the log, whose last offset is %d", x.describe(), next-1))
		default:
			x.problem(x.at, fmt.Sprintf("%s: past the log, which is %d bytes", x.describe(), endPos))
		}
		x.advance()
	}
	if unchecked > 0 {
		detail := fmt.Sprintf("%s not checked: the log cannot be read past byte %d", entriesText(int64(unchecked)), endPos)
		if x.rebuilt != "" {
			detail += "; " + x.rebuilt
		}
		x.note(-1, detail)
	}
	if rem := x.size % x.esize; rem != 0 && x.f != nil {
		x.problem(x.entries*x.esize, fmt.Sprintf("%d bytes after the last whole entry: the %s is %d bytes, not a multiple of %d", rem, x.kindName(), x.size, x.esize))
	}
}

// entriesText is "1 entry" or "n entries".
func entriesText(n int64) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
