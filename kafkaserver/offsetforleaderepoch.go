package kafkaserver

// OffsetForLeaderEpoch (key 23), versions 0-4 advertised.
//
//   - v0: per partition, the end offset of a leader epoch.
//   - v1 (KIP-279): the epoch of that end offset in the response.
//   - v2 (KIP-320): CurrentLeaderEpoch, checked (leaderEpochCode:
//     -1 unchecked, below 0 74 FENCED_LEADER_EPOCH, above 76
//     UNKNOWN_LEADER_EPOCH), and ThrottleMillis.
//   - v3: ReplicaID; a broker's (0 and above) is answered as a
//     consumer's, there being no followers.
//   - v4: flexible.
//
// Consumers ask it (KIP-320) after a leader change or a reset, with the
// epoch of the last batch they took, to learn whether the log they read
// was truncated. The answer is Kafka's (ReplicaManager and Partition's
// lastOffsetForLeaderEpoch, LeaderEpochFileCache.endOffsetFor) over the
// partition's epochs, logstore.Partition.LeaderEpochs: epoch 0 from the
// log start, or an adopted partition's leader-epoch-checkpoint. The end
// offset of the latest epoch is the high watermark (DurableEnd), not the
// log end Kafka gives: nothing past it is named, as everywhere here.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetForLeaderEpoch answers each partition: 3 for an unknown
// topic or partition, the CurrentLeaderEpoch check (v2+), then the
// epoch and end offset of Partition.EndOffsetForEpoch: (-1, -1) for
// epoch -1 or one above every epoch; the latest epoch and the high
// watermark; for an older epoch, the latest epoch at or below it (or the
// requested one when none is) and the start offset of the next one.
func handleOffsetForLeaderEpoch(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	p.resp = resp
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.OffsetForLeaderEpochRequestTopic, st *kmsg.OffsetForLeaderEpochResponseTopic) {
		*st = kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		denied := s.topicCode(c, kmsg.ACLOperationDescribe, rt.Topic)
		st.Partitions = answerEach(rt.Partitions, func(rp *kmsg.OffsetForLeaderEpochRequestTopicPartition, sp *kmsg.OffsetForLeaderEpochResponseTopicPartition) {
			*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			if denied != errNone {
				sp.ErrorCode = denied
				p.setErr(denied)
				return
			}
			part, code := s.partition(rt.Topic, rp.Partition, false)
			if code == errNone && r.Version >= 2 {
				code = leaderEpochCode(rp.CurrentLeaderEpoch, part)
			}
			if code == errNone {
				sp.LeaderEpoch, sp.EndOffset = part.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			sp.ErrorCode = code
			p.setErr(code)
		})
	})
	return nil
}
