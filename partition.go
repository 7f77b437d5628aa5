package logstore

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/vfs"
)

// Partition is one partition of a Store: its segment log, its producer
// state, and the snapshots of that state. It is safe for concurrent use.
type Partition struct {
	id       PartitionID
	store    *Store
	log      *segment.Log
	recovery segment.RecoveryReport
	startup  StartupReport
	state    *producerstate.State // guarded by appendMu
	snaps    *snapshot.Store
	now      func() time.Time
	mode     SyncMode
	// maxBatch is the largest batch accepted, as the log's MaxBatchBytes;
	// SetTopicOptions changes it on an open partition (reconfigure).
	maxBatch atomic.Int64
	// maxRecords bounds what a batch's records may inflate to
	// (Options.MaxRecordsBytes).
	maxRecords int

	// mu is held for reading by every Append and Read, and for writing
	// by Close, so Close waits for the calls in flight, and no call
	// starts on a closed log.
	mu       sync.RWMutex
	closed   bool
	closeErr error

	// appendMu makes the producer check, the log append and the
	// producer-state update one step, so two batches of a producer cannot
	// both pass the check. Syncs happen outside it.
	appendMu sync.Mutex
	// save is the newest roll's snapshot save, running in the
	// background; nil before the first roll. Guarded by appendMu.
	save *snapshotSave
	// txns are the open transactions, for LastStableOffset (txn.go).
	txns txnTracker
	// txnMarked: the directory has its logstore.transactional mark
	// (txnmark.go).
	txnMarked atomic.Bool

	// epochs are the leader-epoch-checkpoint's entries, read at open
	// (epochs.go); nil without one. Not changed after open.
	epochs []EpochEntry

	// durableSig wakes the waiters of DurableChanged and the
	// DurableWatchers registered with the partition (read.go).
	durableSig durableSignal
}

// openPartition opens the log in pdir, which exists.
func openPartition(s *Store, id PartitionID, pdir string) (*Partition, error) {
	// The store's options with the topic's overrides (SetTopicOptions).
	opts := s.optionsFor(id.Topic)
	p := &Partition{
		id:    id,
		store: s,
		mode:  opts.Sync,
		// 0 unless set: recordbatch then bounds by the readers'
		// default, recordbatch.DefaultMaxRecordsBytes.
		maxRecords: opts.MaxRecordsBytes,
	}
	p.maxBatch.Store(int64(cmp.Or(opts.MaxMessageBytes, segment.DefaultMaxBatchBytes)))
	cfg := opts.segmentConfig()
	cfg.AdoptedLogStart = s.adoptedLogStart(id)
	cfg.OnRoll = p.onRoll
	cfg.OnSync = p.syncHook()
	p.now = cfg.Now
	if p.now == nil {
		p.now = time.Now
	}
	log, report, err := segment.Open(pdir, cfg)
	if err != nil {
		return nil, err
	}
	p.log, p.recovery = log, report
	if _, err := s.fs.Stat(filepath.Join(pdir, txnMarkName)); err == nil {
		p.txnMarked.Store(true)
	}
	if err := p.loadLeaderEpochs(pdir); err != nil {
		return nil, errors.Join(err, log.Close())
	}
	if err := p.loadProducerState(pdir); err != nil {
		return nil, errors.Join(err, log.Close(), p.closeSnapshots())
	}
	return p, nil
}

// reconfigure applies o's segment, size and retention options to the
// open partition (Store.SetTopicOptions): the batch limit from the next
// append's check, the log's segment size and age from its next append,
// and its retention at once, by a retention pass here, so that a quiet
// partition does not keep until its next roll what the new retention
// lets go. A failed pass poisons the log, which says so from then on, as
// after a roll's; it is not reconfigure's error.
func (p *Partition) reconfigure(o Options) error {
	if err := p.log.Reconfigure(o.segmentConfig()); err != nil {
		return err
	}
	p.maxBatch.Store(int64(cmp.Or(o.MaxMessageBytes, segment.DefaultMaxBatchBytes)))
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.closed {
		_, _ = p.log.ApplyRetention()
	}
	return nil
}

// ID returns the partition's topic and number.
func (p *Partition) ID() PartitionID { return p.id }

// Recovery reports what opening the partition's log found and did.
func (p *Partition) Recovery() segment.RecoveryReport { return p.recovery }

// StartOffset is the first offset still in the log.
func (p *Partition) StartOffset() int64 { return p.log.StartOffset() }

// EndOffset is the offset the next accepted batch will get.
func (p *Partition) EndOffset() int64 { return p.log.EndOffset() }

// DeleteRecords moves the partition's log start to offset, as Kafka's
// DeleteRecords does, and returns the log start after it (Kafka's low
// watermark). offset -1 is the high watermark (DurableEnd); one below
// -1 or above the high watermark is an error matching
// segment.ErrOffsetOutOfRange, and one at or below the log start changes
// nothing. The records below offset are synced first whatever the sync
// mode, then the new start is, before it returns: a crash afterwards
// neither brings the deleted records back nor leaves the start past the
// log end. Reads below the new start are out of range at once; the
// segments wholly below it are deleted now, or after their roll's flush.
// The producer state is kept, as Kafka keeps it: a producer is still
// known until it expires or a restart replays the log from its new
// start.
func (p *Partition) DeleteRecords(offset int64) (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return -1, p.wrap("delete records", ErrClosed)
	}
	hw := p.DurableEnd()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return p.log.StartOffset(), p.wrap("delete records", fmt.Errorf("%w: cannot move the log start to %d, past the high watermark %d", segment.ErrOffsetOutOfRange, offset, hw))
	}
	if offset <= p.log.StartOffset() {
		return p.log.StartOffset(), nil
	}
	if err := p.log.SyncTo(offset); err != nil {
		return p.log.StartOffset(), p.wrap("delete records", err)
	}
	start, _, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return start, p.wrap("delete records", err)
	}
	return start, nil
}

// onRoll is the log's Config.OnRoll. The log calls it after a roll and
// before it writes the batch that caused it, inside Append and so under
// appendMu: the producer state is then exactly the state as of newBase.
// It drops expired producers, freezes the state and saves it as the
// snapshot keyed by newBase in the background, so appends do not wait for
// bbolt's commit; the save also prunes the snapshots that retention has
// left below the log start. It runs while the log holds its lock: it must
// not call the log's methods (StartOffset excepted, which takes no lock).
//
// A snapshot may reach the disk before the log below newBase does: after
// a crash, the open deletes snapshots above the recovered log end, and
// one at or below it describes the log prefix it was taken from.
func (p *Partition) onRoll(newBase int64, sealed <-chan struct{}) error {
	p.store.opts.Events.roll(RollEvent{Partition: p.id, BaseOffset: newBase})
	// One save at a time, in order; a failed one fails this append.
	if err := p.waitSave(); err != nil {
		return err
	}
	p.state.ExpireProducers(p.now())
	// Freezing copies a pointer per block of entries (about 1 µs for
	// 10,000 producers); the blocks are copied when next written.
	frozen := p.state.Freeze()
	if frozen.Offset() != newBase {
		return fmt.Errorf("logstore: producer state is as of offset %d, the new segment starts at %d", frozen.Offset(), newBase)
	}
	save := &snapshotSave{done: make(chan struct{})}
	p.save = save
	go func() {
		defer close(save.done)
		<-sealed // bbolt's fsyncs come after the ones appends wait for
		if err := p.saveSnapshot(frozen.Snapshot(), false); err != nil {
			save.err = fmt.Errorf("saving the producer snapshot at offset %d: %w", frozen.Offset(), err)
			return
		}
		if _, err := p.snaps.DeleteBelow(p.log.StartOffset()); err != nil {
			save.err = fmt.Errorf("pruning producer snapshots: %w", err)
		}
	}()
	return nil
}

// snapshotSave is one background save of a roll's snapshot.
type snapshotSave struct {
	done chan struct{}
	err  error // read once done is closed
}

// waitSave waits for the newest background save and returns its error.
// The caller holds appendMu.
func (p *Partition) waitSave() error {
	if p.save == nil {
		return nil
	}
	<-p.save.done
	return p.save.err
}

// saveFailed returns the error of a background save that has failed,
// without waiting for one in flight: once a save fails (bbolt could not
// commit), the partition takes no more appends. The caller holds
// appendMu.
func (p *Partition) saveFailed() error {
	if p.save == nil {
		return nil
	}
	select {
	case <-p.save.done:
		return p.save.err
	default:
		return nil
	}
}

// Flushed waits until the background work of every roll so far has
// ended: each sealed segment is durable with its indexes, the recovery
// point has passed it, and its producer snapshot is saved. It returns the
// error of that work, if any. Appends never need it; it is for callers
// that want the directory settled, such as a test or a backup about to
// copy it.
func (p *Partition) Flushed() error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return p.wrap("flush", ErrClosed)
	}
	p.appendMu.Lock()
	save := p.save
	p.appendMu.Unlock()
	var err error
	if save != nil {
		<-save.done
		err = save.err
	}
	if err = errors.Join(err, p.log.Flushed()); err != nil {
		return p.wrap("flush", err)
	}
	return nil
}

// Close stops the partition: it waits for the appends, reads and
// background sync (syncer.go) in flight, and closes the log cleanly (which
// syncs it, in every mode). A poisoned partition closes without the
// clean mark and returns the error that poisoned it. Later calls fail
// with ErrClosed; a later Store.Partition opens the partition again.
// Calling Close again returns the same result.
func (p *Partition) Close() error {
	p.mu.Lock()
	if p.closed {
		err := p.closeErr
		p.mu.Unlock()
		return err
	}
	p.closed = true
	err := p.saveCloseSnapshot()
	err = errors.Join(err, p.log.Close())
	if err == nil {
		// The last flushes may have let retention move the log start.
		_, err = p.snaps.DeleteBelow(p.log.StartOffset())
	}
	err = errors.Join(err, p.closeSnapshots())
	if err == nil {
		// A poisoned log closes without its clean mark, and says nothing;
		// the partition says why the next open will recover.
		err = p.log.Err()
	}
	if err != nil {
		p.closeErr = p.wrap("close", err)
	}
	err = p.closeErr
	p.mu.Unlock()
	p.durableSig.notify()
	p.store.forget(p)
	return err
}

// wrap names the operation, the partition and the store in err.
func (p *Partition) wrap(op string, err error) error {
	return fmt.Errorf("logstore: %s (partition %s, store %s): %w", op, p.id, p.store.dir, err)
}

// StartupReport says how the producer state was rebuilt at open.
type StartupReport struct {
	Snapshots        snapshot.OpenReport        // the snapshot db: created, or set aside
	SnapshotOffset   int64                      // offset of the snapshot loaded, -1 for none
	SkippedSnapshots []snapshot.SkippedSnapshot // corrupt snapshots skipped (and deleted)
	DeletedAbove     int                        // snapshots above the log end removed
	ReplayedBatches  int                        // batches replayed after the snapshot
	Producers        int                        // producers known after the replay
}

// Startup reports how the producer state was rebuilt at open.
func (p *Partition) Startup() StartupReport { return p.startup }

// loadProducerState rebuilds the producer state after the log's
// recovery: snapshots above the recovered log end are deleted (and those
// below the first segment pruned), the newest good snapshot is loaded, and
// the batches after it are replayed without checks (the log is the
// truth). Without a usable snapshot, as in a directory Kafka wrote, the
// whole log is replayed. A producer replayed counts as seen at the time
// of the open, and one loaded without a seen time (an older snapshot) is
// given that time too, so a restart never makes a producer expire
// earlier than it would have live; the snapshot's producers keep the
// seen times they were saved with.
func (p *Partition) loadProducerState(pdir string) error {
	// The snapshot db stays on the real OS, not the store's vfs.FS: bbolt mmaps, flocks and syncs its file itself.
	snaps, rep, err := snapshot.Open(pdir, snapshot.Options{})
	if err != nil {
		return err
	}
	p.snaps = snaps
	p.startup = StartupReport{Snapshots: rep, SnapshotOffset: -1}
	// The replay may start below the log start, where a DeleteRecords
	// left it inside a segment: the batches are still in the file, and
	// a producer whose batches were all deleted is remembered, as it
	// was before the restart, until it expires.
	start, end := p.log.Segments()[0], p.log.EndOffset()
	if p.startup.DeletedAbove, err = snaps.DeleteAbove(end); err != nil {
		return err
	}
	if _, err := snaps.DeleteBelow(start); err != nil {
		return err
	}
	cfg := p.store.opts.producerConfig()
	openedAt := p.now()
	st, skipped, ok, err := snaps.LoadLatestState(end, cfg)
	if err != nil {
		return err
	}
	p.startup.SkippedSnapshots = skipped
	from := start
	if ok && st.MapEndOffset() >= start {
		p.state = st
		p.startup.SnapshotOffset = st.MapEndOffset()
		from = st.MapEndOffset()
	} else {
		p.state = producerstate.New(cfg)
		p.state.SetMapEndOffset(start)
	}
	txr := newTxnReplay(from, openTxns(p.state))
	err = p.log.Batches(from, func(b recordbatch.Batch) error {
		if b.LastOffset() < from {
			return nil
		}
		p.startup.ReplayedBatches++
		if err := txr.batch(b); err != nil {
			return err
		}
		return p.state.Apply(b, openedAt)
	})
	if err != nil {
		return fmt.Errorf("logstore: replaying producer state from offset %d: %w", from, err)
	}
	p.state.SetMapEndOffset(end)
	p.state.ExpireProducers(openedAt)
	p.startup.Producers = p.state.Len()
	return p.recoverTxnIndex(txr)
}

// saveCloseSnapshot waits for the roll's save in flight, then saves the
// producer state at the log end, so the next open replays nothing. A
// poisoned log saves nothing: its end may not be durable.
func (p *Partition) saveCloseSnapshot() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.waitSave(); err != nil || p.log.Err() != nil {
		return err
	}
	return p.saveSnapshot(p.state.Snapshot(), true)
}

func (p *Partition) closeSnapshots() error {
	if p.snaps == nil {
		return nil
	}
	return p.snaps.Close()
}

// ProducerSnapshot returns a copy of the partition's producer state, as
// of its log end.
func (p *Partition) ProducerSnapshot() producerstate.Snapshot {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.state.Snapshot()
}

// saveSnapshot saves snap and reports the save.
func (p *Partition) saveSnapshot(snap producerstate.Snapshot, atClose bool) error {
	ev := p.store.opts.Events
	if ev == nil || ev.SnapshotSave == nil {
		return p.snaps.Save(snap)
	}
	began := time.Now()
	err := p.snaps.Save(snap)
	ev.SnapshotSave(SnapshotEvent{
		Partition: p.id,
		Offset:    snap.Offset,
		Producers: len(snap.Producers),
		Duration:  time.Since(began),
		Close:     atClose,
		Err:       err,
	})
	return err
}

// Producers returns how many producers the partition remembers now. It
// waits for the append in flight, if any, and no longer.
func (p *Partition) Producers() int {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.state.Len()
}

// ErrNoPartition: Store.ExistingPartition was asked for a partition whose
// directory does not exist (never made, or removed by DeleteTopic).
var ErrNoPartition = errors.New("partition directory does not exist")

// ExistingPartition is Partition for a partition whose directory exists
// already: it never creates one. A missing directory is an error
// wrapping ErrNoPartition; a topic that DeleteTopic is removing,
// ErrTopicDeleting, as for Partition.
//
// A server that learns of topics from a catalog opens their partitions
// with it, so a request that raced with the deletion of its topic cannot
// bring the topic's directory back: the existence check and the open are
// one step against DeleteTopic, which waits for partitions being opened
// and closes them before it renames their directories. The catalog alone
// makes partition directories.
func (s *Store) ExistingPartition(topic string, partition int32) (*Partition, error) {
	return s.partition(topic, partition, false)
}

// existingPartitionDir checks that pdir is a directory that exists:
// ErrNoPartition when there is none.
func (s *Store) existingPartitionDir(pdir string) error {
	_, err := s.fs.ReadDir(pdir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNoPartition, pdir)
	}
	return err
}

// partitionDir is an entry of a store directory named as a partition
// (<topic>-<partition>).
type partitionDir struct {
	id   PartitionID
	name string
	// files lists the entries of the partition directory, sorted.
	files []string
	// err is why the entry could not be listed as a directory (a regular
	// file, a dangling symbolic link, a directory that cannot be read):
	// the store cannot open it as a partition. Nil for a partition.
	err error
}

// listPartitionDirs returns the entries of dir named as partitions,
// sorted by topic and partition, each with its files or the error
// listing it gave. A symbolic link is followed. Check reports those
// with an error; Store.Partitions, which needs no files, stats instead.
func listPartitionDirs(fsys vfs.FS, dir string) ([]partitionDir, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var parts []partitionDir
	for _, name := range names {
		id, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		files, err := fsys.ReadDir(filepath.Join(dir, name))
		parts = append(parts, partitionDir{id: id, name: name, files: files, err: err})
	}
	slices.SortFunc(parts, func(a, b partitionDir) int {
		if c := strings.Compare(a.id.Topic, b.id.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.id.Partition, b.id.Partition)
	})
	return parts, nil
}
