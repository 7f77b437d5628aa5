package logstore

// AppendMarkerWritten is AppendMarker without the wait for durability:
// the marker is checked, appended and applied exactly as AppendMarker
// does (the same refusals, the same .txnindex entry), and it returns
// once the marker is written, in every sync mode. It is for a
// coordinator that ends a transaction in several partitions: it writes
// every partition's marker, then waits for all of them at once.
//
// The caller makes the marker durable with SyncTo(res.LastOffset+1) (in
// every sync mode, as AppendMarker does), and until it is, must be able
// to write it again after a crash: txncoord answers EndTxn before that
// sync, with its decision durable, and keeps the decision on file until
// the markers are. Until then the transaction's data stays above the
// last stable offset (a read_committed consumer does not see it), as for
// any marker not yet durable.
func (p *Partition) AppendMarkerWritten(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (AppendResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return AppendResult{}, p.wrap("append marker", ErrClosed)
	}
	res, err := p.appendMarker(producerID, epoch, commit, coordinatorEpoch)
	if err != nil {
		return AppendResult{}, p.wrap("append marker", err)
	}
	return res, nil
}
