package kafkaserver

// ListOffsets (key 2), versions 1-10 advertised (v0 answered a list of
// offsets per partition).
//
//   - v1: one offset and its timestamp per partition.
//   - v2: IsolationLevel (read_committed: the last stable offset for
//     -1) and ThrottleMillis.
//   - v4 (KIP-320): CurrentLeaderEpoch, checked (leaderEpochCode: -1
//     unchecked, below 0 74 FENCED_LEADER_EPOCH, above 76
//     UNKNOWN_LEADER_EPOCH), and LeaderEpoch in the response: the
//     answered offset's (Partition.EpochOf; 0 but for an adopted
//     partition's checkpoint epochs). v5: the same as v4.
//   - v6: flexible.
//   - v7 (KIP-734): -3, the largest timestamp.
//   - v8 (KIP-405): -4, the earliest local offset: the log start, since
//     nothing is tiered.
//   - v9 (KIP-1005): -5, the latest tiered offset: nothing is tiered,
//     so offset, timestamp and leader epoch -1 with no error, as Kafka's
//     fetchOffsetByTimestamp answers without remote storage (at any
//     version, as -4 is: Kafka's log does not look at the version).
//   - v10 (KIP-1075): TimeoutMillis, which bounds only a remote
//     lookup in Kafka; every answer here is local and at once.
//   - v11 (KIP-1023's -6, earliest pending upload) is not advertised.
//
// Nothing at or past the high watermark (read_committed: the LSO) is
// ever named, as in Kafka's fetchOffsetForTimestamp.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// The special timestamps of ListOffsets.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

// handleListOffsets answers ListOffsets v1-10: -2 and -4 the log start,
// -1 the high watermark, or under IsolationLevel 1 (read_committed, v2+)
// the last stable offset, -5 (v9+) no offset (nothing is tiered), -3
// (v7+) the offset of the record with the largest timestamp
// (Partition.MaxTimestamp), t >= 0 the first offset whose timestamp is
// >= t by the time index. Leader epoch: that of the offset answered
// (Partition.EpochOf: 0, or an adopted partition's epoch from its
// leader-epoch-checkpoint); CurrentLeaderEpoch (v4+)
// checked by leaderEpochCode first. As in
// Kafka's fetchOffsetForTimestamp, nothing at or past the high
// watermark, or under read_committed the LSO, is ever named: -3 and
// t >= 0 answer no offset (-1) when theirs is there.
func handleListOffsets(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	p.resp = resp
	committed := r.IsolationLevel == isolationReadCommitted
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.ListOffsetsRequestTopic, st *kmsg.ListOffsetsResponseTopic) {
		*st = kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		denied := s.topicCode(c, kmsg.ACLOperationDescribe, rt.Topic)
		st.Partitions = answerEach(rt.Partitions, func(rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
			*sp = kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			var part *logstore.Partition
			code := denied
			if code == errNone {
				part, code = s.partition(rt.Topic, rp.Partition, false)
			}
			if code == errNone && r.Version >= 4 {
				code = leaderEpochCode(rp.CurrentLeaderEpoch, part)
			}
			if code == errNone {
				code = s.listOffset(part, rp.Timestamp, committed, sp)
			}
			if code == errNone && sp.Offset >= 0 {
				// 0 but for a partition adopted with the epochs of
				// its leader-epoch-checkpoint.
				sp.LeaderEpoch = part.EpochOf(sp.Offset)
			}
			sp.ErrorCode = code
			p.setErr(code)
		})
	})
	return nil
}

// listOffset answers one partition's timestamp ts into sp, returning
// its code.
func (s *Server) listOffset(part *logstore.Partition, ts int64, committed bool, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	// The last offset a fetch of the isolation level can read, plus one.
	bound := part.DurableEnd()
	if committed {
		bound = part.LastStableOffset()
	}
	sp.LeaderEpoch = part.LeaderEpoch()
	switch ts {
	case listLatestTiered:
		// Nothing is tiered: no offset, and leader epoch -1, as
		// Kafka's log answers without remote storage.
		sp.LeaderEpoch = -1
		return errNone
	case listEarliest, listEarliestLocal:
		sp.Offset = part.StartOffset()
		return errNone
	case listLatest:
		sp.Offset = bound
		return errNone
	case listMaxTimestamp:
		mts, off, err := part.MaxTimestamp()
		if err != nil {
			return s.failureCode("list offsets", part.ID(), err)
		}
		if off >= 0 && off < bound {
			sp.Timestamp, sp.Offset = mts, off
		}
		return errNone
	}
	if ts < 0 {
		return kerr.InvalidRequest.Code
	}
	off, err := part.OffsetForTime(ts)
	if err != nil {
		return s.failureCode("list offsets", part.ID(), err)
	}
	if off < 0 || off >= bound {
		return errNone
	}
	rts, err := recordTimestamp(part, off)
	if err != nil {
		return s.failureCode("list offsets", part.ID(), err)
	}
	sp.Timestamp, sp.Offset = rts, off
	return errNone
}

// recordTimestamp returns the timestamp of the record at offset.
func recordTimestamp(part *logstore.Partition, offset int64) (int64, error) {
	data, err := part.Read(offset, 1)
	if err != nil {
		return -1, err
	}
	// Read returns exactly the batch that holds offset when asked for
	// one byte.
	var rr recordbatch.RecordReader
	if err := rr.Reset(recordbatch.Batch(data), 0); err != nil {
		return -1, err
	}
	for rr.Next() {
		if rr.Record().Offset == offset {
			return rr.Record().Timestamp, nil
		}
	}
	return -1, rr.Err()
}
