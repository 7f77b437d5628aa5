package logstore

import (
	"maps"

	"github.com/logstore/logstore/recordbatch"
)

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
