package segment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// Config is how a Log lays out, rolls and retains its segments. Zero
// fields take Kafka's defaults.
type Config struct {
	FS                 vfs.FS        // default OS
	SegmentBytes       int64         // segment.bytes: default 1 GiB, at most 2 GiB - 1
	SegmentMaxAge      time.Duration // segment.ms: default 7 days
	IndexIntervalBytes int           // index.interval.bytes: default 4096; 1 indexes every batch
	IndexMaxBytes      int           // segment.index.bytes: default 10 MiB
	MaxBatchBytes      int           // largest batch accepted: default 1048588 (max.message.bytes)
	RetentionBytes     int64         // retention.bytes: <= 0 keeps everything (default)
	RetentionTime      time.Duration // retention.ms: <= 0 keeps everything (default)
	Now                func() time.Time
	// OnRoll is called after a roll, with the new segment's base offset,
	// before the batch that caused the roll is written, with the log's
	// lock held: it must call no method of the Log but StartOffset and
	// DurableEnd (see the package doc, "Locking"). sealed is closed once
	// everything below newBase is durable (or its flush failed):
	// background work can wait for it, so that its own fsyncs do not
	// delay the one an acknowledgement waits for. The root package saves
	// the producer-state snapshot there. An error fails that append.
	OnRoll func(newBase int64, sealed <-chan struct{}) error
	// OnSync, when set, is called after each fsync that group commit's
	// leader made (SyncTo, Sync), failed ones included, with what it
	// covered (see SyncInfo). It runs in the leader's goroutine once the
	// waiters it covered are released, under no lock of the Log: it only
	// delays the leader's own return, so it must be quick.
	OnSync func(SyncInfo)
	// AdoptedLogStart is the log start offset a Kafka broker kept for
	// this partition in its log dir's log-start-offset-checkpoint (above
	// the first segment after a DeleteRecords), or 0. Open uses it only
	// when the directory has segments and no readable checkpoint of its
	// own (logstore.checkpoint): adopted Kafka data. The log then starts
	// at the larger of it and the first segment's base (capped at the
	// log end), so the records Kafka deleted stay deleted; segments
	// wholly below it are removed, as Kafka removes them. The checkpoint
	// the open writes holds that start, so later opens no longer need
	// it. Reconfigure ignores it.
	AdoptedLogStart int64
}

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMaxAge      = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultIndexMaxBytes      = 10 << 20
	DefaultMaxBatchBytes      = 1048588
)

func (c Config) withDefaults() (Config, error) {
	if c.FS == nil {
		c.FS = vfs.OS
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentMaxAge == 0 {
		c.SegmentMaxAge = DefaultSegmentMaxAge
	}
	if c.IndexIntervalBytes == 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.IndexMaxBytes == 0 {
		c.IndexMaxBytes = DefaultIndexMaxBytes
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.SegmentBytes < recordbatch.HeaderSize || c.SegmentBytes > math.MaxInt32:
		return c, fmt.Errorf("logstore/segment: segment bytes %d outside [%d, %d]", c.SegmentBytes, recordbatch.HeaderSize, math.MaxInt32)
	case c.IndexMaxBytes < MinIndexMaxBytes:
		return c, fmt.Errorf("logstore/segment: index max bytes %d below %d", c.IndexMaxBytes, MinIndexMaxBytes)
	case c.MaxBatchBytes < recordbatch.HeaderSize || c.SegmentMaxAge < 0 || c.IndexIntervalBytes < 0:
		return c, fmt.Errorf("logstore/segment: invalid config %+v", c)
	}
	return c, nil
}

// AppendInfo is what an append assigned.
type AppendInfo struct {
	BaseOffset int64 // first offset of the batch
	LastOffset int64 // last offset of the batch
	Position   int64 // byte position in its segment
	Segment    int64 // base offset of its segment
	Rolled     bool  // a new segment was started for it
}

// RecoveryReport says what Open found and did.
type RecoveryReport struct {
	Clean            bool    // the last close was clean: only indexes were checked
	ScannedSegments  []int64 // base offsets of the segments scanned batch by batch
	ScannedBatches   int64   // the batches those scans found valid (and kept)
	ScannedBytes     int64   // and their bytes
	TruncatedBytes   int64   // bytes cut from the log
	TruncatedSegment int64   // base offset of the segment cut, -1 when none
	TruncatedAt      int64   // the log end offset after the cut (the first offset lost), -1 when none
	Reason           error   // why the cut was made; errors.Is(Reason, recordbatch.ErrTruncated) for a torn write
	// DeletedSegment is the base offset of the segment removed because
	// the cut was in the one before it (a roll whose flush had not
	// finished), -1 when none.
	DeletedSegment  int64
	RebuiltIndexes  []int64 // segments whose index files were rebuilt from the log
	CheckpointError error   // an unreadable checkpoint, treated as an unclean shutdown
	// AdoptedLogStart: the log had no checkpoint of its own, and starts
	// at Config.AdoptedLogStart, above its first segment's base.
	AdoptedLogStart bool
	// CutFiles are the files that keep what the cut took, beside the
	// segments: the bytes cut off (<segment>.log.cut-<position>) and the
	// deleted segment's log (<segment>.log.cut-0). Nothing removes them.
	CutFiles []string
	// DamagedTxnIndexes are the segments whose .txnindex did not decode:
	// they start with no entries, for the caller to rebuild from the log
	// (segment.Log.SetTxnIndex), as Kafka recovers such a segment.
	DamagedTxnIndexes []int64
}

// Log is the segments of one partition directory. It is safe for
// concurrent use: appends are serialised, reads run beside them, and
// neither a sync nor the flush of a rolled segment blocks appends while
// the disk works. See the package doc, "Locking", for the lock order and
// what each lock guards.
type Log struct {
	dir string
	cfg Config

	mu     sync.RWMutex
	segs   []*segment // by base offset; the last is active
	err    error      // poison: set by a failed write or sync, returned forever
	closed bool
	flush  *flush     // the newest roll's background flush, nil once it is done
	spares *sparePipe // the next roll's files; not guarded by mu (see sparePipe)
	// durable is the offset below which the log is durable (DurableEnd).
	// It only grows; it is written under mu and read without a lock.
	durable atomic.Int64

	// Group commit (SyncTo). syncMu is held by the one goroutine that
	// syncs the log (the leader) while it syncs, and by Close. gcMu
	// guards syncing, which says a leader is syncing, and syncEnd, which
	// the leader closes when its sync has ended.
	syncMu  sync.Mutex
	gcMu    sync.Mutex
	syncing bool
	syncEnd chan struct{}

	// What Append wrote (guarded by mu), and how much of it the leader's
	// previous fsync had seen (guarded by syncMu): Config.OnSync's
	// SyncInfo.Batches and Bytes.
	appended      appendCount
	syncedThrough appendCount

	// ckptMu serialises the checkpoint's writers (flushes, retention,
	// Close). ckpt is the checkpoint as last written: changed under both
	// ckptMu and mu, so holding either one is enough to read it.
	ckptMu sync.Mutex
	ckpt   checkpoint
	start  atomic.Int64 // ckpt.logStart, readable without a lock
}

// flush is the background work that follows a roll: the sealed segment's
// log is synced; the next spare is created and the directory synced (the
// rename of the spare that became the new segment, its index files and
// the new spare); then the sealed segment's indexes; then the checkpoint's
// recovery point moves to next.
type flush struct {
	seg       *segment
	next      int64         // the base offset of the segment after seg
	prev      *flush        // the flush before this one, which must end first
	logSynced chan struct{} // closed once seg's log is synced, or failed (err)
	durable   chan struct{} // closed once the directory is synced too (the next spare is ready), or failed (err)
	logErr    error         // why seg's log could not be synced; read after logSynced is closed
	err       error         // why the flush failed before durable; read after durable is closed
	done      chan struct{} // closed when the flush has ended (a failure has poisoned the log)
}

// Open opens the log in dir, creating the directory and a first segment
// if needed. After an unclean shutdown (no clean checkpoint) it recovers:
// every segment from the one holding the recovery point on is scanned,
// and a torn write (at or above the recovery point, in the last segment
// or the one before it) is cut, with the last segment deleted when the
// cut is in the one before; other damage is returned as a
// *CorruptionError with nothing changed (see the package doc).
// Everything it recovers is synced before Open returns.
func Open(dir string, cfg Config) (*Log, RecoveryReport, error) {
	rep := RecoveryReport{TruncatedSegment: -1, TruncatedAt: -1, DeletedSegment: -1}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, rep, err
	}
	l := &Log{dir: dir, cfg: cfg}
	if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, rep, err
	}
	bases, err := l.cleanDir()
	if err != nil {
		return nil, rep, err
	}
	ck, ok, err := readCheckpoint(cfg.FS, dir)
	if err != nil {
		if !errors.Is(err, errBadCheckpoint) {
			return nil, rep, err
		}
		rep.CheckpointError = err
	}
	plan := planRecovery(bases, ck, ok, cfg.AdoptedLogStart)
	ck.logStart, rep.Clean, rep.AdoptedLogStart = plan.logStart, plan.clean, plan.adopted
	if err := l.openSegments(&plan, &rep); err != nil {
		return nil, rep, errors.Join(err, l.closeSegments())
	}
	if len(l.segs) == 0 {
		s, err := createSegment(&l.cfg, dir, ck.logStart)
		if err != nil {
			return nil, rep, err
		}
		l.segs = append(l.segs, s)
	}
	if l.spares, err = newSparePipe(cfg.FS, dir); err != nil {
		return nil, rep, errors.Join(err, l.closeSegments())
	}
	// Never below the first segment kept, nor past the end (a start past
	// it, which only damage to the files could leave, would refuse every
	// offset the log still appends).
	ck.logStart = min(max(ck.logStart, l.segs[0].base), l.active().nextOffset)
	// From here on a crash is unclean, and what was recovered is durable.
	// Below the recovery point the segments are durable already (a roll's
	// flush moves it only after syncing them), unless their indexes were
	// rebuilt now.
	for _, s := range l.segs {
		if s.base >= ck.recoveryPoint || slices.Contains(rep.RebuiltIndexes, s.base) {
			if err := s.sync(true); err != nil {
				return nil, rep, errors.Join(err, l.closeSegments())
			}
		}
	}
	if err := cfg.FS.SyncDir(dir); err != nil {
		return nil, rep, errors.Join(err, l.closeSegments())
	}
	l.durable.Store(l.active().nextOffset)
	l.ckpt = checkpoint{logStart: ck.logStart, recoveryPoint: l.durable.Load()}
	l.start.Store(ck.logStart)
	if err := writeCheckpoint(cfg.FS, dir, l.ckpt); err != nil {
		return nil, rep, errors.Join(err, l.closeSegments())
	}
	return l, rep, nil
}

// cleanDir removes what an interrupted operation left (temporary files,
// index files without their log) and returns the segments' base offsets.
func (l *Log) cleanDir() ([]int64, error) {
	names, err := l.cfg.FS.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	// An interrupted cleaning pass first (see recoverCleaning): after it,
	// the listing holds whole segments only.
	if changed, err := recoverCleaning(l, names); err != nil {
		return nil, err
	} else if changed {
		if err := l.cfg.FS.SyncDir(l.dir); err != nil {
			return nil, err
		}
		if names, err = l.cfg.FS.ReadDir(l.dir); err != nil {
			return nil, err
		}
	}
	logs := map[int64]bool{}
	bases := listSegments(names, logs)
	removed := false
	if slices.ContainsFunc(spareNames[:], func(n string) bool { return slices.Contains(names, n) }) {
		base, err := adoptSpare(l.cfg.FS, l.dir, logs)
		if err != nil {
			return nil, err
		}
		if base >= 0 {
			logs[base] = true
			bases = append(bases, base)
		}
		removed = true // a rename or a removal, synced below
	}
	for _, n := range names {
		if leftover(n, logs) != keepFile {
			if err := l.cfg.FS.Remove(filepath.Join(l.dir, n)); err != nil {
				return nil, err
			}
			removed = true
		}
	}
	if removed {
		if err := l.cfg.FS.SyncDir(l.dir); err != nil {
			return nil, err
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// parseSegmentName reads "<20 digits><suffix>".
func parseSegmentName(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// openSegments opens every segment and loads or recovers it, as plan
// decides.
func (l *Log) openSegments(plan *recoveryPlan, rep *RecoveryReport) error {
	bases := plan.bases
	for i, base := range bases {
		s, err := openSegment(&l.cfg, l.dir, base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		if !plan.scanned(i) {
			ok, err := s.load()
			if err != nil {
				return err
			}
			if ok {
				continue
			}
			// Below the recovery point: rebuild the indexes, but damage
			// here was durable data, so it is an error, never a cut.
			rep.RebuiltIndexes = append(rep.RebuiltIndexes, base)
			if _, err := s.recover(int64(l.cfg.IndexIntervalBytes), math.MaxInt64); err != nil {
				return err
			}
			continue
		}
		rep.ScannedSegments = append(rep.ScannedSegments, base)
		rep.RebuiltIndexes = append(rep.RebuiltIndexes, base)
		before := s.size
		res, err := s.recover(int64(l.cfg.IndexIntervalBytes), plan.cutFrom(i))
		if err != nil {
			return err // a refusal (see segmentEnd) or an I/O error
		}
		rep.ScannedBatches += res.batches
		rep.ScannedBytes += res.validBytes
		d := plan.segmentEnd(i, segmentScan{damaged: res.cutReason != nil, end: s.nextOffset})
		if d.lostTail {
			res.cutReason = lostTailErr(s.logName, s.size, s.nextOffset, bases[i+1])
			if d.refuse {
				return res.cutReason
			}
		}
		if d.cut {
			rep.TruncatedBytes = before - res.validBytes
			rep.TruncatedSegment = base
			rep.TruncatedAt = s.nextOffset
			rep.Reason = res.cutReason
			if res.cutFile != "" {
				rep.CutFiles = append(rep.CutFiles, res.cutFile)
			}
			if d.dropNext >= 0 {
				// The last segment came from a roll whose flush had not
				// finished: nothing in it was acknowledged as durable. It
				// leaves the log, but its bytes are kept.
				kept, err := keepSegment(&l.cfg, l.dir, d.dropNext)
				if err != nil {
					return err
				}
				rep.DeletedSegment = d.dropNext
				rep.CutFiles = append(rep.CutFiles, kept)
				break
			}
		}
	}
	// Segments wholly below the log start (retention interrupted before
	// its files were removed) go now.
	// l.segs are the first of plan.bases: a cut that drops a segment
	// drops the last.
	for range belowStart(bases[:len(l.segs)], plan.logStart) {
		if err := l.segs[0].remove(); err != nil {
			return err
		}
		l.segs = l.segs[1:]
	}
	if err := l.loadTxnIndexes(rep); err != nil {
		return err
	}
	// Offsets must increase across segments (see overlaps).
	for i := 1; i < len(l.segs); i++ {
		if prev := l.segs[i-1]; overlaps(prev.nextOffset, l.segs[i].base) {
			return &CorruptionError{File: l.segs[i].logName, Offset: 0, Err: fmt.Errorf("segment starts at %d but the previous one ends at %d", l.segs[i].base, prev.nextOffset-1)}
		}
	}
	return nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// check returns why the log cannot be used, or nil.
func (l *Log) check() error {
	if l.err != nil {
		return l.err
	}
	if l.closed {
		return ErrClosed
	}
	return nil
}

// poison records a failed write or sync: from now on every call fails.
func (l *Log) poison(op string, err error) error {
	l.err = fmt.Errorf("%w: %s in %s: %w", ErrPoisoned, op, l.dir, err)
	return l.err
}

// Append assigns the next offsets to b, stamping its base offset in
// place, rolls to a new segment first if b does not fit the active one,
// and writes it. It does not sync: see Sync. b must have passed
// Validate; a batch larger than MaxBatchBytes or SegmentBytes is refused
// with a *BatchTooLargeError (matching ErrBatchTooLarge) and nothing is
// written.
func (l *Log) Append(b recordbatch.Batch) (AppendInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return AppendInfo{}, err
	}
	if len(b) > l.cfg.MaxBatchBytes || int64(len(b)) > l.cfg.SegmentBytes {
		return AppendInfo{}, &BatchTooLargeError{Size: len(b), MaxBatchBytes: l.cfg.MaxBatchBytes, SegmentBytes: l.cfg.SegmentBytes}
	}
	base := l.active().nextOffset
	if base > math.MaxInt64-int64(b.LastOffsetDelta()) {
		return AppendInfo{}, fmt.Errorf("%w: %d + %d", ErrOffsetOverflow, base, b.LastOffsetDelta())
	}
	b.SetBaseOffset(base)
	info := AppendInfo{BaseOffset: base, LastOffset: b.LastOffset()}
	if reason := l.active().rollReason(b, &l.cfg); reason != "" {
		if err := l.roll(base); err != nil {
			return AppendInfo{}, err
		}
		info.Rolled = true
	}
	s := l.active()
	info.Segment, info.Position = s.base, s.size
	if err := s.append(b, int64(l.cfg.IndexIntervalBytes)); err != nil {
		return AppendInfo{}, l.poison("append", err)
	}
	l.appended.add(len(b))
	return info, nil
}

// roll finishes the active segment and starts a new one at base. The
// sealed segment is flushed in the background (see flush); appends go on
// meanwhile, and Sync waits for that flush before it calls anything in
// the new segment durable. At most one flush is pending: a roll waits for
// the previous one to have synced its segment, so that after a crash a
// torn write can only be in the last two segments.
func (l *Log) roll(base int64) error {
	prev := l.flush
	if prev != nil {
		<-prev.durable // its flush takes no lock before this
		if prev.err != nil {
			return l.poison("roll", prev.err)
		}
	}
	old := l.active()
	if err := old.finish(); err != nil {
		return l.poison("roll", err)
	}
	// The spare files become the new segment; the flush names them.
	sp := l.spares.take()
	if sp == nil {
		return l.poison("roll", errors.New("no spare files for the next segment"))
	}
	s := newSegment(&l.cfg, l.dir, base)
	s.log, s.index.f, s.timeIndex.f = sp.log, sp.index, sp.timeIndex
	s.created = l.cfg.Now()
	l.segs = append(l.segs, s)
	f := &flush{seg: old, next: base, prev: prev, logSynced: make(chan struct{}), durable: make(chan struct{}), done: make(chan struct{})}
	l.flush = f
	go l.runFlush(f)
	if l.cfg.OnRoll != nil {
		if err := l.cfg.OnRoll(base, f.durable); err != nil {
			return fmt.Errorf("logstore/segment: after rolling %s to %d: %w", l.dir, base, err)
		}
	}
	return nil
}

// runFlush makes the segment a roll sealed durable, then moves the
// recovery point past it and applies retention. A failure poisons the
// log.
func (l *Log) runFlush(f *flush) {
	defer close(f.done)
	var err error
	if f.prev != nil {
		<-f.prev.durable
		err = f.prev.err
	}
	if err == nil {
		err = f.seg.log.Sync()
	}
	f.logErr = err
	close(f.logSynced)
	if err == nil {
		err = l.spares.renew(f.next)
	}
	if err == nil {
		// The new segment's names, and the next spare.
		err = l.cfg.FS.SyncDir(l.dir)
	}
	f.err = err
	close(f.durable)
	// Nothing below waits while a roll holds mu: a roll waits only for
	// durable.
	if err == nil {
		err = f.seg.syncIndexes()
	}
	if f.prev != nil {
		<-f.prev.done // the recovery point moves in order
	}
	if err == nil {
		err = l.Err()
	}
	if err == nil {
		err = l.moveRecoveryPoint(f.next)
	}
	l.mu.Lock()
	if err == nil {
		l.advanceDurable(f.next)
	} else if l.err == nil {
		l.poison("flush", err)
	}
	l.mu.Unlock()
	if err == nil {
		l.ApplyRetention() // a failure poisons the log, which says so
	}
	// Only now, with retention's files gone too: Flushed and Close wait
	// for the flush they find here.
	l.mu.Lock()
	if l.flush == f {
		l.flush = nil // no roll came since
	}
	l.mu.Unlock()
}

// moveRecoveryPoint records in the checkpoint that everything below rp
// is durable.
func (l *Log) moveRecoveryPoint(rp int64) error {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	ck := l.ckpt
	if rp <= ck.recoveryPoint {
		return nil
	}
	ck.recoveryPoint = rp
	if err := writeCheckpoint(l.cfg.FS, l.dir, ck); err != nil {
		return err
	}
	l.mu.Lock()
	l.ckpt = ck
	l.mu.Unlock()
	return nil
}

// DurableEnd returns the offset below which the log is durable: every
// batch below it has been fsynced (by a sync, by a roll's flush, or by
// Open, which syncs what it finds). It only grows, and it takes no lock,
// so it may be called from anywhere, even Config.OnRoll. Appends do not
// move it; SyncTo, Sync and the flushes of rolled segments do.
func (l *Log) DurableEnd() int64 { return l.durable.Load() }

// SyncTo returns once every offset below end is durable: group commit.
// A caller whose offsets are durable already returns at once, without a
// sync and without checking whether the log is closed or poisoned. Else,
// when no sync is running, the caller leads one: it covers every append
// made before it started, so it covers the appends of everyone waiting.
// When one is running, the caller waits for its end (it may not cover the
// caller's append, made after it started); then everyone it covered
// returns at once, and one of the others leads the next. Appends go on
// while the leader waits for the disk. After a roll, the sync also waits
// for the sealed segment's log to be synced by its flush (never for a
// directory sync: see spareName). end beyond the log end is an error.
// A failed sync poisons the log, and every waiter returns its error.
func (l *Log) SyncTo(end int64) error {
	for l.durable.Load() < end {
		l.gcMu.Lock()
		if l.durable.Load() >= end {
			l.gcMu.Unlock()
			break
		}
		if l.syncing {
			wait := l.syncEnd
			l.gcMu.Unlock()
			<-wait
			continue
		}
		l.syncing, l.syncEnd = true, make(chan struct{})
		l.gcMu.Unlock()
		d, info, err := l.syncActive()
		l.gcMu.Lock()
		l.syncing = false
		close(l.syncEnd)
		l.gcMu.Unlock()
		if info.synced && l.cfg.OnSync != nil {
			l.cfg.OnSync(info.SyncInfo)
		}
		if err != nil {
			// The log is poisoned (or closed) now: every later call
			// fails, and durable never moves again.
			return err
		}
		if d < end {
			return fmt.Errorf("logstore/segment: %s is durable below offset %d, and ends there: cannot sync to %d", l.dir, d, end)
		}
	}
	return nil
}

// Sync makes everything appended before it was called durable and
// returns the offset below which the log is durable. It is SyncTo of the
// log end, except that a closed or poisoned log always returns its error.
func (l *Log) Sync() (int64, error) {
	l.mu.RLock()
	err := l.check()
	var end int64
	if err == nil {
		end = l.active().nextOffset
	}
	l.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	if err := l.SyncTo(end); err != nil {
		return 0, err
	}
	return l.DurableEnd(), nil
}

// syncActive makes everything appended before it was called durable and
// returns the offset below which the log is durable, and what its fsync
// covered (for Config.OnSync; synced is false when it made none). Only
// group commit's leader calls it (SyncTo). After a roll it also waits for
// the sealed segment's log to be synced by its flush.
func (l *Log) syncActive() (int64, leaderSync, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.RLock()
	if err := l.check(); err != nil {
		l.mu.RUnlock()
		return 0, leaderSync{}, err
	}
	s, end, durable, f := l.active(), l.active().nextOffset, l.durable.Load(), l.flush
	appended := l.appended
	l.mu.RUnlock()
	if end <= durable {
		return durable, leaderSync{}, nil
	}
	// If a roll came since, s is sealed now: syncing it still covers
	// end. After a roll, durability needs the sealed segment's log synced
	// by its flush too (not the directory: see spareName); the two run
	// side by side.
	began := time.Now()
	err := s.log.Sync()
	if f != nil {
		<-f.logSynced
		if err == nil {
			err = f.logErr
		}
	}
	info := leaderSync{synced: true, SyncInfo: SyncInfo{
		Duration: time.Since(began),
		Batches:  appended.batches - l.syncedThrough.batches,
		Bytes:    appended.bytes - l.syncedThrough.bytes,
		Err:      err,
	}}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.err == nil {
			return 0, info, l.poison("sync", err)
		}
		return 0, info, l.err
	}
	l.syncedThrough = appended
	l.advanceDurable(end)
	return l.durable.Load(), info, nil
}

// advanceDurable moves durable up to d. The caller holds mu (for
// writing), so writers never race.
func (l *Log) advanceDurable(d int64) {
	if d > l.durable.Load() {
		l.durable.Store(d)
	}
}

// Flushed waits until the flush of every rolled segment has ended: each
// is durable with its indexes, the checkpoint's recovery point has
// passed it, and retention has deleted the segments it let go. It returns the error that poisoned the log, if any. Appends
// never need it; it is for callers that want the directory settled, such
// as a test about to copy it.
func (l *Log) Flushed() error {
	l.mu.RLock()
	f := l.flush
	l.mu.RUnlock()
	if f != nil {
		<-f.done
	}
	return l.Err()
}

// Read returns whole batches from the one that holds offset, up to
// maxBytes of them but always at least one. An offset at the log end
// returns nothing; one below the log start or above the end is
// ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.ReadAppend(nil, offset, maxBytes)
}

// ReadAppend is Read into dst: it appends the batches to dst and returns
// the extended slice (dst itself, with nothing appended, at the log end
// or on an error). With room for maxBytes past len(dst) (a reused
// buffer) it allocates nothing; see read.go.
func (l *Log) ReadAppend(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.check(); err != nil {
		return dst, err
	}
	end := l.active().nextOffset
	if offset < l.ckpt.logStart || offset > end {
		return dst, fmt.Errorf("%w: %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, l.ckpt.logStart, end)
	}
	for i := l.segmentFor(offset); i < len(l.segs); i++ {
		s := l.segs[i]
		out, found, err := s.readAppend(dst, offset, maxBytes, s.size)
		if err != nil {
			return dst, fmt.Errorf("logstore/segment: reading %s: %w", s.logName, err)
		}
		if found {
			return out, nil
		}
	}
	return dst, nil
}

// segmentFor returns the index of the segment whose range holds offset.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// OffsetForTime returns the first offset whose record timestamp is >= ts,
// or -1 when no record is that late.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.check(); err != nil {
		return -1, err
	}
	for _, s := range l.segs {
		if s.maxTS < ts {
			continue
		}
		off, err := s.offsetForTime(ts, s.size)
		if err != nil || off >= 0 {
			return off, err
		}
	}
	return -1, nil
}

// StartOffset is the log start offset. It takes no lock, so it may be
// called from anywhere, even Config.OnRoll.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset is the next offset an append gets.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().nextOffset
}

// Segments returns the base offsets of the segments, oldest first.
func (l *Log) Segments() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]int64, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.base
	}
	return out
}

// ApplyRetention deletes the oldest segments that RetentionBytes or
// RetentionTime let go, and those wholly below the log start that
// DeleteRecordsBefore set, never the active one nor one still being
// flushed; it moves the log start to the first segment kept (durably,
// before any file is removed; never backwards) and returns the base
// offsets deleted. It also runs after every roll's flush, when a segment
// has just become deletable.
func (l *Log) ApplyRetention() ([]int64, error) {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	return l.advanceStart(-1, "retention")
}

// DeleteRecordsBefore moves the log start to offset, as Kafka's
// DeleteRecords does: offsets below it are gone from then on (Read
// answers ErrOffsetOutOfRange for them) and across a restart, as the
// checkpoint holding the new start is synced before it returns; the
// segments wholly below it are deleted now if flushed, else by the
// retention pass after their flush. An offset at or below the log start
// changes nothing. offset must not be above DurableEnd (the high
// watermark): an offset a crash could take back would leave a start past
// the end. It returns the log start after, and the segments deleted.
func (l *Log) DeleteRecordsBefore(offset int64) (start int64, deleted []int64, err error) {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if d := l.DurableEnd(); offset < 0 || offset > d {
		return l.StartOffset(), nil, fmt.Errorf("%w: cannot move the log start of %s to %d, past the high watermark %d", ErrOffsetOutOfRange, l.dir, offset, d)
	}
	deleted, err = l.advanceStart(offset, "delete records")
	return l.StartOffset(), deleted, err
}

// advanceStart, under ckptMu, moves the log start to to (-1: no such
// bound), to the first segment that retention keeps, whichever is
// further, and deletes the flushed segments wholly below it. A failure
// poisons the log, as op.
func (l *Log) advanceStart(to int64, op string) ([]int64, error) {
	l.mu.RLock()
	if err := l.check(); err != nil {
		l.mu.RUnlock()
		return nil, err
	}
	ck := l.ckpt
	ck.logStart = max(ck.logStart, to)
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	var now int64 // read only when it matters: the clock is the caller's
	if l.cfg.RetentionTime > 0 {
		now = l.cfg.Now().UnixMilli()
	}
	n := 0
	// Only flushed segments go: those the recovery point has passed.
	for ; n < len(l.segs)-1 && l.segs[n+1].base <= l.ckpt.recoveryPoint; n++ {
		s := l.segs[n]
		below := l.segs[n+1].base <= ck.logStart
		bySize := l.cfg.RetentionBytes > 0 && total-s.size >= l.cfg.RetentionBytes
		byTime := l.cfg.RetentionTime > 0 && s.maxTS >= 0 && now-s.maxTS > l.cfg.RetentionTime.Milliseconds()
		if !below && !bySize && !byTime {
			break
		}
		total -= s.size
	}
	ck.logStart = max(ck.logStart, l.segs[n].base)
	l.mu.RUnlock()
	if n == 0 && ck.logStart == l.ckpt.logStart {
		return nil, nil
	}
	// Only advanceStart removes segments, and it holds ckptMu: until it
	// takes mu again, segments can only be added after these.
	err := writeCheckpoint(l.cfg.FS, l.dir, ck)
	l.mu.Lock()
	if err != nil {
		defer l.mu.Unlock()
		return nil, l.poison(op, err)
	}
	l.ckpt = ck
	l.start.Store(ck.logStart)
	// The segments leave the log before their files go, so a failed
	// removal leaves no closed segment behind for Close to close again;
	// no Read is using them once mu is released.
	gone := l.segs[:n]
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	var deleted []int64
	for _, s := range gone {
		deleted = append(deleted, s.base)
		err = errors.Join(err, s.remove())
	}
	if err == nil {
		err = l.cfg.FS.SyncDir(l.dir)
	}
	if err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return deleted, l.poison(op, err)
	}
	return deleted, nil
}

// Err returns the error that poisoned the log, or nil.
func (l *Log) Err() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.err
}

// Close syncs the active segment, adds its closing time index entry,
// records a clean shutdown and closes the files. A poisoned log is closed
// without the clean mark, so the next open recovers, and Close returns
// the error that poisoned it.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	f := l.flush
	l.mu.Unlock()
	if f != nil {
		<-f.done // it takes mu and ckptMu
	}
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	if err == nil {
		err = l.active().seal()
		if err == nil {
			err = writeCheckpoint(l.cfg.FS, l.dir, checkpoint{logStart: l.ckpt.logStart, recoveryPoint: l.active().nextOffset, clean: true})
		}
		if err != nil {
			err = l.poison("close", err)
		}
	}
	err = errors.Join(err, l.closeSegments())
	if err == nil {
		// The empty spare goes, so a closed directory holds only its
		// segments and checkpoint (no directory sync: one left by a crash
		// is empty, and the next open removes it).
		err = removeSpare(l.cfg.FS, l.dir)
	}
	return err
}

func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.close())
	}
	if l.spares != nil {
		errs = append(errs, l.spares.close())
	}
	return errors.Join(errs...)
}

// Batches calls fn with every batch from the one holding offset from to
// the log end as it was when Batches began, in order. The batch passed
// to fn is valid only during the call. It reads segment by segment with
// one buffer, so memory stays flat whatever the log's size; appends go on
// meanwhile (batches appended after the call began are not visited).
func (l *Log) Batches(from int64, fn func(recordbatch.Batch) error) error {
	l.mu.RLock()
	if err := l.check(); err != nil {
		l.mu.RUnlock()
		return err
	}
	type span struct {
		s    *segment
		size int64
	}
	var spans []span
	for i := l.segmentFor(from); i < len(l.segs); i++ {
		l.segs[i].acquire() // a cleaning pass may replace it meanwhile
		spans = append(spans, span{l.segs[i], l.segs[i].size})
	}
	l.mu.RUnlock()
	defer func() {
		for _, sp := range spans {
			sp.s.release()
		}
	}()
	// One buffer for every batch: the header is read into it, then the
	// rest of the batch after it, so no byte is read twice.
	buf := make([]byte, recordbatch.HeaderSize, 64<<10)
	for _, sp := range spans {
		pos, err := sp.s.findBatch(buf, from, sp.size)
		if err != nil {
			return fmt.Errorf("logstore/segment: reading %s: %w", sp.s.logName, err)
		}
		for pos >= 0 && pos < sp.size {
			h, err := sp.s.header(buf, pos)
			if err != nil {
				return fmt.Errorf("logstore/segment: reading %s: %w", sp.s.logName, err)
			}
			n := h.Size()
			if cap(buf) < n {
				buf = append(make([]byte, 0, n), buf[:recordbatch.HeaderSize]...)
			}
			buf = buf[:n]
			// (An empty batch, which cleaning leaves, is its header: no
			// read of nothing at the end of the file, which some FS
			// answers with io.EOF.)
			if _, err := sp.s.log.ReadAt(buf[recordbatch.HeaderSize:], pos+recordbatch.HeaderSize); err != nil && n > recordbatch.HeaderSize {
				return fmt.Errorf("logstore/segment: reading %s at byte %d: %w", sp.s.logName, pos, err)
			}
			if err := fn(recordbatch.Batch(buf)); err != nil {
				return err
			}
			pos += int64(n)
		}
	}
	return nil
}
