package producerstate

import (
	"slices"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// DefaultExpireAfter is how long an idle producer is remembered by
// default: one day, Kafka's producer.id.expiration.ms.
const DefaultExpireAfter = 24 * time.Hour

// Config sets the limits of one partition's producer state.
type Config struct {
	// ExpireAfter is how long a producer without an open transaction is
	// remembered after the timestamp of its newest batch or marker. Zero
	// or negative: producers never expire (for opening old data).
	ExpireAfter time.Duration
	// MaxProducers caps how many producers the partition remembers. When
	// Apply adds a producer beyond the cap, the longest-idle producers
	// without an open transaction are forgotten. Zero or negative: no cap.
	MaxProducers int
}

// DefaultConfig is the configuration of a new partition: producers expire
// after DefaultExpireAfter, and there is no cap.
func DefaultConfig() Config { return Config{ExpireAfter: DefaultExpireAfter} }

// noOffset and noCoordinatorEpoch are what a new entry starts with: no
// open transaction, and a coordinator epoch below any real one (Kafka's
// ProducerStateEntry starts at -1 too).
const (
	noOffset           int64 = -1
	noCoordinatorEpoch int32 = -1
)

// State is the producer state of one partition: the entries of the
// producers it remembers and the map end offset, the offset after the
// last batch applied.
//
// A State is not safe for concurrent use, not even for two Checks at
// once (checking a marker decodes its record with a reader the State
// owns); the caller serialises every call.
type State struct {
	cfg       Config
	producers map[int64]*Entry
	mapEnd    int64
	rr        recordbatch.RecordReader // decodes marker records, reused
}

// New returns an empty state whose map end offset is 0.
func New(cfg Config) *State {
	return &State{cfg: cfg, producers: make(map[int64]*Entry)}
}

// FromSnapshot returns the state that snap holds, with its map end
// offset at snap.Offset. It copies snap, so the two share no memory.
// It does not expire anything (it has no clock): call ExpireProducers
// with the current time afterwards, as Kafka drops expired producers
// when it loads a snapshot. Nor does it apply the cap, which only Apply
// enforces.
//
// FromSnapshot trusts the snapshot's contents (the snapshot package
// checks its checksum); to stay within the package's invariants it keeps
// only the newest WindowSize batches of a longer window, and when one
// producer id appears twice the later entry wins.
func FromSnapshot(cfg Config, snap Snapshot) *State {
	s := &State{cfg: cfg, producers: make(map[int64]*Entry, len(snap.Producers)), mapEnd: snap.Offset}
	// One allocation for the entries and one for their windows, each
	// window a WindowSize slot of its own (its capacity capped, so that
	// push never writes into the next producer's).
	entries := make([]Entry, len(snap.Producers))
	windows := make([]BatchMeta, len(snap.Producers)*WindowSize)
	for i := range snap.Producers {
		p := &snap.Producers[i]
		e := &entries[i]
		*e = Entry{
			ProducerID:       p.ProducerID,
			Epoch:            p.Epoch,
			CoordinatorEpoch: p.CoordinatorEpoch,
			TxnFirstOffset:   p.TxnFirstOffset,
			LastTimestamp:    p.LastTimestamp,
		}
		w := p.Batches
		if len(w) > WindowSize {
			w = w[len(w)-WindowSize:]
		}
		slot := windows[i*WindowSize : i*WindowSize : (i+1)*WindowSize]
		e.Batches = append(slot, w...)
		s.producers[p.ProducerID] = e
	}
	return s
}

// Snapshot returns the whole state as of the map end offset: a deep copy,
// producers sorted by id, an empty window as nil.
func (s *State) Snapshot() Snapshot {
	snap := Snapshot{Offset: s.mapEnd}
	if len(s.producers) == 0 {
		return snap
	}
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// One allocation for every window, each with its capacity capped so
	// that appending to one cannot overwrite the next.
	n := 0
	for _, e := range s.producers {
		n += len(e.Batches)
	}
	windows := make([]BatchMeta, 0, n)
	snap.Producers = make([]Entry, len(ids))
	for i, id := range ids {
		e := s.producers[id]
		c := *e
		c.Batches = nil
		if len(e.Batches) > 0 {
			start := len(windows)
			windows = append(windows, e.Batches...)
			c.Batches = windows[start:len(windows):len(windows)]
		}
		snap.Producers[i] = c
	}
	return snap
}

// Len returns how many producers the state remembers, including any that
// have expired but that ExpireProducers has not removed yet.
func (s *State) Len() int { return len(s.producers) }

// Producer returns a copy of the entry of producer id. It reports an
// entry that has expired but was not removed yet; Check treats such a
// producer as unknown.
func (s *State) Producer(id int64) (Entry, bool) {
	e, ok := s.producers[id]
	if !ok {
		return Entry{}, false
	}
	return e.clone(), true
}

// MapEndOffset returns the offset after the last batch applied: the
// offset a snapshot of this state is taken at.
func (s *State) MapEndOffset() int64 { return s.mapEnd }

// SetMapEndOffset moves the map end offset without touching any
// producer, for a log whose batches below off carry no producer state
// (an empty log starting at off, or a range replay skipped).
func (s *State) SetMapEndOffset(off int64) { s.mapEnd = off }

// Config returns the configuration the state was made with.
func (s *State) Config() Config { return s.cfg }

// Equal reports whether s and o hold the same producers with the same
// entries (an empty window equals a nil one) and the same map end
// offset. The configurations are not compared.
func (s *State) Equal(o *State) bool {
	if s.mapEnd != o.mapEnd || len(s.producers) != len(o.producers) {
		return false
	}
	for id, e := range s.producers {
		f, ok := o.producers[id]
		if !ok || !e.Equal(*f) {
			return false
		}
	}
	return true
}

// Equal reports whether two entries are the same, field by field and
// window entry by window entry; an empty window equals a nil one.
func (e Entry) Equal(o Entry) bool {
	return e.ProducerID == o.ProducerID &&
		e.Epoch == o.Epoch &&
		e.CoordinatorEpoch == o.CoordinatorEpoch &&
		e.TxnFirstOffset == o.TxnFirstOffset &&
		e.LastTimestamp == o.LastTimestamp &&
		slices.Equal(e.Batches, o.Batches)
}

// Equal reports whether two snapshots hold the same offset and the same
// entries in the same order.
func (s Snapshot) Equal(o Snapshot) bool {
	return s.Offset == o.Offset && slices.EqualFunc(s.Producers, o.Producers, Entry.Equal)
}

// clone returns a deep copy of e, with an empty window as nil.
func (e *Entry) clone() Entry {
	c := *e
	c.Batches = nil
	if len(e.Batches) > 0 {
		c.Batches = slices.Clone(e.Batches)
	}
	return c
}

// hasOpenTxn reports whether a transaction of the producer is open.
func (e *Entry) hasOpenTxn() bool { return e.TxnFirstOffset >= 0 }

// newest returns the newest remembered batch.
func (e *Entry) newest() (BatchMeta, bool) {
	if len(e.Batches) == 0 {
		return BatchMeta{}, false
	}
	return e.Batches[len(e.Batches)-1], true
}

// nextSeq is the base sequence the producer's next batch must carry in
// its current epoch: the newest remembered last sequence + 1 with wrap,
// or 0 when no batch is remembered (a new epoch, or only a marker).
func (e *Entry) nextSeq() int32 {
	m, ok := e.newest()
	if !ok {
		return 0
	}
	return recordbatch.IncrementSequence(m.LastSeq, 1)
}

// findBatch returns the remembered batch with exactly the sequences
// (first, last), newest first.
func (e *Entry) findBatch(first, last int32) (BatchMeta, bool) {
	for i := len(e.Batches) - 1; i >= 0; i-- {
		if m := e.Batches[i]; m.FirstSeq == first && m.LastSeq == last {
			return m, true
		}
	}
	return BatchMeta{}, false
}

// push remembers m as the newest batch, forgetting the oldest when the
// window is full. The window is allocated once, at its full size.
func (e *Entry) push(m BatchMeta) {
	if cap(e.Batches) < WindowSize {
		e.Batches = append(make([]BatchMeta, 0, WindowSize), e.Batches...)
	}
	if len(e.Batches) == WindowSize {
		copy(e.Batches, e.Batches[1:])
		e.Batches[WindowSize-1] = m
		return
	}
	e.Batches = append(e.Batches, m)
}

// setEpoch moves the producer to epoch; any change, up or down, forgets
// the window, since sequences restart with every epoch.
func (e *Entry) setEpoch(epoch int16) {
	if e.Epoch != epoch {
		e.Epoch = epoch
		e.Batches = e.Batches[:0]
	}
}
