package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/logstore/logstore/internal/kafkackpt"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/vfs"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ProblemKind classifies a finding of Check. It is segment.ProblemKind:
// Check reports the findings of segment.Verifier as they are, and adds
// the two kinds only it finds, ProblemSnapshot and ProblemPartition.
// String gives the kind's word in Problem.String: NOTE, TORN_TAIL,
// CORRUPT, INDEX, SNAPSHOT or PARTITION.
type ProblemKind = segment.ProblemKind

// The kinds of findings, as Check reports them; see segment.ProblemKind.
// Every kind but ProblemNote is a problem: something is wrong in the
// store.
const (
	// ProblemNote: nothing is wrong; something the next open tidies up
	// (a Kafka index never trimmed, a leftover file, a snapshot below
	// the log start) or that could not be checked.
	ProblemNote = segment.ProblemNote
	// ProblemTornTail: the active segment of a partition ends in a write
	// an unclean shutdown interrupted; the next open cuts it.
	ProblemTornTail = segment.ProblemTornTail
	// ProblemCorrupt: damaged log data (size, magic, CRC, offsets, an
	// undecodable transaction marker) outside a torn tail, or a batch
	// whose CRC is valid but whose records cannot be decoded.
	ProblemCorrupt = segment.ProblemCorrupt
	// ProblemIndex: an .index or .timeindex entry that disagrees with
	// the log.
	ProblemIndex = segment.ProblemIndex
	// ProblemSnapshot: a producer-state snapshot that cannot be read, or
	// that differs from the state a replay of the log gives at its
	// offset, or that lies where no snapshot can be.
	ProblemSnapshot = segment.ProblemSnapshot
	// ProblemPartition: an entry of the store directory named as a
	// partition (<topic>-<partition>) that is not a directory the store
	// can open: a regular file, a dangling symbolic link or a loop of
	// them, a directory that cannot be read.
	ProblemPartition = segment.ProblemPartition
)

// Problem is one finding of Check.
type Problem struct {
	Kind ProblemKind
	// File is the file concerned, relative to the store directory, with
	// forward slashes: "events-0/00000000000000000000.log".
	File string
	// Pos is the byte position in File, or -1.
	Pos int64
	// Snapshot is the offset of the snapshot concerned (in
	// producer-snapshots.db), or -1.
	Snapshot int64
	// Detail says what is wrong, and what the next open will do about it
	// when that is known.
	Detail string
}

// String formats p as one line, without a newline:
//
//	KIND FILE at byte POS: DETAIL
//	KIND FILE at snapshot offset OFFSET: DETAIL
//	KIND FILE: DETAIL
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Kind.String())
	b.WriteByte(' ')
	b.WriteString(p.File)
	switch {
	case p.Pos >= 0:
		fmt.Fprintf(&b, " at byte %d", p.Pos)
	case p.Snapshot >= 0:
		fmt.Fprintf(&b, " at snapshot offset %d", p.Snapshot)
	}
	b.WriteString(": ")
	b.WriteString(p.Detail)
	return b.String()
}

// CheckStats sums up what Check read and found.
type CheckStats struct {
	Partitions       int
	Segments         int
	Batches          int64 // batches framed, valid or not
	Records          int64 // records in the valid batches
	Bytes            int64 // bytes of .log files read
	IndexEntries     int64 // offset-index entries checked
	TimeIndexEntries int64 // time-index entries checked
	Snapshots        int   // snapshots compared with a replay of the log
	Problems         int   // findings other than notes
	Notes            int
}

// CheckProgress is where a Check is: the partition being read, and the
// bytes of .log files read so far out of the total.
type CheckProgress struct {
	Partition   PartitionID
	Done, Total int64
}

// Checker verifies a store directory without changing it; see Check.
type Checker struct {
	// Report is called with each finding, in order: partitions by topic
	// and number, and within a partition in the order of its files.
	Report func(Problem)
	// Progress, when set, is called as .log bytes are read (about every
	// MiB) and when a partition starts.
	Progress func(CheckProgress)
	// FS is the filesystem to read from; nil means vfs.OS. The snapshot
	// db is opened by bbolt on the operating system's own filesystem.
	FS vfs.FS
}

// Check verifies the store in dir, as Checker{Report: report}.Check does.
func Check(dir string, report func(Problem)) (CheckStats, error) {
	c := Checker{Report: report}
	return c.Check(dir)
}

// Check verifies every partition of the store in dir without changing
// anything: files are opened read-only, the store's lock file is neither
// taken nor created (bbolt's read-only open of producer-snapshots.db
// takes a shared flock on it, which writes nothing), and nothing is
// recovered, cut, rebuilt or deleted. For each partition directory
// (<topic>-<partition>):
//
//   - the segments, as segment.Verifier checks them: every batch's size,
//     magic and CRC (streaming, so memory stays flat), every record of
//     every batch decoded as a reader decodes it (a batch whose records
//     cannot be decoded is ProblemCorrupt at its position: every read of
//     it would fail), offsets increasing within and across segments,
//     every offset- and time-index entry against the log; a torn tail
//     the next open will cut is told apart from corruption;
//   - the producer-state snapshots in producer-snapshots.db (opened with
//     bbolt read-only): each must decode, and must equal the state that
//     replaying the log (producerstate.New and Apply, batch by batch)
//     gives at its offset. A producer the snapshot leaves out is
//     accepted when it has no open transaction: the store forgets idle
//     producers (expiry, the cap) before it saves a snapshot. Each
//     snapshot that passes becomes the state the replay continues from,
//     as the store's own state did. When the log no longer starts at 0
//     (retention), the oldest snapshot at or above the log start is the
//     starting point, taken as it is.
//
// Run Check on a store no process has open: an open store's active
// segment can look torn, and its snapshot db is locked, in which case
// Check fails (after snapshot.DefaultTimeout) rather than waits.
//
// A Kafka log-start-offset-checkpoint in dir (a Kafka log directory the
// store adopts) is read as Open reads it: each partition without a
// checkpoint of its own is checked from the start its entry gives, with
// a note saying so, and a file Open refuses is a ProblemCorrupt.
//
// An entry named as a partition that the store could not open (a
// regular file, a dangling symbolic link or a loop of them) is a
// ProblemPartition; a symbolic link to a directory is followed, as the
// store follows it. A snapshot db that cannot be opened at all (0 bytes,
// not a regular file) is a ProblemSnapshot, and its log is still checked.
//
// Findings go to Report; CheckStats.Problems counts those that are not
// notes. The error is for what stops the check: dir missing or not a
// directory, I/O errors, a snapshot db locked by another process.
func (c *Checker) Check(dir string) (CheckStats, error) {
	var stats CheckStats
	dir = filepath.Clean(dir)
	fsys := c.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	fi, err := fsys.Stat(dir)
	if err != nil {
		return stats, fmt.Errorf("logstore: check store %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return stats, fmt.Errorf("logstore: check store %s: not a directory", dir)
	}
	parts, total, err := listPartitions(fsys, dir)
	if err != nil {
		return stats, fmt.Errorf("logstore: check store %s: %w", dir, err)
	}
	// The Kafka log starts Open adopts (adopt.go); a file Open refuses is
	// a problem, and the partitions are checked as if it were not there.
	kafkaStarts, err := readKafkaLogStarts(fsys, dir)
	if errors.Is(err, ErrBadKafkaCheckpoint) {
		stats.Problems++
		if c.Report != nil {
			c.Report(Problem{Kind: ProblemCorrupt, File: kafkackpt.LogStartFileName, Pos: -1, Snapshot: -1,
				Detail: fmt.Sprintf("%s: the store refuses to open until it is corrected, or removed (each partition without a checkpoint of its own then starts at its first segment)",
					strings.TrimPrefix(err.Error(), filepath.Join(dir, kafkackpt.LogStartFileName)+": "))})
		}
	} else if err != nil {
		return stats, fmt.Errorf("logstore: check store %s: %w", dir, err)
	}
	var done int64
	for _, part := range parts {
		id := part.id
		if bad := whyNotPartition(fsys, dir, part); bad != "" {
			stats.Problems++
			if c.Report != nil {
				c.Report(Problem{Kind: ProblemPartition, File: part.name, Pos: -1, Snapshot: -1, Detail: bad})
			}
			continue
		}
		pc := &partitionCheck{
			c:     c,
			fs:    fsys,
			stats: &stats,
			store: dir,
			id:    id,
			pdir:  filepath.Join(dir, id.String()),
			// As Store.openPartition passes it to the log.
			adoptedStart: kafkaStarts[kafkackpt.Partition{Topic: id.Topic, Partition: id.Partition}],
		}
		if c.Progress != nil {
			c.Progress(CheckProgress{Partition: id, Done: done, Total: total})
		}
		err := pc.run(func(n int64) {
			done += n
			if c.Progress != nil {
				c.Progress(CheckProgress{Partition: id, Done: done, Total: total})
			}
		})
		if err != nil {
			return stats, fmt.Errorf("logstore: check partition %s of store %s: %w", id, dir, err)
		}
		stats.Partitions++
	}
	return stats, nil
}

// listPartitions returns the entries of dir named as partitions, as
// listPartitionDirs does, and the total size of their .log files.
func listPartitions(fsys vfs.FS, dir string) ([]partitionDir, int64, error) {
	parts, err := listPartitionDirs(fsys, dir)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, p := range parts {
		path := filepath.Join(dir, p.name)
		for _, f := range p.files {
			if !strings.HasSuffix(f, ".log") {
				continue
			}
			if info, err := fsys.Lstat(filepath.Join(path, f)); err == nil && info.Mode().IsRegular() {
				total += info.Size()
			}
		}
	}
	return parts, total, nil
}

// whyNotPartition says why the entry p of the store in dir, named as a
// partition, cannot be checked as one (listing it failed: it is not a
// directory the store can open), or returns "" when it can.
func whyNotPartition(fsys vfs.FS, dir string, p partitionDir) string {
	if p.err == nil {
		return ""
	}
	const cannot = "the store cannot open this partition"
	path := filepath.Join(dir, p.name)
	fi, err := fsys.Stat(path)
	if err == nil {
		if fi.IsDir() {
			return fmt.Sprintf("the partition directory cannot be read (%v): the store cannot open partition %s", p.err, p.id)
		}
		what := "a regular file"
		if !fi.Mode().IsRegular() {
			what = "a " + fi.Mode().Type().String() + " file"
		}
		if lfi, lerr := fsys.Lstat(path); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			what = "a symbolic link to " + what
		}
		return fmt.Sprintf("named as a partition, but %s, not a directory: %s", what, cannot)
	}
	target, lerr := fsys.Readlink(path)
	switch {
	case lerr == nil && errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("named as a partition, but a symbolic link to %s, which does not exist: %s", target, cannot)
	case lerr == nil && errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf("named as a partition, but a symbolic link to %s that loops back on itself: %s", target, cannot)
	}
	return fmt.Sprintf("named as a partition, but it cannot be read (%v): %s", err, cannot)
}

// partitionCheck checks one partition: its segments through
// segment.Verifier, and its snapshots against a replay of the batches
// the verifier passes on.
type partitionCheck struct {
	c     *Checker
	fs    vfs.FS
	stats *CheckStats
	store string
	id    PartitionID
	pdir  string
	// adoptedStart is the partition's entry in the store's Kafka
	// log-start-offset-checkpoint, or 0 (segment.Verifier.AdoptedLogStart).
	adoptedStart int64

	snaps    *snapshot.Store
	snapFile string  // producer-snapshots.db, relative to the store
	pending  []int64 // offsets of the snapshots still to compare, ascending
	state    *producerstate.State
	from     int64      // the replay applies batches from this offset on
	broken   bool       // the replay met a batch it could not apply
	txr      *txnReplay // rebuilds the .txnindex entries (checkTxnIndex)
}

// replayConfig is the producer-state configuration of the replay:
// nothing expires and there is no cap, so the replay remembers every
// producer the log has; what the store forgot is judged when comparing.
var replayConfig = producerstate.Config{}

func (pc *partitionCheck) report(p Problem) {
	if p.Kind == ProblemNote {
		pc.stats.Notes++
	} else {
		pc.stats.Problems++
	}
	if pc.c.Report != nil {
		pc.c.Report(p)
	}
}

// rel names path relative to the store, with forward slashes.
func (pc *partitionCheck) rel(path string) string {
	if r, err := filepath.Rel(pc.store, path); err == nil {
		path = r
	}
	return filepath.ToSlash(path)
}

func (pc *partitionCheck) snapshotProblem(kind ProblemKind, offset int64, format string, args ...any) {
	pc.report(Problem{Kind: kind, File: pc.snapFile, Pos: -1, Snapshot: offset, Detail: fmt.Sprintf(format, args...)})
}

func (pc *partitionCheck) run(progress func(int64)) error {
	pc.snapFile = pc.rel(filepath.Join(pc.pdir, snapshot.FileName))
	if err := pc.openSnapshots(); err != nil {
		return err
	}
	if pc.snaps != nil {
		defer pc.snaps.Close()
	}
	v := segment.Verifier{
		FS: pc.fs,
		Report: func(p segment.Problem) {
			pc.report(Problem{Kind: p.Kind, File: pc.rel(p.File), Pos: p.Pos, Snapshot: -1, Detail: p.Detail})
		},
		Begin:           pc.begin,
		Batch:           pc.batch,
		Progress:        progress,
		AdoptedLogStart: pc.adoptedStart,
	}
	vs, err := v.Verify(pc.pdir)
	if err != nil {
		return err
	}
	pc.stats.Segments += vs.Segments
	pc.stats.Batches += vs.Batches
	pc.stats.Records += vs.Records
	pc.stats.Bytes += vs.Bytes
	pc.stats.IndexEntries += vs.IndexEntries
	pc.stats.TimeIndexEntries += vs.TimeIndexEntries
	if vs.UndecodedBatches > 0 {
		pc.report(Problem{Kind: ProblemNote, File: pc.rel(pc.pdir), Pos: -1, Snapshot: -1,
			Detail: fmt.Sprintf("the records of %d batches above 8 MiB were not decoded", vs.UndecodedBatches)})
	}
	return pc.end(vs)
}

// openSnapshots opens producer-snapshots.db read-only, when there is one,
// and lists its snapshots.
func (pc *partitionCheck) openSnapshots() error {
	path := filepath.Join(pc.pdir, snapshot.FileName)
	// The real OS, not pc.fs: bbolt opens and maps the db itself, so the stat must see the file it will open.
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // a partition Kafka wrote, or one never closed nor rolled
	case err == nil && info.Mode().IsRegular() && info.Size() == 0:
		// bbolt's read-only open would try to initialise it, and fail.
		pc.report(Problem{Kind: ProblemSnapshot, File: pc.snapFile, Pos: -1, Snapshot: -1,
			Detail: "the snapshot db is empty (0 bytes, never initialised): the next open initialises it and rebuilds the producer state from the whole log"})
		return nil
	}
	st, _, err := snapshot.Open(pc.pdir, snapshot.Options{ReadOnly: true}) // bbolt, on the real OS: it mmaps and flocks its file
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("%s is locked by another process: is the store open? Check a store that no process has open: %w", path, err)
	case errors.Is(err, snapshot.ErrCorrupt):
		pc.report(Problem{Kind: ProblemSnapshot, File: pc.snapFile, Pos: -1, Snapshot: -1,
			Detail: fmt.Sprintf("the snapshot db cannot be used (%v): the next open sets it aside and rebuilds the producer state from the whole log", err)})
		return nil
	case err != nil:
		// Not a regular file, unreadable: the log can still be checked.
		pc.report(Problem{Kind: ProblemSnapshot, File: pc.snapFile, Pos: -1, Snapshot: -1,
			Detail: fmt.Sprintf("the snapshot db cannot be opened: %s", trimPackage(err))})
		return nil
	}
	offsets, err := st.List()
	if err != nil {
		pc.report(Problem{Kind: ProblemSnapshot, File: pc.snapFile, Pos: -1, Snapshot: -1,
			Detail: fmt.Sprintf("the snapshots cannot be listed: %v", err)})
		return st.Close()
	}
	pc.snaps, pc.pending = st, offsets
	return nil
}

// begin sets up the replay once the first segment kept is known, as the
// next open replays: from an empty state at that segment's base, or,
// when the log no longer starts at 0, from the oldest readable snapshot
// at or above it. (A DeleteRecords may have put the log start above the
// base, inside the segment; the open still replays from the base.)
func (pc *partitionCheck) begin(firstBase int64) error {
	pc.from = firstBase
	for len(pc.pending) > 0 && pc.pending[0] < firstBase {
		pc.snapshotProblem(ProblemNote, pc.pending[0], "below the first segment (offset %d): the next open deletes it", firstBase)
		pc.pending = pc.pending[1:]
	}
	if firstBase > 0 {
		for len(pc.pending) > 0 && pc.state == nil {
			off := pc.pending[0]
			pc.pending = pc.pending[1:]
			snap, err := pc.snaps.Load(off)
			if err != nil {
				pc.snapshotProblem(ProblemSnapshot, off, "cannot be read: %v; the next open skips it", trimPackage(err))
				continue
			}
			pc.state = producerstate.FromSnapshot(replayConfig, snap)
			pc.from = off
			pc.snapshotProblem(ProblemNote, off, "not compared: the log below offset %d is gone, so the replay starts from this snapshot", firstBase)
		}
	}
	if pc.state == nil {
		pc.state = producerstate.New(replayConfig)
		pc.state.SetMapEndOffset(firstBase)
	}
	pc.txr = newTxnReplay(pc.from, openTxns(pc.state))
	return nil
}

// batch replays one valid batch, after comparing the snapshots at or
// below its base offset.
func (pc *partitionCheck) batch(b recordbatch.Batch, file string, pos int64) error {
	if pc.broken || b.LastOffset() < pc.from {
		return nil
	}
	for len(pc.pending) > 0 && pc.pending[0] <= b.BaseOffset() {
		pc.compare(pc.pending[0])
		pc.pending = pc.pending[1:]
	}
	for len(pc.pending) > 0 && pc.pending[0] <= b.LastOffset() {
		pc.snapshotProblem(ProblemSnapshot, pc.pending[0], "the offset lies inside the batch of offsets %d..%d (%s at byte %d): a snapshot is taken between batches",
			b.BaseOffset(), b.LastOffset(), pc.rel(file), pos)
		pc.pending = pc.pending[1:]
	}
	// The seen times the replay gives mean nothing (the log does not
	// hold the store's clock) and are not compared.
	err := pc.txr.batch(b)
	if err == nil {
		err = pc.state.Apply(b, time.Time{})
	}
	if err != nil {
		pc.broken = true
		pc.report(Problem{Kind: ProblemCorrupt, File: pc.rel(file), Pos: pos, Snapshot: -1,
			Detail: fmt.Sprintf("the producer state cannot replay the batch of offsets %d..%d: %v", b.BaseOffset(), b.LastOffset(), err)})
	}
	return nil
}

// end compares the snapshots at the log end, and reports those above it.
func (pc *partitionCheck) end(vs segment.VerifyStats) error {
	if pc.state == nil {
		return nil // Begin was not called: Verify failed first
	}
	logEnd := vs.EndOffset
	for _, off := range pc.pending {
		switch {
		case pc.broken:
			pc.snapshotProblem(ProblemNote, off, "not compared: the replay of the log stopped below this offset")
		case off <= logEnd:
			pc.compare(off)
		case vs.Damaged:
			pc.snapshotProblem(ProblemNote, off, "not compared: the log is damaged below this offset")
		case vs.TornBytes > 0:
			pc.snapshotProblem(ProblemSnapshot, off, "above the log end offset %d that remains once the torn tail is cut: the next open deletes it", logEnd)
		default:
			pc.snapshotProblem(ProblemSnapshot, off, "above the log end offset %d: the next open deletes it", logEnd)
		}
	}
	pc.pending = nil
	return pc.checkTxnIndex(vs)
}

// compare checks the snapshot at off against the replay, which has
// applied every batch below off.
func (pc *partitionCheck) compare(off int64) {
	snap, err := pc.snaps.Load(off)
	if err != nil {
		pc.snapshotProblem(ProblemSnapshot, off, "cannot be read: %v; the next open skips it", trimPackage(err))
		return
	}
	if pc.state.MapEndOffset() < off {
		pc.state.SetMapEndOffset(off) // an offset gap: no batch between
	}
	want := pc.state.Snapshot()
	pc.stats.Snapshots++
	if snap.EqualIgnoringSeen(want) {
		return
	}
	if diffs := diffSnapshot(snap, want); len(diffs) > 0 {
		const shown = 3
		detail := strings.Join(diffs[:min(len(diffs), shown)], "; ")
		if len(diffs) > shown {
			detail += fmt.Sprintf("; and %d more producers differ", len(diffs)-shown)
		}
		pc.snapshotProblem(ProblemSnapshot, off, "differs from a replay of the log up to offset %d: %s", off, detail)
		return
	}
	// The differences are what the store forgot: continue from the
	// snapshot, as the store did.
	pc.state = producerstate.FromSnapshot(replayConfig, snap)
}

// diffSnapshot lists how got (a stored snapshot) differs from want (the
// replay at the same offset), leaving out what the store forgets on
// purpose: a producer with no open transaction missing from got (expired
// or over the cap when got was saved), and a producer that came back
// after being forgotten, whose coordinator epoch then starts afresh.
// Seen times are the store's clock, which the log does not hold: they
// are not compared.
func diffSnapshot(got, want producerstate.Snapshot) []string {
	var diffs []string
	g, w := got.Producers, want.Producers
	for len(g) > 0 || len(w) > 0 {
		switch {
		case len(w) == 0 || len(g) > 0 && g[0].ProducerID < w[0].ProducerID:
			diffs = append(diffs, fmt.Sprintf("producer %d is in the snapshot, but not in the log below it", g[0].ProducerID))
			g = g[1:]
		case len(g) == 0 || w[0].ProducerID < g[0].ProducerID:
			if w[0].TxnFirstOffset >= 0 {
				diffs = append(diffs, fmt.Sprintf("producer %d has a transaction open since offset %d in the log, but the snapshot leaves it out", w[0].ProducerID, w[0].TxnFirstOffset))
			}
			w = w[1:]
		default:
			if d := diffEntry(g[0], w[0]); d != "" {
				diffs = append(diffs, d)
			}
			g, w = g[1:], w[1:]
		}
	}
	return diffs
}

// diffEntry says how a producer's entry in a snapshot differs from the
// replay's, or "" when it does not (beyond a coordinator epoch reset by
// forgetting the producer).
func diffEntry(g, w producerstate.Entry) string {
	if g.EqualIgnoringSeen(w) {
		return ""
	}
	if g.CoordinatorEpoch == -1 {
		reset := g
		reset.CoordinatorEpoch = w.CoordinatorEpoch
		if reset.EqualIgnoringSeen(w) {
			return ""
		}
	}
	id := g.ProducerID
	switch {
	case g.Epoch != w.Epoch:
		return fmt.Sprintf("producer %d: epoch %d, the log gives %d", id, g.Epoch, w.Epoch)
	case g.TxnFirstOffset != w.TxnFirstOffset:
		return fmt.Sprintf("producer %d: open transaction %s, the log gives %s", id, txnText(g.TxnFirstOffset), txnText(w.TxnFirstOffset))
	case g.CoordinatorEpoch != w.CoordinatorEpoch:
		return fmt.Sprintf("producer %d: coordinator epoch %d, the log gives %d", id, g.CoordinatorEpoch, w.CoordinatorEpoch)
	case g.LastTimestamp != w.LastTimestamp:
		return fmt.Sprintf("producer %d: last timestamp %d, the log gives %d", id, g.LastTimestamp, w.LastTimestamp)
	default:
		return fmt.Sprintf("producer %d: window %s, the log gives %s", id, windowText(g.Batches), windowText(w.Batches))
	}
}

func txnText(first int64) string {
	if first < 0 {
		return "none"
	}
	return fmt.Sprintf("from offset %d", first)
}

// windowText formats a window as `logstore producers` does:
// [firstSeq..lastSeq@firstOffset..lastOffset ts=T, ...].
func windowText(w []producerstate.BatchMeta) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, m := range w {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d..%d@%d..%d ts=%d", m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, m.Timestamp)
	}
	b.WriteByte(']')
	return b.String()
}

// trimPackage drops a "logstore/<package>: " prefix from an error's text.
func trimPackage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "logstore/"); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			return after
		}
	}
	return msg
}

// checkTxnIndex compares each segment's .txnindex with the entries the
// replay of the log rebuilt (the open's rule, see recoverTxnIndex): a
// file that does not decode, or whose entries differ from the log's
// ABORT markers, is a ProblemIndex (the next open rebuilds it). Segments
// below the offset the replay started from are not compared.
func (pc *partitionCheck) checkTxnIndex(vs segment.VerifyStats) error {
	if pc.txr == nil || pc.broken || vs.Damaged {
		return nil
	}
	names, err := pc.fs.ReadDir(pc.pdir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, n := range names {
		var base int64
		if len(n) == 24 && filepath.Ext(n) == ".log" {
			if _, err := fmt.Sscanf(n, "%020d.log", &base); err == nil {
				bases = append(bases, base)
			}
		}
	}
	slices.Sort(bases)
	for i, base := range bases {
		end := int64(math.MaxInt64)
		if i+1 < len(bases) {
			end = bases[i+1]
		}
		if end <= pc.txr.from {
			continue
		}
		name := filepath.Join(pc.pdir, fmt.Sprintf("%020d.txnindex", base))
		have, err := pc.readTxnIndex(name, base)
		if err != nil {
			var ce *segment.CorruptionError
			if !errors.As(err, &ce) {
				return err
			}
			pc.report(Problem{Kind: ProblemIndex, File: pc.rel(name), Pos: ce.Offset, Snapshot: -1,
				Detail: fmt.Sprintf("%v; the next open rebuilds it from the log", trimPackage(ce.Err))})
			continue
		}
		var want []segment.AbortedTxn
		for _, t := range pc.txr.aborted {
			if t.LastOffset >= base && t.LastOffset < end {
				want = append(want, t)
			}
		}
		have = slices.DeleteFunc(have, func(t segment.AbortedTxn) bool { return t.LastOffset < pc.txr.from })
		if !equalTxns(have, want) {
			pc.report(Problem{Kind: ProblemIndex, File: pc.rel(name), Pos: -1, Snapshot: -1,
				Detail: fmt.Sprintf("holds the aborted transactions %s, the log's ABORT markers give %s; the next open rebuilds it", txnsText(have), txnsText(want))})
		}
	}
	return nil
}

// readTxnIndex reads and decodes the .txnindex name (none: no entries),
// reading no more than 64 MiB.
func (pc *partitionCheck) readTxnIndex(name string, base int64) ([]segment.AbortedTxn, error) {
	f, err := pc.fs.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	const limit = 64 << 20
	if size > limit {
		return nil, &segment.CorruptionError{File: name, Offset: limit, Err: fmt.Errorf("%d bytes, more than a check reads", size)}
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	entries, whole, err := segment.ParseTxnIndex(name, data, base)
	if err == nil && whole < size {
		err = &segment.CorruptionError{File: name, Offset: whole, Err: fmt.Errorf("%d bytes of a partial entry at the end", size-whole)}
	}
	return entries, err
}

func txnsText(ts []segment.AbortedTxn) string {
	if len(ts) == 0 {
		return "[]"
	}
	s := "["
	for i, t := range ts {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("{pid %d first %d last %d lso %d}", t.ProducerID, t.FirstOffset, t.LastOffset, t.LastStableOffset)
	}
	return s + "]"
}
