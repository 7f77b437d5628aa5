package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"

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
