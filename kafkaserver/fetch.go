package kafkaserver

// Fetch (key 1), versions 4-12 advertised (librdkafka takes record
// batches from Fetch v4 on).
//
//   - v4: IsolationLevel (read_committed), LastStableOffset and
//     AbortedTransactions.
//   - v5: LogStartOffset. v7 (KIP-227): fetch sessions, which logstore
//     does not hand out: SessionID is 0, and a request with a session id
//     is FETCH_SESSION_ID_NOT_FOUND (70).
//   - v9 (KIP-320): CurrentLeaderEpoch, not checked (always 0 here).
//   - v10: zstd batches may be served. v11 (KIP-392): RackID and
//     PreferredReadReplica, which is -1.
//   - v12: flexible.
//   - v13+ (topic ids) is not advertised.
//
// Whole batches from the one holding the fetch offset, at least one
// (KIP-74), below the high watermark, or under read_committed the last
// stable offset; the long poll waits in a goroutine of its own
// (answerLater). doc.go has the details.

import (
	"encoding/binary"
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// handleFetch serves Fetch v4-12: whole batches from the one holding the
// fetch offset, never at or past the high watermark (DurableEnd), and
// under IsolationLevel 1 (read_committed) never at or past the last
// stable offset, with the aborted transactions of the data returned; the
// segment bytes as they are on disk. No fetch sessions: the response's
// SessionID is 0, so clients send full fetches. When fewer than MinBytes
// are there (counted as the isolation level reads), the fetch waits up
// to MaxWaitMillis in a goroutine of its own, woken when a partition's
// DurableEnd may have moved or a marker was written (which moves the
// LSO; Partition.AppendMarker, and the SyncTo that follows
// AppendMarkerWritten, signal DurableChanged).
func handleFetch(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.FetchRequest)
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	p.resp = resp
	if r.Version >= 7 && r.SessionID != 0 {
		// We never hand out a session.
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		p.setErr(resp.ErrorCode)
		return nil
	}
	f := &fetch{s: s, c: c, r: r, resp: resp}
	n, parts, failed := f.build()
	if failed || n >= int(r.MinBytes) || r.MaxWaitMillis <= 0 || len(parts) == 0 {
		f.setErr(p)
		return nil
	}
	complete := c.answerLater(p, nil)
	go complete(func() {
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
			data, hwm, lso, err := f.read(part, rp.FetchOffset, limit, remaining > 0 || n == 0)
			sp.HighWatermark, sp.LastStableOffset = hwm, lso
			sp.LogStartOffset = part.StartOffset()
			switch {
			case errors.Is(err, segment.ErrOffsetOutOfRange):
				sp.ErrorCode = errOffsetOutOfRange
				failed = true
			case err != nil:
				sp.ErrorCode = f.s.failureCode("fetch", part.ID(), err)
				failed = true
			default:
				if f.r.IsolationLevel == isolationReadCommitted {
					// A list, empty when none: Kafka sends null only
					// under read_uncommitted and with an error.
					if sp.AbortedTransactions, err = abortedIn(part, rp.FetchOffset, data); err != nil {
						sp.ErrorCode = f.s.failureCode("fetch", part.ID(), err)
						failed = true
						break
					}
				}
				if len(data) > 0 {
					sp.RecordBatches = data
					n += len(data)
					remaining -= len(data)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return n, parts, failed
}

// isolationReadCommitted is Fetch's and ListOffsets' IsolationLevel
// read_committed: only data below the last stable offset.
const isolationReadCommitted = 1

// read reads one partition for the fetch: up to limit bytes but at least
// a batch (KIP-74) when some is set (the first batch of the fetch goes
// out whatever its size), else nothing but the offset's check. Under
// read_committed only below the last stable offset, else below the high
// watermark. It returns the high watermark and the LSO of the moment,
// lso <= hwm.
func (f *fetch) read(part *logstore.Partition, offset int64, limit int, some bool) (data []byte, hwm, lso int64, err error) {
	committed := f.r.IsolationLevel == isolationReadCommitted
	switch {
	case some && committed:
		return f.readStable(part, offset, max(limit, 1))
	case some:
		// The LSO first: it is bounded by the high watermark of its
		// moment, which only grows.
		lso = part.LastStableOffset()
		data, hwm, err = f.readDurable(part, offset, max(limit, 1))
		return data, hwm, lso, err
	}
	lso = part.LastStableOffset()
	hwm = part.DurableEnd()
	if offset < part.StartOffset() || offset > hwm {
		err = segment.ErrOffsetOutOfRange
	}
	return nil, hwm, lso, err
}

// abortedIn returns the aborted transactions a read_committed fetch from
// offset that returned data lists: those with data in it, as Kafka's
// collectAbortedTransactions picks them with the upper bound just past
// the data's last batch. Kafka's bound is looser (the first offset-index
// entry past the bytes read, else the next segment's base, else the log
// end) and can name transactions that begin after the data; a client
// ignores those, and this list names exactly the ones in range. Never
// nil.
func abortedIn(part *logstore.Partition, offset int64, data []byte) ([]kmsg.FetchResponseTopicPartitionAbortedTransaction, error) {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	end := endOfBatches(data)
	if end <= offset {
		return out, nil
	}
	txns, err := part.AbortedTransactions(offset, end)
	if err != nil {
		return nil, err
	}
	for _, t := range txns {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = t.ProducerID, t.FirstOffset
		out = append(out, at)
	}
	return out, nil
}

// endOfBatches is the offset after the last batch of data (whole
// batches, as a read returns them), or -1 when it holds none.
func endOfBatches(data []byte) int64 {
	end := int64(-1)
	for pos := 0; pos+recordbatch.HeaderSize <= len(data); {
		b := recordbatch.Batch(data[pos:])
		size := 12 + int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if size < recordbatch.HeaderSize || pos+size > len(data) {
			break
		}
		end = b.LastOffset() + 1
		pos += size
	}
	return end
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
