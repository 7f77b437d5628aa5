package logstore

import (
	"fmt"

	"github.com/logstore/logstore/segment"
)

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
