package logstore

import (
	"time"

	"github.com/logstore/logstore/segment"
)

// Events are hooks through which a Store reports what it does, for
// metrics (package metrics turns them into Prometheus metrics) or logs,
// without this package knowing who listens. Set Options.Events; a nil
// *Events, or a nil field, reports nothing and costs nothing.
//
// The store calls a hook synchronously, in the goroutine that did the
// work, sometimes while it holds a lock that appends to the partition
// wait for (Roll is called inside an append; Sync after the fsync has
// released its waiters, under no lock): a hook must return quickly (count,
// observe, hand off), must not block, and must not call back into the
// Store or the Partition. Hooks may be called from many goroutines at
// once. An event passed to a hook is the hook's to keep.
type Events struct {
	// Sync is called after each fsync of a partition's log made for
	// durability: group commit's fsync under SyncAlways (one per group of
	// concurrent appends), SyncInterval's periodic one, Partition.SyncTo.
	// The fsyncs of a roll's background flush, of Open and of Close are
	// not reported.
	Sync func(SyncEvent)
	// Roll is called when a partition's log rolls to a new segment,
	// inside the append that caused the roll.
	Roll func(RollEvent)
	// SnapshotSave is called after each save of a producer-state
	// snapshot: the background save of each roll, and the save at a clean
	// close.
	SnapshotSave func(SnapshotEvent)
	// PartitionOpen is called when Store.Partition has opened a
	// partition (recovering its log and rebuilding its producer state),
	// or failed to.
	PartitionOpen func(OpenEvent)
	// PartitionEvict is called when a partition was closed to keep
	// Options.MaxOpenPartitions, with the close's error (nil: a clean
	// close).
	PartitionEvict func(id PartitionID, err error)
}

// SyncEvent is one fsync of a partition's log (Events.Sync).
type SyncEvent struct {
	Partition PartitionID
	// Duration is how long the appends it covered waited for the disk:
	// the fdatasync of the active segment (and, right after a roll, the
	// wait for the sealed segment's own sync).
	Duration time.Duration
	// Batches and Bytes are what it made durable: the batches appended
	// since the previous such fsync, and their bytes. Batches is the
	// number of batches per group commit.
	Batches int64
	Bytes   int64
	// Err is the fsync's error: the partition is poisoned.
	Err error
}

// RollEvent is a roll of a partition's log to a new segment
// (Events.Roll).
type RollEvent struct {
	Partition PartitionID
	// BaseOffset is the new segment's base offset.
	BaseOffset int64
}

// SnapshotEvent is one save of a producer-state snapshot
// (Events.SnapshotSave).
type SnapshotEvent struct {
	Partition PartitionID
	// Offset is the offset the snapshot is keyed by: the state as of it.
	Offset int64
	// Producers is how many producers the snapshot holds.
	Producers int
	// Duration is how long bbolt took to write and commit it.
	Duration time.Duration
	// Close is set for the save at a clean close, unset for a roll's.
	Close bool
	// Err is the save's error; a failed roll save fails the partition's
	// next append.
	Err error
}

// OpenEvent is the opening of a partition (Events.PartitionOpen).
type OpenEvent struct {
	Partition PartitionID
	// Duration is the whole open: directory, log recovery, snapshot load
	// and replay.
	Duration time.Duration
	// Err is why the open failed; the reports are then zero.
	Err error
	// Recovery is what opening the log found and did
	// (Partition.Recovery): a clean open, or the batches and bytes its
	// scan kept and the bytes it cut.
	Recovery segment.RecoveryReport
	// Startup is how the producer state was rebuilt (Partition.Startup):
	// the snapshot loaded, those skipped, the batches replayed and the
	// producers known.
	Startup StartupReport
}

func (e *Events) roll(ev RollEvent) {
	if e != nil && e.Roll != nil {
		e.Roll(ev)
	}
}

func (e *Events) partitionOpened(id PartitionID, began time.Time, p *Partition, err error) {
	if e == nil || e.PartitionOpen == nil {
		return
	}
	ev := OpenEvent{Partition: id, Duration: time.Since(began), Err: err}
	if p != nil {
		ev.Recovery, ev.Startup = p.recovery, p.startup
	}
	e.PartitionOpen(ev)
}

func (e *Events) partitionEvicted(id PartitionID, err error) {
	if e != nil && e.PartitionEvict != nil {
		e.PartitionEvict(id, err)
	}
}

// syncHook is the log's segment.Config.OnSync: nil when nobody listens,
// so the log does not even call it.
func (p *Partition) syncHook() func(segment.SyncInfo) {
	ev := p.store.opts.Events
	if ev == nil || ev.Sync == nil {
		return nil
	}
	return func(i segment.SyncInfo) {
		ev.Sync(SyncEvent{Partition: p.id, Duration: i.Duration, Batches: i.Batches, Bytes: i.Bytes, Err: i.Err})
	}
}
