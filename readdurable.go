package logstore

import (
	"encoding/binary"
	"fmt"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// ReadDurable is Read bounded by DurableEnd: whole batches from the one
// that holds offset, up to maxBytes but at least one, and none at or
// above DurableEnd (the high watermark), which it also returns. offset
// may be DurableEnd (nothing to read); below the log start or above
// DurableEnd is an error matching segment.ErrOffsetOutOfRange.
func (p *Partition) ReadDurable(offset int64, maxBytes int) (data []byte, hwm int64, err error) {
	hwm = p.DurableEnd()
	if offset == hwm {
		return nil, hwm, nil
	}
	if offset > hwm {
		return nil, hwm, p.wrap(fmt.Sprintf("read at offset %d", offset), fmt.Errorf("%w: %d is above the high watermark %d", segment.ErrOffsetOutOfRange, offset, hwm))
	}
	data, err = p.Read(offset, maxBytes)
	if err != nil {
		return nil, hwm, err
	}
	return cutBatchesAt(data, hwm), hwm, nil
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

// MaxTimestamp returns the largest batch timestamp in the log and the
// last offset of the batch that has it, or (-1, -1) when there is none.
func (p *Partition) MaxTimestamp() (ts, offset int64, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return -1, -1, p.wrap("max timestamp", ErrClosed)
	}
	ts, offset, err = p.log.MaxTimestamp()
	if err != nil {
		return -1, -1, p.wrap("max timestamp", err)
	}
	return ts, offset, nil
}
