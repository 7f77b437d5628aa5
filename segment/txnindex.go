package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/logstore/logstore/vfs"
)

// txnIndexSuffix names a segment's transaction index, Kafka's .txnindex.
const txnIndexSuffix = ".txnindex"

// TxnEntrySize is the size of one .txnindex entry: int16 version (0),
// then producer id, first offset, last offset and last stable offset,
// each an int64, big-endian (Kafka's AbortedTxn).
const TxnEntrySize = 34

// AbortedTxn is one entry of a .txnindex file: a transaction of
// ProducerID that began at FirstOffset and was aborted by the marker at
// LastOffset, and the partition's last stable offset when the marker was
// written (the first offset of the oldest other open transaction, or
// LastOffset+1 when none was open).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendTxnEntry appends t's 34-byte .txnindex entry, version 0, to dst.
func AppendTxnEntry(dst []byte, t AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// ParseTxnIndex decodes the entries of the .txnindex of the segment
// based at base, read from the file named name. It checks what Kafka's
// TransactionIndex checks and a little more: version 0, last offsets
// increasing and not below base, a first offset not above the last one.
// A trailing partial entry is ignored, as Kafka's iteration does (a torn
// append); the number of bytes of whole entries is returned. Problems are
// *CorruptionErrors naming the file and the entry's byte position.
func ParseTxnIndex(name string, data []byte, base int64) ([]AbortedTxn, int64, error) {
	n := len(data) / TxnEntrySize
	out := make([]AbortedTxn, 0, n)
	prev := int64(-1)
	for i := 0; i < n; i++ {
		e := data[i*TxnEntrySize:]
		pos := int64(i * TxnEntrySize)
		if v := int16(binary.BigEndian.Uint16(e)); v != 0 {
			return nil, 0, &CorruptionError{File: name, Offset: pos, Err: fmt.Errorf("unexpected aborted transaction version %d", v)}
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		switch {
		case t.LastOffset < base:
			return nil, 0, &CorruptionError{File: name, Offset: pos, Err: fmt.Errorf("last offset %d of an aborted transaction is below the segment's base offset %d", t.LastOffset, base)}
		case t.LastOffset <= prev:
			return nil, 0, &CorruptionError{File: name, Offset: pos, Err: fmt.Errorf("last offset %d of an aborted transaction does not follow the previous one, %d", t.LastOffset, prev)}
		case t.FirstOffset < 0 || t.FirstOffset > t.LastOffset:
			return nil, 0, &CorruptionError{File: name, Offset: pos, Err: fmt.Errorf("first offset %d of an aborted transaction is not in 0..%d", t.FirstOffset, t.LastOffset)}
		}
		prev = t.LastOffset
		out = append(out, t)
	}
	return out, int64(n * TxnEntrySize), nil
}

// txnIndex is a segment's .txnindex: its entries in memory, and the
// file, opened (or created) at the first entry, as Kafka opens it lazily.
type txnIndex struct {
	name    string
	f       vfs.File
	entries []AbortedTxn
}

// maxTxnIndexBytes bounds a .txnindex read at open: one entry per
// possible batch of the segment's log (an abort marker is a batch).
func maxTxnIndexBytes(logSize int64) int64 {
	return justifiedEntries(logSize) * TxnEntrySize
}

// loadTxn reads the segment's .txnindex, when there is one, after the
// segment's offsets are known (load or recover). Entries at or above the
// segment's end (their marker was cut from the log) are dropped and the
// file rewritten. A file that does not decode is returned as a
// *CorruptionError, and the segment starts with no entries: the caller
// rebuilds them from the log.
func (s *segment) loadTxn() error {
	f, err := s.fs.OpenFile(s.txn.name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s.txn.f = f
	size, err := f.Size()
	if err != nil {
		return err
	}
	limit := maxTxnIndexBytes(s.size)
	if size > limit {
		return &CorruptionError{File: s.txn.name, Offset: limit, Err: fmt.Errorf("%d bytes, more than the %d entries the log's %d bytes can justify", size, limit/TxnEntrySize, s.size)}
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	entries, whole, err := ParseTxnIndex(s.txn.name, data, s.base)
	if err != nil {
		return err
	}
	keep := len(entries)
	for keep > 0 && entries[keep-1].LastOffset >= s.nextOffset {
		keep--
	}
	s.txn.entries = entries[:keep]
	if keep < len(entries) || whole < size {
		return s.writeTxn()
	}
	return nil
}

// writeTxn rewrites the .txnindex file with the entries in memory and
// syncs it; with no entries the file is removed (Kafka has none then).
func (s *segment) writeTxn() error {
	if len(s.txn.entries) == 0 {
		if s.txn.f != nil {
			if err := s.txn.f.Close(); err != nil {
				return err
			}
			s.txn.f = nil
		}
		if err := s.fs.Remove(s.txn.name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return s.fs.SyncDir(s.dir)
	}
	created := false
	if s.txn.f == nil {
		f, err := openOrCreate(s.fs, s.txn.name, &created)
		if err != nil {
			return err
		}
		s.txn.f = f
	}
	buf := make([]byte, 0, len(s.txn.entries)*TxnEntrySize)
	for _, t := range s.txn.entries {
		buf = AppendTxnEntry(buf, t)
	}
	if _, err := s.txn.f.WriteAt(buf, 0); err != nil {
		return err
	}
	if err := s.txn.f.Truncate(int64(len(buf))); err != nil {
		return err
	}
	if err := s.txn.f.Sync(); err != nil {
		return err
	}
	if created {
		return s.fs.SyncDir(s.dir)
	}
	return nil
}

// appendTxn appends t to the .txnindex, creating the file at the first
// entry, and syncs it: the entry is durable before any later snapshot of
// the producer state, so an open need only rebuild the entries of the
// log it replays.
func (s *segment) appendTxn(t AbortedTxn) error {
	if t.LastOffset < s.base || t.LastOffset >= s.nextOffset {
		return fmt.Errorf("logstore/segment: aborted transaction's marker at offset %d is not in the segment of offsets %d..%d", t.LastOffset, s.base, s.nextOffset-1)
	}
	if n := len(s.txn.entries); n > 0 && s.txn.entries[n-1].LastOffset >= t.LastOffset {
		return fmt.Errorf("logstore/segment: aborted transaction's marker at offset %d does not follow the last one, at %d", t.LastOffset, s.txn.entries[n-1].LastOffset)
	}
	created := false
	if s.txn.f == nil {
		f, err := openOrCreate(s.fs, s.txn.name, &created)
		if err != nil {
			return err
		}
		s.txn.f = f
	}
	pos := int64(len(s.txn.entries)) * TxnEntrySize
	if _, err := s.txn.f.WriteAt(AppendTxnEntry(nil, t), pos); err != nil {
		return err
	}
	if err := s.txn.f.Sync(); err != nil {
		return err
	}
	if created {
		if err := s.fs.SyncDir(s.dir); err != nil {
			return err
		}
	}
	s.txn.entries = append(s.txn.entries, t)
	return nil
}

// collectAbortedTxns is Kafka's TransactionIndex.collectAbortedTxns: the
// entries whose range overlaps [from, upper), and whether the search is
// complete (an entry's last stable offset reached upper, so no later
// segment can hold an overlapping transaction).
func (s *segment) collectAbortedTxns(dst []AbortedTxn, from, upper int64) ([]AbortedTxn, bool) {
	for _, t := range s.txn.entries {
		if t.LastOffset >= from && t.FirstOffset < upper {
			dst = append(dst, t)
		}
		if t.LastStableOffset >= upper {
			return dst, true
		}
	}
	return dst, false
}

// AppendAbortedTxn appends t to the .txnindex of the active segment,
// which must hold its marker (t.LastOffset); markers must come in offset
// order. The file is created at its first entry and synced at each.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	if err := l.active().appendTxn(t); err != nil {
		return l.poison("txnindex append", err)
	}
	return nil
}

// AbortedTxns returns the aborted transactions that overlap [from,
// upper), read from the .txnindex of the segment holding from and the
// later ones, until an entry's last stable offset reaches upper: the rule
// of Kafka's collectAbortedTransactions, which read_committed fetches
// use.
func (l *Log) AbortedTxns(from, upper int64) ([]AbortedTxn, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.check(); err != nil {
		return nil, err
	}
	var out []AbortedTxn
	for i := l.segmentFor(from); i < len(l.segs); i++ {
		var done bool
		if out, done = l.segs[i].collectAbortedTxns(out, from, upper); done {
			break
		}
	}
	return out, nil
}

// TxnIndex returns a copy of the entries of the .txnindex of the segment
// based at base (nil when it has none or there is no such segment).
func (l *Log) TxnIndex(base int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		if s.base == base {
			return slices.Clone(s.txn.entries)
		}
	}
	return nil
}

// SetTxnIndex replaces the entries of the .txnindex of the segment based
// at base and rewrites the file (removing it when entries is empty): the
// rebuild of derived data after a crash. The entries must belong to the
// segment, in offset order.
func (l *Log) SetTxnIndex(base int64, entries []AbortedTxn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.check(); err != nil {
		return err
	}
	i := slices.IndexFunc(l.segs, func(s *segment) bool { return s.base == base })
	if i < 0 {
		return fmt.Errorf("logstore/segment: no segment based at offset %d", base)
	}
	s := l.segs[i]
	prev := int64(-1)
	for _, t := range entries {
		if t.LastOffset < s.base || t.LastOffset >= s.nextOffset || t.LastOffset <= prev {
			return fmt.Errorf("logstore/segment: aborted transaction's marker at offset %d is out of order or not in the segment of offsets %d..%d", t.LastOffset, s.base, s.nextOffset-1)
		}
		prev = t.LastOffset
	}
	s.txn.entries = slices.Clone(entries)
	if err := s.writeTxn(); err != nil {
		return l.poison("txnindex rewrite", err)
	}
	return nil
}

// loadTxnIndexes loads every segment's .txnindex at open (see loadTxn).
func (l *Log) loadTxnIndexes(rep *RecoveryReport) error {
	for _, s := range l.segs {
		err := s.loadTxn()
		var ce *CorruptionError
		if errors.As(err, &ce) {
			s.txn.entries = nil
			rep.DamagedTxnIndexes = append(rep.DamagedTxnIndexes, s.base)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
