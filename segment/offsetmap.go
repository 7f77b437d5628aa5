package segment

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// The offset map's layout: each slot is the first offsetMapHashSize
// bytes of the key's SHA-256, then the offset, big-endian. A slot of all
// zeros is empty.
const (
	offsetMapHashSize  = 16
	offsetMapSlotSize  = offsetMapHashSize + 8
	offsetMapLoadLimit = 0.9 // log.cleaner.io.buffer.load.factor: Kafka's default
	// MinOffsetMapBytes is the smallest memory an OffsetMap takes: room
	// for two keys under the load limit.
	MinOffsetMapBytes = 3 * offsetMapSlotSize
	// DefaultOffsetMapBytes is log.cleaner.dedupe.buffer.size's default.
	DefaultOffsetMapBytes = 128 << 20
)

// OffsetMap is the cleaner's map from a key to the last offset it was
// written at, Kafka's SkimpyOffsetMap: a fixed table of slots, sized once
// from a memory bound in bytes and never grown, each holding a 16-byte
// hash of the key (the first 16 bytes of its SHA-256; Kafka uses MD5,
// also 16 bytes) and the offset. Keys are never stored, so two keys whose
// hashes agree share a slot; with 128-bit hashes the chance of that
// among n keys is about n²/2^129, negligible for any map that fits in
// memory. Slots are found by open addressing with linear probing from
// the hash's first 8 bytes. The map counts as full once its keys reach
// 90% of its slots (Kafka's default load factor), so probes stay short
// and always end at an empty slot.
//
// An OffsetMap is not safe for concurrent use.
type OffsetMap struct {
	slots  []byte
	n      int // slots in use
	limit  int // most keys Put accepts
	latest int64
	h      [sha256.Size]byte
}

// NewOffsetMap returns a map in memory bytes of table (at least
// MinOffsetMapBytes).
func NewOffsetMap(memory int) (*OffsetMap, error) {
	if memory < MinOffsetMapBytes {
		return nil, fmt.Errorf("logstore/segment: offset map of %d bytes, below the %d it needs to hold two keys", memory, MinOffsetMapBytes)
	}
	n := memory / offsetMapSlotSize
	m := &OffsetMap{slots: make([]byte, n*offsetMapSlotSize), limit: int(float64(n) * offsetMapLoadLimit), latest: -1}
	return m, nil
}

// Slots is the number of slots; Len the keys held; Full says Put would
// refuse a new key.
func (m *OffsetMap) Slots() int { return len(m.slots) / offsetMapSlotSize }

// Len is the number of keys held.
func (m *OffsetMap) Len() int { return m.n }

// Full says a key not in the map yet would be refused.
func (m *OffsetMap) Full() bool { return m.n >= m.limit }

// Latest is the highest offset the map covers (Put's or
// UpdateLatest's), -1 when empty.
func (m *OffsetMap) Latest() int64 { return m.latest }

// UpdateLatest records that the map covers every offset up to off.
func (m *OffsetMap) UpdateLatest(off int64) { m.latest = max(m.latest, off) }

// Reset empties the map, keeping its memory.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.n, m.latest = 0, -1
}

// hash sets m.h to the key's hash. An all-zero hash (the empty slot's
// mark) is made non-zero: it then shares a slot with one other hash.
func (m *OffsetMap) hash(key []byte) []byte {
	m.h = sha256.Sum256(key)
	h := m.h[:offsetMapHashSize]
	if binary.BigEndian.Uint64(h) == 0 && binary.BigEndian.Uint64(h[8:]) == 0 {
		h[15] = 1
	}
	return h
}

// find returns the byte position of the slot holding h, or of the empty
// slot where it would go.
func (m *OffsetMap) find(h []byte) int {
	n := uint64(m.Slots())
	i := binary.BigEndian.Uint64(h) % n
	for {
		pos := int(i) * offsetMapSlotSize
		s := m.slots[pos : pos+offsetMapHashSize]
		if string(s) == string(h) || binary.BigEndian.Uint64(s) == 0 && binary.BigEndian.Uint64(s[8:]) == 0 {
			return pos
		}
		if i++; i == n {
			i = 0
		}
	}
}

// Put records that key was last written at offset; offsets must not
// decrease. It returns false, changing nothing, when key is new and the
// map is full.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	h := m.hash(key)
	pos := m.find(h)
	s := m.slots[pos:]
	if s[0] == 0 && binary.BigEndian.Uint64(s) == 0 && binary.BigEndian.Uint64(s[8:]) == 0 {
		if m.Full() {
			return false
		}
		copy(s, h)
		m.n++
	}
	binary.BigEndian.PutUint64(s[offsetMapHashSize:], uint64(offset))
	m.latest = max(m.latest, offset)
	return true
}

// Get returns the last offset recorded for key, or -1.
func (m *OffsetMap) Get(key []byte) int64 {
	pos := m.find(m.hash(key))
	s := m.slots[pos:]
	if binary.BigEndian.Uint64(s) == 0 && binary.BigEndian.Uint64(s[8:]) == 0 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(s[offsetMapHashSize:]))
}
