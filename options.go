package logstore

import (
	"fmt"
	"math"
	"time"

	"github.com/logstore/logstore/internal/testseam"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

// DefaultLockTimeout is how long Open waits for another holder of the
// store's lock when Options.LockTimeout is zero.
const DefaultLockTimeout = 10 * time.Second

// SyncMode says when appended batches are fsynced, and so what an
// acknowledged append survives. The zero value is SyncAlways.
type SyncMode struct {
	kind     syncKind
	interval time.Duration
}

type syncKind uint8

const (
	syncAlways syncKind = iota
	syncInterval
	syncNever
)

var (
	// SyncAlways acknowledges an append only after its bytes are fsynced.
	// Concurrent appenders share fsyncs (group commit). The default.
	SyncAlways = SyncMode{kind: syncAlways}

	// SyncNever never fsyncs appended batches, except on a clean Close.
	// An acknowledged append survives a crash of the process (the data is
	// in the page cache) but not a crash of the machine.
	SyncNever = SyncMode{kind: syncNever}
)

// SyncInterval fsyncs every d in the background and acknowledges an
// append as soon as it is written. A machine crash loses at most the
// appends of the last d (plus the time one fsync takes). d must be > 0.
func SyncInterval(d time.Duration) SyncMode {
	return SyncMode{kind: syncInterval, interval: d}
}

// Interval returns the period of a SyncInterval mode, and 0 otherwise.
func (m SyncMode) Interval() time.Duration {
	if m.kind == syncInterval {
		return m.interval
	}
	return 0
}

func (m SyncMode) String() string {
	switch m.kind {
	case syncAlways:
		return "always"
	case syncInterval:
		return fmt.Sprintf("interval(%s)", m.interval)
	case syncNever:
		return "never"
	}
	return fmt.Sprintf("SyncMode(%d)", m.kind)
}

func (m SyncMode) validate() error {
	switch m.kind {
	case syncAlways, syncNever:
		return nil
	case syncInterval:
		if m.interval <= 0 {
			return fmt.Errorf("logstore: sync interval %s: must be above zero", m.interval)
		}
		return nil
	}
	return fmt.Errorf("logstore: unknown sync mode %d", m.kind)
}

// Options configure a Store. The zero value is a durable store with
// Kafka's segment defaults, that keeps everything.
//
// The segment fields apply to every partition of the store. They are
// Kafka's topic configs of the same names (in Go case, a duration for
// each .ms), and their zero values mean Kafka's defaults, except where
// a field says otherwise.
type Options struct {
	// Sync is when appends are fsynced; default SyncAlways.
	Sync SyncMode

	// LockTimeout is how long Open waits while another process (or
	// another Store in this process) holds the store's lock before it
	// fails with ErrStoreInUse. Zero means DefaultLockTimeout; a negative
	// value tries once and does not wait.
	LockTimeout time.Duration

	// SegmentBytes is segment.bytes: a partition rolls to a new segment
	// file before a batch would take the active one past this size. Zero
	// means segment.DefaultSegmentBytes (1 GiB); otherwise from
	// recordbatch.HeaderSize (61) to 2 GiB - 1. A batch larger than this
	// is refused.
	SegmentBytes int64

	// SegmentTime is segment.ms: a partition rolls to a new segment when
	// the batch being appended is this much newer, by record timestamps,
	// than the active segment's first batch (or, when that batch has no
	// timestamp, when the segment is this old on the store's clock).
	// Zero means segment.DefaultSegmentMaxAge (7 days); negative is an
	// error.
	SegmentTime time.Duration

	// SegmentIndexBytes is segment.index.bytes: the largest offset index
	// and time index of a segment; a full index rolls the segment. Zero
	// means segment.DefaultIndexMaxBytes (10 MiB); otherwise at least
	// segment.MinIndexMaxBytes (24, two time-index entries).
	SegmentIndexBytes int

	// IndexIntervalBytes is index.interval.bytes: how many bytes of
	// batches go between two index entries. Zero means
	// segment.DefaultIndexIntervalBytes (4096); 1 indexes every batch;
	// negative is an error.
	IndexIntervalBytes int

	// MaxMessageBytes is max.message.bytes: the largest batch (not
	// record) Append accepts. Zero means segment.DefaultMaxBatchBytes
	// (1048588); otherwise at least recordbatch.HeaderSize (61).
	MaxMessageBytes int

	// RetentionBytes is retention.bytes: the oldest segments of a
	// partition are deleted while the ones after them still hold at
	// least this many bytes. Zero or negative (Kafka's -1) keeps
	// everything, the default.
	RetentionBytes int64

	// RetentionTime is retention.ms: the oldest segments of a partition
	// are deleted while their newest record timestamp is older than this
	// on the store's clock. Zero or negative keeps everything, the
	// default (unlike Kafka, whose default is 7 days).
	//
	// Retention runs after each roll, once the segments are durable; it
	// never deletes the active segment.
	RetentionTime time.Duration

	// ProducerExpiry is how long a producer may stay idle before the
	// partition forgets it. Idleness is judged on the store's clock: the
	// time the store last accepted a batch of the producer, kept in
	// every snapshot, and at open the open's time for a producer
	// replayed from the log after the snapshot. Record timestamps play
	// no part (unlike Kafka, which judges on them). Zero means
	// producerstate.DefaultExpireAfter (1 day); a negative value turns
	// expiry off.
	ProducerExpiry time.Duration

	// MaxProducers caps the producers a partition remembers; past it the
	// longest-idle one (by the same seen times) without an open
	// transaction is forgotten. Zero: no cap.
	MaxProducers int

	// MaxRecordsBytes bounds what the records of one compressed batch may
	// inflate to. Append decodes every record before it writes a batch,
	// and refuses one whose records go past this bound once that many
	// bytes are out, without inflating the rest (a gzip bomb). Zero means
	// recordbatch.DefaultMaxRecordsBytes (64 MiB: 64 times the default
	// largest batch), the bound every reader of the store (Read's callers,
	// dump, perf consume) inflates to: a larger value would let in
	// batches those readers refuse, so it is an error, as is a negative
	// one.
	MaxRecordsBytes int

	// MaxOpenPartitions bounds the partitions open at once (each holds
	// its active segment's three files, its snapshot db and its
	// directory's handles: some 7 file descriptors), so that a store of
	// more partitions than the process's descriptors allow serves them
	// all: opening one more closes another cleanly (fsynced, with a
	// snapshot and the clean mark, so that reopening it is quick): the
	// least recently used of those not looked up for EvictIdle, or else
	// the least recently used of all; never one a DurableWatcher
	// watches. A *Partition taken before then answers ErrClosed (its
	// operations in flight finish first). When every open partition is
	// watched or being opened, Partition fails with
	// ErrTooManyOpenPartitions, which passes. 0 is no bound.
	MaxOpenPartitions int
	// EvictIdle is how long since its last lookup a partition counts as
	// idle, the first to close for MaxOpenPartitions; 0 is
	// DefaultEvictIdle.
	EvictIdle time.Duration

	// Events, when set, are hooks through which the store reports its
	// fsyncs, segment rolls, snapshot saves and partition opens (for
	// metrics: see Events, and package metrics). Nil reports nothing.
	Events *Events

	// fs is the filesystem of the store directory and everything below
	// it but the lock file, and now is the store's clock: vfs.OS and
	// time.Now, unless a test sets them (Options.WithFS and WithClock
	// of export_test.go here, package internal/testseam elsewhere in
	// the module) to inject faults, simulate power loss or move time.
	fs  vfs.FS
	now func() time.Time
}

// init hands the setters of fs and now to package internal/testseam, for
// the tests of the module outside this package.
func init() {
	testseam.Register(
		func(o Options, fs vfs.FS) Options { o.fs = fs; return o },
		func(o Options, now func() time.Time) Options { o.now = now; return o },
	)
}

// segmentConfig is the configuration of a partition's log that o gives,
// without the partition's OnRoll.
func (o Options) segmentConfig() segment.Config {
	return segment.Config{
		FS:                 o.fs,
		SegmentBytes:       o.SegmentBytes,
		SegmentMaxAge:      o.SegmentTime,
		IndexIntervalBytes: o.IndexIntervalBytes,
		IndexMaxBytes:      o.SegmentIndexBytes,
		MaxBatchBytes:      o.MaxMessageBytes,
		RetentionBytes:     o.RetentionBytes,
		RetentionTime:      o.RetentionTime,
		Now:                o.now,
	}
}

// producerConfig is the producer-state configuration o gives.
func (o Options) producerConfig() producerstate.Config {
	c := producerstate.Config{ExpireAfter: o.ProducerExpiry, MaxProducers: o.MaxProducers}
	if c.ExpireAfter == 0 {
		c.ExpireAfter = producerstate.DefaultExpireAfter
	}
	return c
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if err := o.Sync.validate(); err != nil {
		return o, err
	}
	switch {
	case o.SegmentBytes != 0 && (o.SegmentBytes < recordbatch.HeaderSize || o.SegmentBytes > math.MaxInt32):
		return o, fmt.Errorf("logstore: Options.SegmentBytes %d: must be 0 (the default, %d) or from %d to %d", o.SegmentBytes, segment.DefaultSegmentBytes, recordbatch.HeaderSize, math.MaxInt32)
	case o.SegmentTime < 0:
		return o, fmt.Errorf("logstore: Options.SegmentTime %s: must be 0 (the default, %s) or more", o.SegmentTime, segment.DefaultSegmentMaxAge)
	case o.SegmentIndexBytes != 0 && o.SegmentIndexBytes < segment.MinIndexMaxBytes:
		return o, fmt.Errorf("logstore: Options.SegmentIndexBytes %d: must be 0 (the default, %d) or at least %d", o.SegmentIndexBytes, segment.DefaultIndexMaxBytes, segment.MinIndexMaxBytes)
	case o.IndexIntervalBytes < 0:
		return o, fmt.Errorf("logstore: Options.IndexIntervalBytes %d: must be 0 (the default, %d) or more", o.IndexIntervalBytes, segment.DefaultIndexIntervalBytes)
	case o.MaxMessageBytes != 0 && o.MaxMessageBytes < recordbatch.HeaderSize:
		return o, fmt.Errorf("logstore: Options.MaxMessageBytes %d: must be 0 (the default, %d) or at least %d", o.MaxMessageBytes, segment.DefaultMaxBatchBytes, recordbatch.HeaderSize)
	}
	if o.MaxRecordsBytes < 0 || o.MaxRecordsBytes > recordbatch.DefaultMaxRecordsBytes {
		return o, fmt.Errorf("logstore: Options.MaxRecordsBytes %d: must be from 0 (the default, %d) to %d, the bound readers inflate to", o.MaxRecordsBytes, recordbatch.DefaultMaxRecordsBytes, recordbatch.DefaultMaxRecordsBytes)
	}
	// MaxRecordsBytes 0 stays 0: recordbatch.ValidateClientRecords
	// takes a limit of 0 as recordbatch.DefaultMaxRecordsBytes itself.
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.fs == nil {
		o.fs = vfs.OS
	}
	return o, nil
}
