package producerstate

// entry is how a State keeps one producer: the fields of Entry with the
// window in a fixed array, so that an entry holds no pointer and a chunk
// of entries copies with one memmove.
type entry struct {
	ProducerID       int64
	TxnFirstOffset   int64
	LastTimestamp    int64
	LastSeen         int64
	LastApplied      int64
	CoordinatorEpoch int32
	Epoch            int16
	n                uint8                 // batches in the window: window[:n], oldest first
	window           [WindowSize]BatchMeta // window[n:] means nothing
}

// chunkSize is how many entries a chunk holds: 32 entries of 208 bytes,
// 6.5 KiB, so that copying one before a write costs about a microsecond.
const chunkSize = 32

// chunk is a block of entries. A chunk that a Frozen copy shares is never
// written again; the table writes to a copy of it.
type chunk [chunkSize]entry

// table holds the entries of a State at positions [0, n), in no
// particular order, in chunks: position i is chunks[i/chunkSize][i%chunkSize].
// index maps a producer id to its position.
//
// Copy on write: freeze hands the chunks, as they are, to a Frozen copy
// and marks every one shared (owned false); the first write to a shared
// chunk afterwards copies it (mut). So a freeze copies only the chunk
// pointers, and the 6.5 KiB copies happen one at a time, each on the first
// write to its chunk, never all at once.
type table struct {
	chunks []*chunk
	owned  []bool // owned[c]: chunks[c] is not shared with a Frozen copy
	n      int
	index  map[int64]int
}

func newTable(capacity int) table {
	return table{index: make(map[int64]int, capacity)}
}

// at returns the entry at position i, for reading only: it may be shared
// with a Frozen copy.
func (t *table) at(i int) *entry { return &t.chunks[i/chunkSize][i%chunkSize] }

// mut returns the entry at position i for writing, first copying its
// chunk when a Frozen copy shares it. The pointer is valid until the next
// add or remove.
func (t *table) mut(i int) *entry {
	c := i / chunkSize
	if !t.owned[c] {
		cp := new(chunk)
		*cp = *t.chunks[c]
		t.chunks[c], t.owned[c] = cp, true
	}
	return &t.chunks[c][i%chunkSize]
}

// find returns the position of producer id.
func (t *table) find(id int64) (int, bool) {
	i, ok := t.index[id]
	return i, ok
}

// add puts e, whose producer id the table does not hold, at the end and
// returns its position.
func (t *table) add(e *entry) int {
	i := t.n
	if i/chunkSize == len(t.chunks) {
		t.chunks = append(t.chunks, new(chunk))
		t.owned = append(t.owned, true)
	}
	*t.mut(i) = *e
	t.n++
	t.index[e.ProducerID] = i
	return i
}

// remove deletes the entry at position i, moving the last entry into its
// place.
func (t *table) remove(i int) {
	id := t.at(i).ProducerID
	last := t.n - 1
	if i != last {
		moved := t.mut(i)
		*moved = *t.at(last)
		t.index[moved.ProducerID] = i
	}
	t.n--
	delete(t.index, id)
}

// freeze returns the chunks holding positions [0, n) and marks them all
// shared, so that the table never writes to them again.
func (t *table) freeze() []*chunk {
	used := (t.n + chunkSize - 1) / chunkSize
	chunks := make([]*chunk, used)
	copy(chunks, t.chunks)
	clear(t.owned)
	return chunks
}
