package logstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// txnTracker keeps the partition's open transactions (producer id →
// first offset) for the last stable offset. open is guarded by appendMu;
// first (the lowest first offset, -1 when none is open) is read without
// a lock.
type txnTracker struct {
	open  map[int64]int64
	first atomic.Int64
	// decided holds the transactions ended by a marker that may not be
	// durable yet (see noteDecided); replaced, never changed in place.
	decided atomic.Pointer[[]decidedTxn]
}

// reset sets the open transactions to those of state.
func (t *txnTracker) reset(state *producerstate.State) {
	t.open = openTxns(state)
	t.decided.Store(nil)
	t.recompute()
}

// openTxns returns the open transactions of state.
func openTxns(state *producerstate.State) map[int64]int64 {
	return state.OpenTransactions()
}

func (t *txnTracker) recompute() {
	t.first.Store(firstOpen(t.open, -1))
}

// firstOpen is the lowest first offset of the transactions in open other
// than producer except's, or -1.
func firstOpen(open map[int64]int64, except int64) int64 {
	first := int64(-1)
	for pid, off := range open {
		if pid != except && (first < 0 || off < first) {
			first = off
		}
	}
	return first
}

// LastStableOffset is the partition's last stable offset (LSO): the first
// offset of the oldest transaction still open (begun by a transactional
// batch, not yet ended by its COMMIT or ABORT marker, or ended by a
// marker not yet below the high watermark, as Kafka keeps such a
// transaction unstable until its marker is replicated), bounded by the
// high watermark (DurableEnd), which it is when no transaction is open,
// and not below the log start (retention may have deleted the start of a
// transaction still open; Kafka's updateFirstUnstableOffset does the
// same). A read_committed consumer reads only below it, so it reads a
// transaction's data only once its marker is durable. It takes no lock.
func (p *Partition) LastStableOffset() int64 {
	for {
		hw := p.DurableEnd()
		lso := hw
		if first := p.txns.first.Load(); first >= 0 && first < lso {
			lso = first
		}
		// After first: a marker adds its transaction here before it
		// leaves the open ones.
		lso = p.txns.undurable(hw, lso)
		// A high watermark that moved meanwhile may have let a marker's
		// transaction go from both: read again, so the answer is an LSO
		// of one moment, not the older high watermark with newer state.
		if p.DurableEnd() != hw {
			continue
		}
		if lso < hw {
			return min(max(lso, p.log.StartOffset()), hw)
		}
		return hw
	}
}

// AbortedTransactions returns the aborted transactions whose offsets
// overlap [from, to), read from the .txnindex files of the segment that
// holds from and the later ones, by the rules of Kafka's
// collectAbortedTransactions (a read_committed fetch from offset from
// lists their producer ids and first offsets; the server passes the
// offset after the last batch it returns as to, an offset Kafka's looser
// upper bound is never below).
func (p *Partition) AbortedTransactions(from, to int64) ([]segment.AbortedTxn, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, p.wrap("aborted transactions", ErrClosed)
	}
	txns, err := p.log.AbortedTxns(from, to)
	if err != nil {
		return nil, p.wrap("aborted transactions", err)
	}
	return txns, nil
}

// txnReplay rebuilds the .txnindex entries of the log it is shown, from
// the open transactions at its first offset, as Kafka's recovery does.
type txnReplay struct {
	from    int64
	open    map[int64]int64
	rr      recordbatch.RecordReader
	aborted []segment.AbortedTxn
}

func newTxnReplay(from int64, open map[int64]int64) *txnReplay {
	return &txnReplay{from: from, open: open}
}

// batch follows one batch of the log, in order.
func (r *txnReplay) batch(b recordbatch.Batch) error {
	if !b.HasProducerID() || !b.Attributes().Transactional() {
		return nil
	}
	pid := b.ProducerID()
	if !b.Attributes().Control() {
		if _, ok := r.open[pid]; !ok {
			r.open[pid] = b.BaseOffset()
		}
		return nil
	}
	if b.NumRecords() == 0 {
		return nil
	}
	if err := r.rr.Reset(b, 0); err != nil {
		return err
	}
	if !r.rr.Next() {
		if err := r.rr.Err(); err != nil {
			return err
		}
		return errors.New("control batch has no record")
	}
	rec := r.rr.Record()
	m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
	if err != nil {
		return fmt.Errorf("marker at offset %d: %w", b.BaseOffset(), err)
	}
	first, ok := r.open[pid]
	if !ok {
		return nil
	}
	if m.Type == recordbatch.ControlAbort {
		lso := firstOpen(r.open, pid)
		if lso < 0 {
			lso = b.LastOffset() + 1
		}
		r.aborted = append(r.aborted, segment.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: b.LastOffset(), LastStableOffset: lso})
	}
	delete(r.open, pid)
	return nil
}

// apply makes the .txnindex of every segment from the one holding r.from
// hold the entries below r.from it has and the rebuilt ones, rewriting
// the files that differ and those that did not decode (damaged).
func (r *txnReplay) apply(log *segment.Log, damaged []int64) error {
	segs := log.Segments()
	for i, base := range segs {
		end := int64(1<<63 - 1)
		if i+1 < len(segs) {
			end = segs[i+1]
		}
		if end <= r.from {
			continue
		}
		have := log.TxnIndex(base)
		var want []segment.AbortedTxn
		for _, t := range have {
			if t.LastOffset < r.from {
				want = append(want, t)
			}
		}
		for _, t := range r.aborted {
			if t.LastOffset >= base && t.LastOffset < end {
				want = append(want, t)
			}
		}
		if !equalTxns(have, want) || slices.Contains(damaged, base) {
			if err := log.SetTxnIndex(base, want); err != nil {
				return err
			}
		}
	}
	return nil
}

func equalTxns(a, b []segment.AbortedTxn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// recoverTxnIndex finishes the open's replay from offset from: the
// .txnindex entries of the replayed log are rebuilt from it (those below
// were synced before any snapshot after them was taken). When a
// .txnindex did not decode, the whole log is replayed for them instead.
// Then the open transactions are those of the state.
func (p *Partition) recoverTxnIndex(r *txnReplay) error {
	if len(p.recovery.DamagedTxnIndexes) > 0 && p.recovery.DamagedTxnIndexes[0] < r.from {
		start := p.log.StartOffset()
		r = newTxnReplay(start, map[int64]int64{})
		err := p.log.Batches(start, func(b recordbatch.Batch) error {
			if b.LastOffset() < start {
				return nil
			}
			return r.batch(b)
		})
		if err != nil {
			return fmt.Errorf("logstore: rebuilding the transaction index from offset %d: %w", start, err)
		}
	}
	if err := r.apply(p.log, p.recovery.DamagedTxnIndexes); err != nil {
		return fmt.Errorf("logstore: rebuilding the transaction index: %w", err)
	}
	p.txns.reset(p.state)
	return nil
}

// OpenTransactions returns the transactions the partition holds open
// now: producer id -> the first offset of its open transaction (a
// transactional batch with no COMMIT or ABORT marker after it). It
// waits for the append in flight, if any.
func (p *Partition) OpenTransactions() map[int64]int64 {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return maps.Clone(p.txns.open)
}

// OpenTransaction returns the first offset of producer id pid's open
// transaction in the partition, and false when it has none open. It
// waits for the append in flight, if any.
func (p *Partition) OpenTransaction(pid int64) (first int64, ok bool) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	first, ok = p.txns.open[pid]
	return first, ok
}

// openTxnBefore marks the transaction that client batch b begins (a
// transactional batch of a producer with none open) as open at the
// offset the log is about to give b, before b is written. DurableEnd can
// cover b as soon as the log holds it (at once under SyncInterval and
// SyncNever, at any group commit under SyncAlways), and the last stable
// offset must never pass a batch of an open transaction, not even
// between the write and the producer state's Apply. It returns whether
// it marked one, for closeTxn when the write fails. The caller holds
// appendMu.
func (p *Partition) openTxnBefore(b recordbatch.Batch) bool {
	if !b.HasProducerID() || !b.Attributes().Transactional() || b.Attributes().Control() {
		return false
	}
	if _, ok := p.txns.open[b.ProducerID()]; ok {
		return false
	}
	p.txns.open[b.ProducerID()] = p.log.EndOffset()
	p.txns.recompute()
	return true
}

// closeTxn removes producer id pid's transaction from the open ones:
// openTxnBefore undone after a failed write, or the transaction ended by
// its marker (after noteDecided). The caller holds appendMu.
func (p *Partition) closeTxn(pid int64) {
	delete(p.txns.open, pid)
	p.txns.recompute()
}

// decidedTxn is a transaction ended by a marker: its first offset, and
// the offset after its marker.
type decidedTxn struct{ first, end int64 }

// noteDecided keeps the transaction from first that the marker ending
// below end has just decided, until the marker is below the high
// watermark: the LSO stays at first until then, as Kafka's
// unreplicated transactions hold it. Called before closeTxn removes the
// transaction from the open ones, so a reader of the LSO always finds it
// in one of the two; it drops the entries whose markers are durable. The
// caller holds appendMu.
func (p *Partition) noteDecided(first, end int64) {
	hw := p.DurableEnd()
	var keep []decidedTxn
	if old := p.txns.decided.Load(); old != nil {
		for _, t := range *old {
			if t.end > hw {
				keep = append(keep, t)
			}
		}
	}
	keep = append(keep, decidedTxn{first: first, end: end})
	p.txns.decided.Store(&keep)
}

// undurable returns lso lowered to the first offset of every decided
// transaction whose marker is not below hw.
func (t *txnTracker) undurable(hw, lso int64) int64 {
	if d := t.decided.Load(); d != nil {
		for _, txn := range *d {
			if txn.end > hw && txn.first < lso {
				lso = txn.first
			}
		}
	}
	return lso
}
