package kafkaserver

// Fetch (key 1), versions 4-12 advertised (librdkafka takes record
// batches from Fetch v4 on).
//
//   - v4: IsolationLevel (read_committed), LastStableOffset and
//     AbortedTransactions.
//   - v5: LogStartOffset. v7 (KIP-227): fetch sessions, which logstore
//     does not hand out: SessionID is 0, and a request with a session id
//     is FETCH_SESSION_ID_NOT_FOUND (70).
//   - v9 (KIP-320): CurrentLeaderEpoch, checked as Kafka's Partition
//     does (leaderEpochCode: -1 unchecked, below 0 74
//     FENCED_LEADER_EPOCH, above 76 UNKNOWN_LEADER_EPOCH; the partition's
//     answer is then the error alone).
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
// AppendMarkerWritten, tell the partition's DurableWatchers). One
// watcher is registered with every partition of the fetch, once; a wake
// reads again only the partitions that moved (wait).
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
	f.codes = authorizeTopics(s, c, kmsg.ACLOperationRead, r.Topics, func(t *kmsg.FetchRequestTopic) string { return t.Topic })
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
	// codes are the topics' authorization, READ (authorizeTopics): a
	// partition of a topic not allowed is answered 29, at once as
	// every error is (Kafka's would wait for the others).
	codes topicCodes
	fetchBufs
}

// build fills the response from the partitions as they are now. It
// returns the record bytes it put in, the partitions it read, and
// whether a partition answered an error (which answers the fetch at
// once, as Kafka does).
func (f *fetch) build() (n int, parts []*logstore.Partition, failed bool) {
	f.resp.Topics = f.resp.Topics[:0]
	f.release()
	remaining := f.maxBytes()
	for ti := range f.r.Topics {
		rt := &f.r.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for pi := range rt.Partitions {
			var sp kmsg.FetchResponseTopicPartition // fill sets it whole
			part, got, bad := f.fill(&sp, rt.Topic, &rt.Partitions[pi], remaining, n == 0)
			if part != nil {
				parts = append(parts, part)
			}
			n += got
			remaining -= got
			failed = failed || bad
			st.Partitions = append(st.Partitions, sp)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return n, parts, failed
}

// maxBytes is the fetch's MaxBytes, as build counts it.
func (f *fetch) maxBytes() int {
	if m := int(f.r.MaxBytes); f.r.Version >= 3 && m > 0 {
		return m
	}
	return DefaultMaxRequestBytes
}

// fill answers one partition of the fetch in sp, afresh: remaining is
// what is left of the fetch's MaxBytes after the partitions answered
// before it, first whether none of them has data (then it gets at least
// a batch, KIP-74). It returns the partition read (nil when the lookup
// answered an error), the record bytes it put in, and whether it
// answered an error.
func (f *fetch) fill(sp *kmsg.FetchResponseTopicPartition, topic string, rp *kmsg.FetchRequestTopicPartition, remaining int, first bool) (part *logstore.Partition, n int, failed bool) {
	*sp = kmsg.NewFetchResponseTopicPartition()
	sp.Partition = rp.Partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	sp.PreferredReadReplica = -1
	// Empty, never null: librdkafka fails to parse a null record set
	// ("invalid MessageSetSize -1"), and Kafka sends an empty one.
	sp.RecordBatches = []byte{}
	if code := f.codes.of(topic); code != errNone {
		sp.ErrorCode = code
		return nil, 0, true
	}
	part, code := f.s.partition(topic, rp.Partition, false)
	if code == errNone && f.r.Version >= 9 {
		code = leaderEpochCode(rp.CurrentLeaderEpoch, part)
	}
	if code != errNone {
		sp.ErrorCode = code
		return nil, 0, true
	}
	limit := int(rp.PartitionMaxBytes)
	if limit <= 0 || limit > remaining {
		limit = remaining
	}
	data, hwm, lso, err := f.read(part, rp.FetchOffset, limit, remaining > 0 || first)
	sp.HighWatermark, sp.LastStableOffset = hwm, lso
	sp.LogStartOffset = part.StartOffset()
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		sp.ErrorCode = errOffsetOutOfRange
		return part, 0, true
	case err != nil:
		sp.ErrorCode = f.s.failureCode("fetch", part.ID(), err)
		return part, 0, true
	}
	if f.r.IsolationLevel == isolationReadCommitted {
		// A list, empty when none: Kafka sends null only under
		// read_uncommitted and with an error.
		if sp.AbortedTransactions, err = abortedIn(part, rp.FetchOffset, data); err != nil {
			sp.ErrorCode = f.s.failureCode("fetch", part.ID(), err)
			return part, 0, true
		}
	}
	if len(data) > 0 {
		sp.RecordBatches = data
	}
	return part, len(data), false
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

// rebuildSlack is how many bytes of superseded reads a long poll lets
// pile up in its buffers (beyond as many as its response holds) before
// it rebuilds the whole response into fresh ones.
const rebuildSlack = 256 << 10

// wait answers again, each time a partition's DurableEnd may have
// moved, the partitions that moved, until the response holds MinBytes,
// MaxWaitMillis have passed, or the connection's reader stops (the
// client went, or Shutdown); the last two rebuild the whole response
// first. parts are the partitions build read, one per partition of the
// response (it failed on none). A logstore.DurableWatcher, registered
// once with each partition, says which moved, as Kafka's delayed fetch
// watches its partitions: a wake costs what moved, not every partition.
// One timer, stopped when it returns; no goroutine.
func (f *fetch) wait(parts []*logstore.Partition) {
	f.s.longPolls.Add(1)
	defer f.s.longPolls.Add(-1)
	timer := time.NewTimer(time.Duration(f.r.MaxWaitMillis) * time.Millisecond)
	defer timer.Stop()
	// keys[i] is the place of parts[i] in the request and the response.
	type place struct{ ti, pi int }
	keys := make([]place, 0, len(parts))
	for ti := range f.resp.Topics {
		for pi := range f.resp.Topics[ti].Partitions {
			keys = append(keys, place{ti, pi})
		}
	}
	w := logstore.NewDurableWatcher(len(parts))
	defer w.Stop()
	for i, part := range parts {
		w.Watch(i, part)
	}
	// An advance between build and the registration marked nothing:
	// answer again the partitions whose high watermark or LSO is not
	// what build saw.
	var moved []int
	n := 0
	for i, part := range parts {
		sp := &f.resp.Topics[keys[i].ti].Partitions[keys[i].pi]
		n += len(sp.RecordBatches)
		if part.DurableEnd() != sp.HighWatermark || part.LastStableOffset() != sp.LastStableOffset {
			moved = append(moved, i)
		}
	}
	read := n // bytes read into the buffers since the last whole build
	for {
		if len(moved) > 0 {
			failed := false
			if read-n > max(n, rebuildSlack) {
				// Too much of the buffers is superseded answers.
				var again []*logstore.Partition
				if n, again, failed = f.build(); failed {
					return
				}
				read = n
				for i, part := range again {
					w.Watch(i, part)
				}
			} else {
				for _, i := range moved {
					rt := &f.r.Topics[keys[i].ti]
					sp := &f.resp.Topics[keys[i].ti].Partitions[keys[i].pi]
					others := n - len(sp.RecordBatches)
					part, got, bad := f.fill(sp, rt.Topic, &rt.Partitions[keys[i].pi], f.maxBytes()-others, others == 0)
					if part != nil {
						w.Watch(i, part)
					}
					n = others + got
					read += got
					failed = failed || bad
				}
			}
			if failed {
				// Answered at once: as a wake answered before, every
				// partition as it is now (a deleted topic's all say so).
				f.build()
				return
			}
			if n >= int(f.r.MinBytes) {
				return
			}
		}
		select {
		case <-timer.C:
		case <-f.c.ctx.Done():
		case <-w.Ready():
			moved = w.Moved(moved[:0])
			continue
		}
		f.build()
		return
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
