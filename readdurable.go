package logstore

import (
	"encoding/binary"
	"errors"
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
