package logstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// Read returns whole batches starting with the one that holds offset, up
// to maxBytes but at least one batch. Under SyncInterval and SyncNever it
// can return batches that are not durable yet.
func (p *Partition) Read(offset int64, maxBytes int) ([]byte, error) {
	return p.ReadAppend(nil, offset, maxBytes)
}

// ReadAppend is Read into dst: it appends the batches to dst and returns
// the extended slice (dst, with nothing appended, at the log end or on
// an error). A caller that reuses a buffer with room for maxBytes past
// len(dst) allocates nothing per read (a server answering fetches).
func (p *Partition) ReadAppend(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return dst, p.wrap("read", ErrClosed)
	}
	out, err := p.log.ReadAppend(dst, offset, maxBytes)
	if err != nil {
		return dst, p.wrap(fmt.Sprintf("read at offset %d", offset), err)
	}
	return out, nil
}

// ReadDurableAppend is ReadDurable into dst, as ReadAppend is Read: the
// batches below DurableEnd are appended to dst.
func (p *Partition) ReadDurableAppend(dst []byte, offset int64, maxBytes int) (data []byte, hwm int64, err error) {
	hwm = p.DurableEnd()
	if offset == hwm {
		return dst, hwm, nil
	}
	if offset > hwm {
		return dst, hwm, p.wrap(fmt.Sprintf("read at offset %d", offset), fmt.Errorf("%w: %d is above the high watermark %d", segment.ErrOffsetOutOfRange, offset, hwm))
	}
	base := len(dst)
	data, err = p.ReadAppend(dst, offset, maxBytes)
	if err != nil {
		return dst, hwm, err
	}
	return data[:base+len(cutBatchesAt(data[base:], hwm))], hwm, nil
}

// ReadStable is ReadDurable for a read_committed reader: whole batches
// from the one that holds offset, up to maxBytes but at least one, and
// none at or above the last stable offset (LastStableOffset), which it
// returns with the high watermark (DurableEnd), lso <= hwm. An offset
// from the LSO up to the high watermark reads nothing and is no error,
// as Kafka's read bounded by the LSO does; below the log start or above
// the high watermark is an error matching segment.ErrOffsetOutOfRange.
// The LSO is at a batch boundary, so the batch holding an offset below
// it is always whole below it: "at least one batch" holds as for
// ReadDurable.
func (p *Partition) ReadStable(offset int64, maxBytes int) (data []byte, hwm, lso int64, err error) {
	return p.ReadStableAppend(nil, offset, maxBytes)
}

// ReadStableAppend is ReadStable into dst, as ReadAppend is Read: the
// batches below the last stable offset are appended to dst (dst with
// nothing appended when there are none, or on an error).
func (p *Partition) ReadStableAppend(dst []byte, offset int64, maxBytes int) (data []byte, hwm, lso int64, err error) {
	// The LSO first: it is bounded by the DurableEnd of its moment, and
	// DurableEnd only grows, so lso <= hwm.
	lso = p.LastStableOffset()
	hwm = p.DurableEnd()
	if offset > hwm {
		return dst, hwm, lso, p.wrap(fmt.Sprintf("read at offset %d", offset), fmt.Errorf("%w: %d is above the high watermark %d", segment.ErrOffsetOutOfRange, offset, hwm))
	}
	if offset >= lso && offset >= p.StartOffset() {
		return dst, hwm, lso, nil
	}
	base := len(dst)
	data, err = p.ReadAppend(dst, offset, maxBytes)
	if err != nil {
		return dst, hwm, lso, err
	}
	return data[:base+len(cutBatchesAt(data[base:], lso))], hwm, lso, nil
}

// ReadDurable is Read bounded by DurableEnd: whole batches from the one
// that holds offset, up to maxBytes but at least one, and none at or
// above DurableEnd (the high watermark), which it also returns. offset
// may be DurableEnd (nothing to read); below the log start or above
// DurableEnd is an error matching segment.ErrOffsetOutOfRange.
func (p *Partition) ReadDurable(offset int64, maxBytes int) (data []byte, hwm int64, err error) {
	return p.ReadDurableAppend(nil, offset, maxBytes)
}

// cutBatchesAt returns the prefix of data, whole batches, whose batches
// start below end. DurableEnd is always at a batch boundary, so no batch
// straddles it.
func cutBatchesAt(data []byte, end int64) []byte {
	pos := 0
	for pos+recordbatch.HeaderSize <= len(data) {
		base := int64(binary.BigEndian.Uint64(data[pos:]))
		size := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if base >= end || size <= 12 || pos+size > len(data) {
			break
		}
		pos += size
	}
	return data[:pos]
}

// OffsetForTime returns the first offset whose record timestamp is >= ts
// (by the segments' time indexes), or -1 when no record is that late.
func (p *Partition) OffsetForTime(ts int64) (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return -1, p.wrap("offset for time", ErrClosed)
	}
	off, err := p.log.OffsetForTime(ts)
	if err != nil {
		return -1, p.wrap("offset for time", err)
	}
	return off, nil
}

// MaxTimestamp returns the largest timestamp in the log and the offset
// of the record that has it, or (-1, -1) when there is none: what Kafka
// (3.8 on, KAFKA-16310) answers a ListOffsets for MAX_TIMESTAMP (-3).
// The batch is the earliest one whose max timestamp is the largest (the
// segments keep it, see segment.Log.MaxTimestamp); the record is the
// first of that batch whose timestamp equals the batch's max timestamp,
// read from the batch (decompressed when it is compressed). Under
// LogAppendTime every record's timestamp is the batch's, so that is its
// first record. A batch none of whose records has its max timestamp (a
// header that does not match its records) answers (-1, -1), as Kafka
// does. The offset can be at or above DurableEnd: a caller that serves
// only durable data (the high watermark) checks it.
func (p *Partition) MaxTimestamp() (ts, offset int64, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return -1, -1, p.wrap("max timestamp", ErrClosed)
	}
	for try := 0; ; try++ {
		ts, last, err := p.log.MaxTimestamp()
		if err != nil {
			return -1, -1, p.wrap("max timestamp", err)
		}
		if last < 0 {
			return -1, -1, nil
		}
		// One byte: exactly the batch that holds last.
		data, err := p.log.Read(last, 1)
		if errors.Is(err, segment.ErrOffsetOutOfRange) && try < 3 {
			continue // retention removed the segment meanwhile
		}
		if err != nil {
			return -1, -1, p.wrap(fmt.Sprintf("max timestamp: read at offset %d", last), err)
		}
		off, err := offsetOfTimestamp(recordbatch.Batch(data), ts, p.maxRecords)
		if err != nil {
			return -1, -1, p.wrap(fmt.Sprintf("max timestamp: batch at offset %d", last), err)
		}
		if off < 0 {
			return -1, -1, nil
		}
		return ts, off, nil
	}
}

// offsetOfTimestamp returns the offset of the first record of b whose
// timestamp is ts, or -1 when none has it.
func offsetOfTimestamp(b recordbatch.Batch, ts int64, limit int) (int64, error) {
	var rr recordbatch.RecordReader
	if err := rr.Reset(b, limit); err != nil {
		return -1, err
	}
	for rr.Next() {
		if rr.Record().Timestamp == ts {
			return rr.Record().Offset, nil
		}
	}
	return -1, rr.Err()
}

// DurableEnd returns the offset below which every batch is as durable as
// the store's sync mode promises an acknowledged batch to be: the
// highest offset a reader such as a Kafka fetch should show is
// DurableEnd - 1 (its high watermark), so no consumer sees a batch before
// it is as durable as its producer's acknowledgement says.
//
//   - SyncAlways: fsynced, the log's segment.Log.DurableEnd. A batch
//     written but not yet covered by an fsync is above it.
//   - SyncInterval and SyncNever: written to the log, so in the page
//     cache: the log end offset. These modes promise no more to an
//     acknowledgement (a machine crash can lose the batch, and its
//     offsets are then given to later batches), and waiting for the
//     fsync would hold readers back by up to the interval, or, under
//     SyncNever, until the next roll.
//
// In every mode, once Append has returned a batch's offsets, DurableEnd
// is above its last offset. DurableEnd only grows. It takes no partition
// lock and may be called on a closed partition.
func (p *Partition) DurableEnd() int64 {
	if p.mode.kind == syncAlways {
		return p.log.DurableEnd()
	}
	return p.log.EndOffset()
}

// SyncTo returns once every batch below end is fsynced, whatever the
// sync mode: this is Append's wait under SyncAlways (group commit:
// concurrent callers share one fsync, and a caller whose offsets are
// fsynced already returns at once; see segment.Log.SyncTo). end above
// the log end is an error. A failed fsync poisons the partition.
func (p *Partition) SyncTo(end int64) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return p.wrap("sync", ErrClosed)
	}
	if err := p.log.SyncTo(end); err != nil {
		return p.wrap("sync", err)
	}
	p.durableSig.notify()
	return nil
}

// durableSignal wakes the readers waiting for a partition's DurableEnd
// to move, at each possible advance, in two ways. A channel, made on
// demand and closed (then forgotten), so a waiter costs a channel receive
// and no goroutine (DurableChanged). And a list of the DurableWatchers
// registered with the partition, each told which of its partitions moved
// (a wait over many partitions, which would otherwise select over as
// many channels and take them all again after each wake).
type durableSignal struct {
	mu sync.Mutex
	ch chan struct{}
	// watches is the first of the registrations of watchers with this
	// partition, a doubly linked list through durableWatch.prev and
	// next, so a registration is added and removed in O(1).
	watches *durableWatch
}

// wait returns the channel the next notify closes.
func (s *durableSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// notify wakes every waiter: it closes the channel and marks each
// registered watcher's registration moved. It never blocks on a watcher
// (each mark is a short lock and a send that does not wait).
func (s *durableSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	for d := s.watches; d != nil; d = d.next {
		d.w.mark(d)
	}
}

// watched says whether a DurableWatcher watches the partition.
func (s *durableSignal) watched() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches != nil
}

// add links d in; d is not linked.
func (s *durableSignal) add(d *durableWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.prev, d.next = nil, s.watches
	if s.watches != nil {
		s.watches.prev = d
	}
	s.watches = d
}

// remove unlinks d, which is linked to s.
func (s *durableSignal) remove(d *durableWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		s.watches = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	}
	d.prev, d.next = nil, nil
}

// DurableChanged returns a channel that is closed the next time the
// partition's DurableEnd may have moved (an append under SyncInterval or
// SyncNever, a SyncTo or Append under SyncAlways) or the partition is
// closed. Take the channel before reading DurableEnd, so an advance
// between the two is not missed:
//
//	ch := p.DurableChanged()
//	if p.DurableEnd() > offset { ... }
//	select { case <-ch: ...; case <-ctx.Done(): ... }
//
// An advance made by a rolled segment's background flush alone does not
// close it (that data is made durable by the next sync anyway, and every
// acknowledged append under SyncAlways passes through SyncTo).
func (p *Partition) DurableChanged() <-chan struct{} { return p.durableSig.wait() }

// WaitDurable returns DurableEnd once it is above offset, or when ctx
// ends (with ctx's error and the DurableEnd of then), or when the
// partition is closed (ErrClosed). It starts no goroutine.
func (p *Partition) WaitDurable(ctx context.Context, offset int64) (int64, error) {
	for {
		ch := p.DurableChanged()
		if d := p.DurableEnd(); d > offset {
			return d, nil
		}
		if p.isClosed() {
			return p.DurableEnd(), p.wrap("wait", ErrClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p.DurableEnd(), ctx.Err()
		}
	}
}

func (p *Partition) isClosed() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.closed
}

// DurableWatcher waits for the DurableEnd of any of several partitions
// to move, as DurableChanged does for one, and says which moved: a
// Kafka delayed fetch's watch of its partitions. Each partition it
// watches has a key, from 0 to the size given to NewDurableWatcher;
// registering a key (Watch) and stopping it are O(1), and a partition's
// advance marks the keys watching it, without waiting for the watcher.
// Moved then returns the keys marked since it last ran, each once, and
// Ready has a value whenever some are marked.
//
// A key is marked at each advance that would close DurableChanged (an
// append, a SyncTo, a transaction marker), and when its partition is
// closed, or is closed already when it is registered. An advance before
// the registration marks nothing: register the keys before reading the
// partitions, or check the partitions again after registering. The
// watcher starts no goroutine. Stop it when done: until
// then each partition holds its registration. Watch, Unwatch and Stop
// are the waiter's, called from one goroutine at a time; Ready and Moved
// may be called from any, as partitions mark keys from theirs.
type DurableWatcher struct {
	ready chan struct{}
	// watches are the registrations, by key.
	watches []durableWatch

	// mu guards moved and each registration's marked.
	mu    sync.Mutex
	moved []int
}

// durableWatch is a key's registration with a partition.
type durableWatch struct {
	w   *DurableWatcher
	key int
	// part is the partition watched, nil when none. Only Watch and
	// Unwatch set it.
	part *Partition
	// prev and next link the registration into part's durableSignal,
	// under that signal's mu.
	prev, next *durableWatch
	// marked says that key is in w.moved (under w.mu).
	marked bool
}

// NewDurableWatcher returns a watcher of keys 0 to n-1, none registered.
func NewDurableWatcher(n int) *DurableWatcher {
	w := &DurableWatcher{ready: make(chan struct{}, 1), watches: make([]durableWatch, n)}
	for i := range w.watches {
		w.watches[i].w, w.watches[i].key = w, i
	}
	return w
}

// Watch registers key with p, in place of the partition key watched
// before, if any. A closed p marks key at once.
func (w *DurableWatcher) Watch(key int, p *Partition) {
	d := &w.watches[key]
	if d.part == p {
		return
	}
	w.Unwatch(key)
	d.part = p
	p.durableSig.add(d)
	// After the registration: a Close that set closed before it is seen
	// here, one after it marks the key itself.
	if p.isClosed() {
		w.mark(d)
	}
}

// Unwatch removes key's registration, if any. A mark it got before
// stays for Moved to return.
func (w *DurableWatcher) Unwatch(key int) {
	d := &w.watches[key]
	if d.part == nil {
		return
	}
	d.part.durableSig.remove(d)
	d.part = nil
}

// Stop removes every registration.
func (w *DurableWatcher) Stop() {
	for key := range w.watches {
		w.Unwatch(key)
	}
}

// Ready has a value when a key may have been marked since Moved last ran.
// A value may come with nothing marked: Moved then returns none.
func (w *DurableWatcher) Ready() <-chan struct{} { return w.ready }

// Moved appends to dst the keys marked since it last ran, in the order
// of their first mark, each once, and clears them.
func (w *DurableWatcher) Moved(dst []int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range w.moved {
		w.watches[key].marked = false
	}
	dst = append(dst, w.moved...)
	w.moved = w.moved[:0]
	return dst
}

// mark marks d's key and makes Ready ready, without waiting.
func (w *DurableWatcher) mark(d *durableWatch) {
	w.mu.Lock()
	if !d.marked {
		d.marked = true
		w.moved = append(w.moved, d.key)
	}
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}
