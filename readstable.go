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
	// The LSO first: it is bounded by the DurableEnd of its moment, and
	// DurableEnd only grows, so lso <= hwm.
	lso = p.LastStableOffset()
	hwm = p.DurableEnd()
	if offset > hwm {
		return nil, hwm, lso, p.wrap(fmt.Sprintf("read at offset %d", offset), fmt.Errorf("%w: %d is above the high watermark %d", segment.ErrOffsetOutOfRange, offset, hwm))
	}
	if offset >= lso && offset >= p.StartOffset() {
		return nil, hwm, lso, nil
	}
	data, err = p.Read(offset, maxBytes)
	if err != nil {
		return nil, hwm, lso, err
	}
	return cutBatchesAt(data, lso), hwm, lso, nil
}
