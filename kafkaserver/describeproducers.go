package kafkaserver

// DescribeProducers (key 61), version 0 advertised (KIP-664, the only
// version; flexible).
//
// For each partition asked, the producers its producer state
// remembers.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// handleDescribeProducers answers DescribeProducers v0 (KIP-664, the
// only version): for each partition asked, every producer its producer
// state remembers (Partition.ProducerSnapshot), as Kafka's
// activeProducers reports them: producer id, epoch, the last sequence
// of its newest batch (-1 when its window is empty), the last
// timestamp, the coordinator epoch of its newest marker (-1 when none)
// and the first offset of its open transaction (-1 when none). A topic
// or partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION
// (3) for that partition.
func handleDescribeProducers(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	p.resp = resp
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.DescribeProducersRequestTopic, st *kmsg.DescribeProducersResponseTopic) {
		*st = kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		denied := s.topicCode(c, kmsg.ACLOperationRead, rt.Topic)
		st.Partitions = answerEach(rt.Partitions, func(partition *int32, sp *kmsg.DescribeProducersResponseTopicPartition) {
			*sp = kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = *partition
			sp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
			var part *logstore.Partition
			code := denied
			if code == errNone {
				part, code = s.partition(rt.Topic, *partition, false)
			}
			if code == errNone {
				sp.ActiveProducers = activeProducers(part, sp.ActiveProducers)
			}
			sp.ErrorCode = code
			p.setErr(code)
		})
	})
	return nil
}

// activeProducers appends the producers of part's state to dst.
func activeProducers(part *logstore.Partition, dst []kmsg.DescribeProducersResponseTopicPartitionActiveProducer) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	for _, e := range part.ProducerSnapshot().Producers {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = e.ProducerID
		ap.ProducerEpoch = int32(e.Epoch)
		ap.LastSequence = -1
		if n := len(e.Batches); n > 0 {
			ap.LastSequence = e.Batches[n-1].LastSeq
		}
		ap.LastTimestamp = e.LastTimestamp
		ap.CoordinatorEpoch = e.CoordinatorEpoch
		ap.CurrentTxnStartOffset = e.TxnFirstOffset
		dst = append(dst, ap)
	}
	return dst
}
