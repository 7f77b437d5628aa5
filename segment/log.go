package segment

import (
	"errors"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// Config is how a Log lays out and rolls its segments. Zero fields take
// Kafka's defaults (see DefaultConfig).
type Config struct {
	FS                 FS                        // default OS
	SegmentBytes       int64                     // segment.bytes, default 1 GiB, at most 2 GiB-1
	SegmentMs          time.Duration             // segment.ms, default 7 days
	IndexIntervalBytes int                       // index.interval.bytes, default 4096
	IndexMaxBytes      int                       // segment.index.bytes, default 10 MiB
	MaxBatchBytes      int                       // largest batch accepted, default 1048588 (max.message.bytes)
	RetentionBytes     int64                     // retention.bytes; <= 0: off (default)
	RetentionMs        time.Duration             // retention.ms; <= 0: off (default)
	Now                func() time.Time          // clock, default time.Now
	OnRoll             func(newBase int64) error // called after a roll, before the batch that caused it is written; an error fails the append
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
	Clean            bool    // the last close was clean: nothing was scanned
	ScannedSegments  []int64 // base offsets of the segments scanned
	TruncatedBytes   int64   // bytes cut from the log
	TruncatedAt      int64   // offset of the first batch cut (-1: none)
	TruncatedSegment int64   // base of the segment cut (-1: none)
	Reason           error   // why the cut was made (a *recordbatch.CorruptionError)
	DeletedSegments  []int64 // segments after the cut, removed
	RebuiltIndexes   []int64 // segments whose index files were rebuilt
}

// Log is one partition directory's segments. It is safe for concurrent use.
type Log struct{}

var errNotYet = errors.New("logstore/segment: not implemented yet")

// Open opens or creates the log in dir.
func Open(dir string, cfg Config) (*Log, RecoveryReport, error) {
	return nil, RecoveryReport{}, errNotYet
}

// Append assigns the next offsets to b (stamping its base offset in place),
// rolls first if needed, and writes it. It does not sync.
func (l *Log) Append(b recordbatch.Batch) (AppendInfo, error) { return AppendInfo{}, errNotYet }

// Sync makes everything appended so far durable and returns the offset
// below which the log is durable. It does not block appends while it syncs.
func (l *Log) Sync() (int64, error) { return 0, errNotYet }

// Read returns whole batches starting with the one that holds offset, up
// to maxBytes (but at least one whole batch).
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) { return nil, errNotYet }

// OffsetForTime returns the first offset whose record timestamp is >= ts,
// or -1 when there is none.
func (l *Log) OffsetForTime(ts int64) (int64, error) { return 0, errNotYet }

// StartOffset is the log start offset; EndOffset the next offset to assign.
func (l *Log) StartOffset() int64 { return 0 }
func (l *Log) EndOffset() int64   { return 0 }

// ApplyRetention deletes the oldest segments by RetentionBytes and
// RetentionMs, never the active one, and returns their base offsets.
func (l *Log) ApplyRetention() ([]int64, error) { return nil, errNotYet }

// Err returns the error that poisoned the log, or nil.
func (l *Log) Err() error { return nil }

// Close syncs, trims the indexes and records a clean shutdown.
func (l *Log) Close() error { return errNotYet }
