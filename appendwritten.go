package logstore

// AppendWritten is Append without the wait for durability: it checks
// batch, appends it (or finds it a duplicate) and returns once it is
// written, whatever the sync mode. It is for a caller that acknowledges
// later, such as the Kafka server, which must not hold the next
// request's append while this one waits for group commit.
//
// Before acknowledging an accepted batch as durable under the store's
// sync mode, the caller waits for SyncTo(res.LastOffset+1) under
// SyncAlways (Partition.WaitAcked does this for every mode). That wait is
// needed for a DUPLICATE too: its first copy may have been written by an
// append whose fsync has not ended yet, so a retry on another connection
// could otherwise be acknowledged before the data is durable.
//
// Refusals and failures are Append's.
func (p *Partition) AppendWritten(batch []byte) (AppendResult, error) {
	return p.append(batch, false)
}

// WaitAcked returns once res, a result of AppendWritten, is as durable as
// the store's sync mode promises an acknowledged batch to be: under
// SyncAlways it is SyncTo(res.LastOffset+1) (group commit), in the other
// modes it returns at once, since the batch is written.
func (p *Partition) WaitAcked(res AppendResult) error {
	if p.mode.kind != syncAlways {
		return nil
	}
	return p.SyncTo(res.LastOffset + 1)
}

// Mode returns the partition's sync mode.
func (p *Partition) Mode() SyncMode { return p.mode }
