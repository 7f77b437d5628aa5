package logstore

import "github.com/logstore/logstore/recordbatch"

// openTxnBefore marks the transaction that client batch b begins (a
// transactional batch of a producer with none open) as open at the
// offset the log is about to give b, before b is written. DurableEnd can
// cover b as soon as the log holds it (at once under SyncInterval and
// SyncNever, at any group commit under SyncAlways), and the last stable
// offset must never pass a batch of an open transaction, not even
// between the write and noteTxn. It returns whether it marked one, for
// unopenTxn when the write fails. The caller holds appendMu.
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

// unopenTxn undoes openTxnBefore for producer id pid after a failed
// write. The caller holds appendMu.
func (p *Partition) unopenTxn(pid int64) {
	delete(p.txns.open, pid)
	p.txns.recompute()
}
