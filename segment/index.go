package segment

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/logstore/logstore/vfs"
)

// Index entry sizes. Part of Kafka's file formats; never change them.
const (
	offsetEntrySize = 8  // int32 relative offset, int32 position
	timeEntrySize   = 12 // int64 timestamp, int32 relative offset
)

// indexFile is what both indexes share: the entries, kept in memory as
// the bytes of the file, and how many of those bytes the file holds. New
// entries reach the file in blocks of indexWriteBlock bytes, and all of
// them before a sync: an index is derived data, rebuilt from the log
// after a crash, so an append need not pay a write for each entry. The
// file never holds more than the entries (Kafka preallocates and trims;
// we never preallocate).
type indexFile struct {
	f          vfs.File
	name       string
	base       int64
	buf        []byte
	written    int   // bytes of buf in the file
	fileLen    int64 // the file's length when loaded
	maxEntries int
}

const indexWriteBlock = 4096

// add appends the entry e and writes out a full block.
func (x *indexFile) add(e []byte) error {
	x.buf = append(x.buf, e...)
	if len(x.buf)-x.written >= indexWriteBlock {
		return x.writeOut()
	}
	return nil
}

// writeOut writes the entries the file does not hold yet.
func (x *indexFile) writeOut() error {
	if x.written == len(x.buf) {
		return nil
	}
	if _, err := x.f.WriteAt(x.buf[x.written:], int64(x.written)); err != nil {
		return err
	}
	x.written = len(x.buf)
	return nil
}

// sync writes out every entry and makes the file durable.
func (x *indexFile) sync() error {
	if err := x.writeOut(); err != nil {
		return err
	}
	return x.f.Sync()
}

// reset drops every entry and empties the file.
func (x *indexFile) reset() error {
	x.buf, x.written = x.buf[:0], 0
	return x.f.Truncate(0)
}

// loaded takes data, the file's entries as readEntries read them, as the
// entries (data becomes the buffer), for load to check (and maybe
// shorten, dropping a zero tail). Until trim, the file counts as holding
// none of them: writing them out again would rewrite the same bytes.
func (x *indexFile) loaded(data []byte, fileLen int64) {
	x.buf, x.written, x.fileLen = data, 0, fileLen
}

// trim cuts the file to the entries load kept (a Kafka preallocated file
// left untrimmed by a crash).
func (x *indexFile) trim() error {
	if x.fileLen != int64(len(x.buf)) {
		// (Truncating to the same length would still dirty the inode.)
		if err := x.f.Truncate(int64(len(x.buf))); err != nil {
			return err
		}
	}
	x.written = len(x.buf)
	return nil
}

// offsetIndex is a segment's .index: a sparse map from the last offset of
// a batch to the batch's byte position in the .log.
type offsetIndex struct {
	indexFile
	scratch [offsetEntrySize]byte // the entry being written, kept off the heap
}

func (x *offsetIndex) entries() int { return len(x.buf) / offsetEntrySize }

func (x *offsetIndex) full() bool { return x.entries() >= x.maxEntries }

func (x *offsetIndex) entry(i int) (offset int64, pos int64) {
	e := x.buf[i*offsetEntrySize:]
	return x.base + int64(int32(binary.BigEndian.Uint32(e))), int64(int32(binary.BigEndian.Uint32(e[4:])))
}

// lastOffset is the offset of the last entry, or the base offset.
func (x *offsetIndex) lastOffset() int64 {
	if n := x.entries(); n > 0 {
		off, _ := x.entry(n - 1)
		return off
	}
	return x.base
}

// append adds (offset, pos). Offsets must strictly increase.
func (x *offsetIndex) append(offset, pos int64) error {
	n := x.entries()
	if n > 0 && offset <= x.lastOffset() {
		return fmt.Errorf("logstore/segment: %s: offset %d is not above the last indexed offset %d", x.name, offset, x.lastOffset())
	}
	if x.full() {
		return fmt.Errorf("logstore/segment: %s: index full (%d entries)", x.name, n)
	}
	e := &x.scratch
	binary.BigEndian.PutUint32(e[:], uint32(offset-x.base))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return x.add(e[:])
}

// lookup returns the greatest entry whose offset is <= target, or
// (base, 0) when there is none.
func (x *offsetIndex) lookup(target int64) (offset, pos int64) {
	n := x.entries()
	i := sort.Search(n, func(i int) bool {
		off, _ := x.entry(i)
		return off > target
	})
	if i == 0 {
		return x.base, 0
	}
	return x.entry(i - 1)
}

// load takes the file's entries (readEntries read at most what the log
// can justify from a file of fileLen bytes) and checks them: a length
// that is a multiple of 8 (a zero-filled tail, as Kafka leaves in a
// preallocated index, is dropped), strictly increasing offsets no lower than the base,
// positions increasing and inside the log. A false return means the file
// cannot be trusted and must be rebuilt from the log.
func (x *offsetIndex) load(data []byte, fileLen, logSize int64) bool {
	if len(data)%offsetEntrySize != 0 {
		return false
	}
	x.loaded(data, fileLen)
	n := x.entries()
	// Kafka's zero slots: an entry after the first whose relative offset
	// is 0 ends the real entries.
	for i := 1; i < n; i++ {
		if binary.BigEndian.Uint32(x.buf[i*offsetEntrySize:]) == 0 {
			x.buf = x.buf[:i*offsetEntrySize]
			break
		}
	}
	lastOff, lastPos := int64(-1), int64(-1)
	for i := 0; i < x.entries(); i++ {
		off, pos := x.entry(i)
		if off < x.base || off <= lastOff || pos < 0 || pos < lastPos || pos >= logSize {
			return false
		}
		lastOff, lastPos = off, pos
	}
	return true
}

// timeIndex is a segment's .timeindex: (timestamp, offset) entries where
// the offset is the last offset of the batch holding the largest
// timestamp so far. An entry is added only when the timestamp grows.
type timeIndex struct {
	indexFile
	scratch [timeEntrySize]byte
}

func (x *timeIndex) entries() int { return len(x.buf) / timeEntrySize }

// full leaves the last slot free for the entry a roll or close adds, as
// Kafka does.
func (x *timeIndex) full() bool { return x.entries() >= x.maxEntries-1 }

func (x *timeIndex) entry(i int) (ts int64, offset int64) {
	e := x.buf[i*timeEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), x.base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// last returns the last entry, or (-1, base).
func (x *timeIndex) last() (ts, offset int64) {
	if n := x.entries(); n > 0 {
		return x.entry(n - 1)
	}
	return -1, x.base
}

// maybeAppend adds (ts, offset) when ts is above the last entry's
// timestamp. force skips the full check (for the closing entry).
func (x *timeIndex) maybeAppend(ts, offset int64, force bool) error {
	lastTS, lastOff := x.last()
	if x.entries() > 0 && ts <= lastTS {
		return nil
	}
	if x.entries() == 0 && ts < 0 {
		return nil
	}
	if offset < lastOff {
		return fmt.Errorf("logstore/segment: %s: offset %d is below the last time-indexed offset %d", x.name, offset, lastOff)
	}
	if !force && x.full() {
		return fmt.Errorf("logstore/segment: %s: time index full (%d entries)", x.name, x.entries())
	}
	if x.entries() >= x.maxEntries {
		return fmt.Errorf("logstore/segment: %s: time index full (%d entries)", x.name, x.entries())
	}
	e := &x.scratch
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.base))
	return x.add(e[:])
}

// lookup returns the greatest entry whose timestamp is <= ts, or
// (-1, base) when there is none.
func (x *timeIndex) lookup(ts int64) (int64, int64) {
	n := x.entries()
	i := sort.Search(n, func(i int) bool {
		t, _ := x.entry(i)
		return t > ts
	})
	if i == 0 {
		return -1, x.base
	}
	return x.entry(i - 1)
}

// load reads and checks the file's entries as offsetIndex.load does:
// length a multiple of 12, zero slots dropped, timestamps and offsets
// increasing, offsets within [base, nextOffset).
func (x *timeIndex) load(data []byte, fileLen, nextOffset int64) bool {
	if len(data)%timeEntrySize != 0 {
		return false
	}
	x.loaded(data, fileLen)
	for i := 1; i < x.entries(); i++ {
		e := x.buf[i*timeEntrySize:]
		if binary.BigEndian.Uint64(e) == 0 && binary.BigEndian.Uint32(e[8:]) == 0 {
			x.buf = x.buf[:i*timeEntrySize]
			break
		}
	}
	lastTS, lastOff := int64(-1), int64(-1)
	for i := 0; i < x.entries(); i++ {
		ts, off := x.entry(i)
		if ts <= lastTS || off < lastOff || off < x.base || off >= nextOffset {
			return false
		}
		lastTS, lastOff = ts, off
	}
	return true
}

// offsetSlotZero says an offset-index entry after the first is one of
// Kafka's zero slots: its relative offset is 0.
func offsetSlotZero(e []byte) bool { return binary.BigEndian.Uint32(e) == 0 }

// timeSlotZero says a time-index entry after the first is a zero slot.
func timeSlotZero(e []byte) bool {
	return binary.BigEndian.Uint64(e) == 0 && binary.BigEndian.Uint32(e[8:]) == 0
}
