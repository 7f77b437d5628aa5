package logstore

import (
	"fmt"

	"github.com/logstore/logstore/segment"
)

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
