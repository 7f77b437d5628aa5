package producerstate

import (
	"cmp"
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
	// remembered after the store last saw a batch or marker of it
	// (Entry.LastSeen, the store's clock; not a record timestamp). Zero
	// or negative: producers never expire.
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
	cfg    Config
	tab    table
	mapEnd int64
	rr     recordbatch.RecordReader // decodes marker records, reused
	// unknownSeen: an entry may have LastSeen SeenUnknown, which the
	// next ExpireProducers sets to its now.
	unknownSeen bool
}

// New returns an empty state whose map end offset is 0.
func New(cfg Config) *State {
	return &State{cfg: cfg, tab: newTable(0)}
}

// FromSnapshot returns the state that snap holds, with its map end
// offset at snap.Offset. It copies snap, so the two share no memory.
// It does not expire anything (it has no clock): call ExpireProducers
// with the current time afterwards, as Kafka drops expired producers
// when it loads a snapshot; that call also gives a producer whose seen
// time is not known (SeenUnknown) the current time. Nor does it apply
// the cap, which only Apply enforces.
//
// FromSnapshot trusts the snapshot's contents (the snapshot package
// checks its checksum); to stay within the package's invariants it keeps
// only the newest WindowSize batches of a longer window, and when one
// producer id appears twice the later entry wins.
func FromSnapshot(cfg Config, snap Snapshot) *State {
	l := NewLoader(cfg, snap.Offset, len(snap.Producers))
	for i := range snap.Producers {
		l.Add(&snap.Producers[i])
	}
	return l.State()
}

// Loader builds a State from a snapshot's producers given one at a time,
// without a Snapshot holding them all: NewLoader, Add for each producer
// in the snapshot's order, then State. The State is the one FromSnapshot
// returns for a Snapshot of the same offset and producers, so a decoder
// can decode each producer into the same Entry and hand it to Add, never
// allocating the whole snapshot.
type Loader struct {
	s     *State
	prev  int64   // the id of the producer added last
	spare []chunk // allocated, not yet used
}

// NewLoader starts the state as of offset, with room for n producers (a
// hint: Add takes any number).
func NewLoader(cfg Config, offset int64, n int) *Loader {
	n = max(n, 0)
	s := &State{cfg: cfg, tab: newTable(n), mapEnd: offset}
	s.tab.chunks = make([]*chunk, 0, (n+chunkSize-1)/chunkSize)
	s.tab.owned = make([]bool, 0, cap(s.tab.chunks))
	// The chunks the hint needs, in one allocation: far cheaper than one
	// each when the memory is fresh, as at startup. Copying on write
	// after a Freeze replaces chunks one by one, and this array lives
	// until none of its chunks is in use, so a State can hold up to
	// twice its size in chunks for a while (never more: copies are
	// allocated alone).
	return &Loader{s: s, spare: make([]chunk, cap(s.tab.chunks))}
}

// Add adds producer p as FromSnapshot does: it copies p, keeps only the
// newest WindowSize batches of a longer window, and replaces the entry
// of a producer id added before.
func (l *Loader) Add(p *Entry) {
	t := &l.s.tab
	// An id above the previous one, as a snapshot's ascending ids are,
	// cannot have been added before; others are looked up.
	if t.n > 0 && p.ProducerID <= l.prev {
		if i, dup := t.index[p.ProducerID]; dup {
			setEntry(t.mut(i), p)
			l.prev = p.ProducerID
			l.s.unknownSeen = l.s.unknownSeen || p.LastSeen == SeenUnknown
			return
		}
	}
	l.prev = p.ProducerID
	// Filled in place, chunk by chunk.
	i := t.n
	if i/chunkSize == len(t.chunks) {
		var c *chunk
		if len(l.spare) > 0 {
			c, l.spare = &l.spare[0], l.spare[1:]
		} else {
			c = new(chunk)
		}
		t.chunks = append(t.chunks, c)
		t.owned = append(t.owned, true)
	}
	setEntry(t.mut(i), p)
	t.index[p.ProducerID] = i
	t.n++
	if p.LastSeen == SeenUnknown {
		l.s.unknownSeen = true
	}
}

// State returns the state built. The Loader must not be used afterwards.
func (l *Loader) State() *State {
	s := l.s
	l.s, l.spare = nil, nil
	return s
}

// setEntry sets e to p, keeping the newest WindowSize batches.
func setEntry(e *entry, p *Entry) {
	w := p.Batches
	if len(w) > WindowSize {
		w = w[len(w)-WindowSize:]
	}
	e.ProducerID = p.ProducerID
	e.TxnFirstOffset = p.TxnFirstOffset
	e.LastTimestamp = p.LastTimestamp
	e.LastSeen = p.LastSeen
	e.LastApplied = p.LastApplied
	e.CoordinatorEpoch = p.CoordinatorEpoch
	e.Epoch = p.Epoch
	e.n = uint8(copy(e.window[:], w))
}

// Snapshot returns the whole state as of the map end offset: a deep copy,
// producers sorted by id, an empty window as nil.
//
// It copies every producer, sorting them first unless they are in id
// order already: for 10,000 producers with full windows, about 0.25 ms
// in order and over a millisecond when they must be sorted. A caller
// that must hold a lock while it takes the copy, as a segment roll does,
// calls Freeze under the lock instead, and Frozen.Snapshot after
// releasing it.
func (s *State) Snapshot() Snapshot {
	return buildSnapshot(s.mapEnd, s.tab.chunks, s.tab.n)
}

// OpenTransactions returns the first offset of each open transaction
// (TxnFirstOffset of each producer that has one) by producer id: what
// a Snapshot's entries say, without building it.
func (s *State) OpenTransactions() map[int64]int64 {
	open := map[int64]int64{}
	for i := range s.tab.n {
		if e := &s.tab.chunks[i/chunkSize][i%chunkSize]; e.TxnFirstOffset >= 0 {
			open[e.ProducerID] = e.TxnFirstOffset
		}
	}
	return open
}

// Frozen is the producer state as of one map end offset, copied by
// State.Freeze. It shares memory with the State it came from, which never
// writes to that memory again, so it stays as it was while the State
// goes on; it is read-only and safe for concurrent use, including
// beside calls on the State.
type Frozen struct {
	offset int64
	chunks []*chunk
	n      int
}

// Freeze returns the state as of the map end offset, in the time it
// takes to copy a pointer per 32 producers (a few microseconds for
// 10,000), whatever the windows hold: the copy to take while holding a
// lock. Frozen.Snapshot then makes the Snapshot to save, outside the
// lock.
//
// It costs the State later: the first write to each group of 32
// producers after a Freeze copies that group's 6.5 KiB (about a
// microsecond), so the copying Snapshot would do at once is spread over
// the appends that follow, at most one such copy per Apply.
func (s *State) Freeze() Frozen {
	return Frozen{offset: s.mapEnd, chunks: s.tab.freeze(), n: s.tab.n}
}

// Offset is the map end offset the Frozen state is as of: the offset a
// snapshot of it is taken at.
func (f Frozen) Offset() int64 { return f.offset }

// Len is how many producers the Frozen state holds.
func (f Frozen) Len() int { return f.n }

// Snapshot returns the Frozen state as a Snapshot, exactly what
// State.Snapshot returned when the state was frozen: a deep copy,
// producers sorted by id, an empty window as nil. It may be called any
// number of times, from any goroutine.
func (f Frozen) Snapshot() Snapshot {
	return buildSnapshot(f.offset, f.chunks, f.n)
}

// buildSnapshot returns the snapshot at offset of the n entries in
// chunks.
func buildSnapshot(offset int64, chunks []*chunk, n int) Snapshot {
	snap := Snapshot{Offset: offset}
	if n == 0 {
		return snap
	}
	at := func(i int) *entry { return &chunks[i/chunkSize][i%chunkSize] }
	// The positions in producer id order: usually the entries are in
	// that order already (ids are handed out ascending, and a state
	// loaded from a snapshot keeps its order), so look before sorting.
	type ref struct {
		id  int64
		pos int
	}
	var order []ref
	batches := 0
	for i, prev := 0, int64(0); i < n; i++ {
		e := at(i)
		batches += int(e.n)
		if order == nil && i > 0 && e.ProducerID < prev {
			order = make([]ref, n)
			for j := range order {
				order[j] = ref{at(j).ProducerID, j}
			}
		}
		prev = e.ProducerID
	}
	if order != nil {
		slices.SortFunc(order, func(a, b ref) int { return cmp.Compare(a.id, b.id) })
	}
	// One allocation for every window, each with its capacity capped so
	// that appending to one cannot overwrite the next.
	windows := make([]BatchMeta, batches)
	snap.Producers = make([]Entry, n)
	w := 0
	for k := range snap.Producers {
		i := k
		if order != nil {
			i = order[k].pos
		}
		e := at(i)
		p := &snap.Producers[k]
		p.ProducerID = e.ProducerID
		p.Epoch = e.Epoch
		p.CoordinatorEpoch = e.CoordinatorEpoch
		p.TxnFirstOffset = e.TxnFirstOffset
		p.LastTimestamp = e.LastTimestamp
		p.LastSeen = e.LastSeen
		p.LastApplied = e.LastApplied
		if e.n > 0 {
			end := w + copy(windows[w:], e.window[:e.n])
			p.Batches = windows[w:end:end]
			w = end
		}
	}
	return snap
}

// Len returns how many producers the state remembers, including any that
// have expired but that ExpireProducers has not removed yet.
func (s *State) Len() int { return s.tab.n }

// Producer returns a copy of the entry of producer id. It reports an
// entry that has expired but was not removed yet; Check treats such a
// producer as unknown.
func (s *State) Producer(id int64) (Entry, bool) {
	i, ok := s.tab.find(id)
	if !ok {
		return Entry{}, false
	}
	return s.tab.at(i).export(), true
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
// entries, seen times included (an empty window equals a nil one), and
// the same map end offset. The configurations are not compared.
func (s *State) Equal(o *State) bool {
	if s.mapEnd != o.mapEnd || s.tab.n != o.tab.n {
		return false
	}
	for i := range s.tab.n {
		e := s.tab.at(i)
		j, ok := o.tab.find(e.ProducerID)
		if !ok || !e.equal(o.tab.at(j)) {
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
		e.LastSeen == o.LastSeen &&
		e.LastApplied == o.LastApplied &&
		slices.Equal(e.Batches, o.Batches)
}

// EqualIgnoringSeen is Equal for everything but LastSeen: what a replay
// of the log determines. The seen times are the store's clock, which the
// log does not hold.
func (e Entry) EqualIgnoringSeen(o Entry) bool {
	e.LastSeen = o.LastSeen
	return e.Equal(o)
}

// Equal reports whether two snapshots hold the same offset and the same
// entries in the same order.
func (s Snapshot) Equal(o Snapshot) bool {
	return s.Offset == o.Offset && slices.EqualFunc(s.Producers, o.Producers, Entry.Equal)
}

// EqualIgnoringSeen is Equal with the entries compared by
// Entry.EqualIgnoringSeen.
func (s Snapshot) EqualIgnoringSeen(o Snapshot) bool {
	return s.Offset == o.Offset && slices.EqualFunc(s.Producers, o.Producers, Entry.EqualIgnoringSeen)
}

// export returns e as an Entry, its window a slice of its own, nil when
// empty.
func (e *entry) export() Entry {
	c := Entry{
		ProducerID:       e.ProducerID,
		Epoch:            e.Epoch,
		CoordinatorEpoch: e.CoordinatorEpoch,
		TxnFirstOffset:   e.TxnFirstOffset,
		LastTimestamp:    e.LastTimestamp,
		LastSeen:         e.LastSeen,
		LastApplied:      e.LastApplied,
	}
	if e.n > 0 {
		c.Batches = slices.Clone(e.batches())
	}
	return c
}

// equal reports whether two entries are the same, as Entry.Equal does.
func (e *entry) equal(o *entry) bool {
	return e.ProducerID == o.ProducerID &&
		e.Epoch == o.Epoch &&
		e.CoordinatorEpoch == o.CoordinatorEpoch &&
		e.TxnFirstOffset == o.TxnFirstOffset &&
		e.LastTimestamp == o.LastTimestamp &&
		e.LastSeen == o.LastSeen &&
		e.LastApplied == o.LastApplied &&
		slices.Equal(e.batches(), o.batches())
}

// batches returns the window, oldest first, for reading.
func (e *entry) batches() []BatchMeta { return e.window[:e.n] }

// hasOpenTxn reports whether a transaction of the producer is open.
func (e *entry) hasOpenTxn() bool { return e.TxnFirstOffset >= 0 }

// nextSeq is the base sequence the producer's next batch must carry in
// its current epoch: the newest remembered last sequence + 1 with wrap,
// or 0 when no batch is remembered (a new epoch, or only a marker).
func (e *entry) nextSeq() int32 {
	if e.n == 0 {
		return 0
	}
	return recordbatch.IncrementSequence(e.window[e.n-1].LastSeq, 1)
}

// findBatch returns the remembered batch with exactly the sequences
// (first, last), newest first.
func (e *entry) findBatch(first, last int32) (BatchMeta, bool) {
	for i := int(e.n) - 1; i >= 0; i-- {
		if m := e.window[i]; m.FirstSeq == first && m.LastSeq == last {
			return m, true
		}
	}
	return BatchMeta{}, false
}

// push remembers m as the newest batch, forgetting the oldest when the
// window is full.
func (e *entry) push(m BatchMeta) {
	if e.n == WindowSize {
		copy(e.window[:], e.window[1:])
		e.window[WindowSize-1] = m
		return
	}
	e.window[e.n] = m
	e.n++
}

// clearWindow forgets every remembered batch.
func (e *entry) clearWindow() { e.n = 0 }

// setEpoch moves the producer to epoch; any change, up or down, forgets
// the window, since sequences restart with every epoch.
func (e *entry) setEpoch(epoch int16) {
	if e.Epoch != epoch {
		e.Epoch = epoch
		e.n = 0
	}
}
