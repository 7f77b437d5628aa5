package kafkaserver

import (
	"github.com/logstore/logstore"
)

// A fetch reads its partitions' batches into one buffer from the frame
// pools (framepool.go), one partition's after another, rather than a
// new buffer per partition per fetch: a 1 MiB fetch then allocates and
// clears nothing, and leaves the collector (and the runtime's returning
// of freed memory to the kernel, and the page faults of taking it back)
// nothing to do. The response's RecordBatches point into the buffer;
// kmsg copies them into the response frame when the writer encodes it
// (conn.respond), after which the buffer goes back to its pool. A
// long-poll fetch that rebuilds its whole response gives the buffer of
// the build before back first: nothing refers to it any more. A wake
// that reads again only the partitions that moved appends to the same
// buffer, until the stale bytes in it pass rebuildSlack, and then the
// whole response is rebuilt.

// readBuf returns the buffer the fetch's partitions are read into,
// taken from the pool the first time: of room for the fetch's MaxBytes
// or the sum of its partitions' PartitionMaxBytes, whichever is less,
// and no more than the largest pooled class. A read that needs more
// (the first batch larger than the limit, KIP-74, or a fetch larger
// than the largest class) grows it by append; the partitions read
// before keep pointing into the old one, which is kept to go back to
// the pool with it.
func (f *fetch) readBuf() []byte {
	if f.buf == nil {
		want := 0
		for _, rt := range f.r.Topics {
			for _, rp := range rt.Partitions {
				want += max(int(rp.PartitionMaxBytes), 0)
			}
		}
		total := int(f.r.MaxBytes)
		if f.r.Version < 3 || total <= 0 {
			total = DefaultMaxRequestBytes // as build counts it
		}
		want = min(want, total, maxPooledFrame)
		f.buf = getFrame(max(want, 1))[:0]
	}
	return f.buf
}

// fetchBufs are a fetch's read buffers: buf, the one read into, and
// spent, those it outgrew.
type fetchBufs struct {
	buf   []byte
	spent [][]byte
}

// readDurable is part.ReadDurable(offset, maxBytes) into the fetch's
// buffer: the batches from offset (up to maxBytes, at least one) below
// DurableEnd, appended after the partitions read before, and the high
// watermark.
func (f *fetch) readDurable(part *logstore.Partition, offset int64, maxBytes int) ([]byte, int64, error) {
	var hwm int64
	data, err := f.readInto(func(buf []byte) ([]byte, error) {
		out, h, err := part.ReadDurableAppend(buf, offset, maxBytes)
		hwm = h
		return out, err
	})
	return data, hwm, err
}

// readStable is part.ReadStable(offset, maxBytes) into the fetch's
// buffer, as readDurable is ReadDurable: the batches below the last
// stable offset, for read_committed.
func (f *fetch) readStable(part *logstore.Partition, offset int64, maxBytes int) (data []byte, hwm, lso int64, err error) {
	data, err = f.readInto(func(buf []byte) ([]byte, error) {
		out, h, l, err := part.ReadStableAppend(buf, offset, maxBytes)
		hwm, lso = h, l
		return out, err
	})
	return data, hwm, lso, err
}

// readInto runs read, which appends to the fetch's buffer, and keeps
// what it returns as the buffer; it returns the bytes read appended.
func (f *fetch) readInto(read func(buf []byte) ([]byte, error)) ([]byte, error) {
	buf := f.readBuf()
	out, err := read(buf)
	if err != nil {
		return nil, err
	}
	if cap(out) != cap(buf) {
		// The read outgrew it (append moved it): keep the old one
		// for the pool too.
		f.spent = append(f.spent, buf[:0])
	}
	f.buf = out
	return out[len(buf):], nil
}

// release hands the fetch's buffers back to the pool, once nothing
// refers to them: the response is encoded, or rebuilt.
func (f *fetch) release() {
	for _, b := range f.spent {
		putFrame(b)
	}
	f.spent = f.spent[:0]
	if f.buf != nil {
		putFrame(f.buf)
		f.buf = nil
	}
}
