package logstore

import (
	"fmt"
	"time"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
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
// Kafka's segment defaults.
type Options struct {
	// Sync is when appends are fsynced; default SyncAlways.
	Sync SyncMode

	// LockTimeout is how long Open waits while another process (or
	// another Store in this process) holds the store's lock before it
	// fails with ErrStoreInUse. Zero means DefaultLockTimeout; a negative
	// value tries once and does not wait.
	LockTimeout time.Duration

	// Segment is passed to the log of every partition: filesystem,
	// segment and index sizes, retention, clock. Leave OnRoll nil: the
	// partition sets it, to save producer state whenever a segment rolls.
	Segment segment.Config

	// ProducerExpiry is how long a producer may stay idle before the
	// partition forgets it. Idleness is judged on the store's clock
	// (Segment.Now): the time the store last accepted a batch of the
	// producer, kept in every snapshot, and at open the open's time for
	// a producer replayed from the log after the snapshot. Record
	// timestamps play no part (unlike Kafka, which judges on them).
	// Zero means producerstate.DefaultExpireAfter (1 day); a negative
	// value turns expiry off.
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
	if o.Segment.OnRoll != nil {
		return o, fmt.Errorf("logstore: Options.Segment.OnRoll must be nil: each partition sets it to save its producer state on a roll")
	}
	if o.MaxRecordsBytes < 0 || o.MaxRecordsBytes > recordbatch.DefaultMaxRecordsBytes {
		return o, fmt.Errorf("logstore: Options.MaxRecordsBytes %d: must be from 0 (the default, %d) to %d, the bound readers inflate to", o.MaxRecordsBytes, recordbatch.DefaultMaxRecordsBytes, recordbatch.DefaultMaxRecordsBytes)
	}
	if o.MaxRecordsBytes == 0 {
		o.MaxRecordsBytes = recordbatch.DefaultMaxRecordsBytes
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Segment.FS == nil {
		o.Segment.FS = segment.OS
	}
	return o, nil
}
