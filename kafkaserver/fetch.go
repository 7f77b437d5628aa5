package kafkaserver

import (
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/segment"
)

// handleFetch serves Fetch v4-12: whole batches from the one holding the
// fetch offset, never at or past the high watermark (DurableEnd), the
// segment bytes as they are on disk. No fetch sessions: the response's
// SessionID is 0, so clients send full fetches. When fewer than MinBytes
// are there, the fetch waits up to MaxWaitMillis in a goroutine of its
// own, woken when a partition's DurableEnd moves.
func handleFetch(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	p.resp = resp
	if r.Version >= 7 && r.SessionID != 0 {
		// We never hand out a session.
		resp.ErrorCode = errFetchSessionIDNotFound
		p.setErr(resp.ErrorCode)
		return nil
	}
	f := &fetch{s: s, c: c, r: r, resp: resp}
	n, parts, failed := f.build()
	if failed || n >= int(r.MinBytes) || r.MaxWaitMillis <= 0 || len(parts) == 0 {
		f.setErr(p)
		return nil
	}
	s.later(p, func() {
		f.wait(parts)
		f.setErr(p)
	})
	return nil
}

type fetch struct {
	s    *Server
	c    *conn
	r    *kmsg.FetchRequest
	resp *kmsg.FetchResponse
	fetchBufs
}

// build fills the response from the partitions as they are now. It
// returns the record bytes it put in, the partitions it read, and
// whether a partition answered an error (which answers the fetch at
// once, as Kafka does).
func (f *fetch) build() (n int, parts []*logstore.Partition, failed bool) {
	f.resp.Topics = f.resp.Topics[:0]
	f.release()
	remaining := int(f.r.MaxBytes)
	if f.r.Version < 3 || remaining <= 0 {
		remaining = DefaultMaxRequestBytes
	}
	for _, rt := range f.r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			// Empty, never null: librdkafka fails to parse a null
			// record set ("invalid MessageSetSize -1"), and Kafka
			// sends an empty one.
			sp.RecordBatches = []byte{}
			part, code := f.s.partition(rt.Topic, rp.Partition, false)
			if code != errNone {
				sp.ErrorCode = code
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			parts = append(parts, part)
			limit := int(rp.PartitionMaxBytes)
			if limit <= 0 || limit > remaining {
				limit = remaining
			}
			var data []byte
			var hwm int64
			var err error
			if remaining > 0 || n == 0 {
				// Read returns at least one batch (KIP-74): the first
				// batch of the fetch goes out whatever its size.
				data, hwm, err = f.readDurable(part, rp.FetchOffset, max(limit, 1))
			} else {
				hwm = part.DurableEnd()
				if rp.FetchOffset < part.StartOffset() || rp.FetchOffset > hwm {
					err = segment.ErrOffsetOutOfRange
				}
			}
			sp.HighWatermark, sp.LastStableOffset = hwm, hwm
			sp.LogStartOffset = part.StartOffset()
			switch {
			case errors.Is(err, segment.ErrOffsetOutOfRange):
				sp.ErrorCode = errOffsetOutOfRange
				failed = true
			case err != nil:
				sp.ErrorCode = f.s.failureCode("fetch", part.ID(), err)
				failed = true
			case len(data) > 0:
				sp.RecordBatches = data
				n += len(data)
				remaining -= len(data)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return n, parts, failed
}

// wait rebuilds the response each time a partition's DurableEnd moves,
// until it holds MinBytes, MaxWaitMillis have passed, or the
// connection's reader stops (the client went, or Shutdown). One timer, stopped when it returns; no goroutine.
func (f *fetch) wait(parts []*logstore.Partition) {
	f.s.longPolls.Add(1)
	defer f.s.longPolls.Add(-1)
	timer := time.NewTimer(time.Duration(f.r.MaxWaitMillis) * time.Millisecond)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, len(parts)+2)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)}
	cases[1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.c.ctx.Done())}
	for {
		for i, part := range parts {
			cases[i+2] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(part.DurableChanged())}
		}
		// Rebuild after taking the channels: an advance in between wakes
		// the select at once.
		n, _, failed := f.build()
		if failed || n >= int(f.r.MinBytes) {
			return
		}
		if i, _, _ := reflect.Select(cases); i < 2 {
			f.build()
			return
		}
	}
}

// setErr notes the response's first error code in p, and about how
// large the response will be (its record bytes, and a header's worth
// per partition).
func (f *fetch) setErr(p *pending) {
	hint := 256
	for _, t := range f.resp.Topics {
		hint += 64 + len(t.Topic)
		for _, sp := range t.Partitions {
			p.setErr(sp.ErrorCode)
			hint += 64 + len(sp.RecordBatches)
		}
	}
	p.sizeHint = hint
	p.release = f.release
}
