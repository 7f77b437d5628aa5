package logstore

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
