package kafkaserver

// DescribeTopicPartitions (key 75), version 0 advertised (KIP-966; Kafka
// 3.7+ admin clients describe topics with it when a broker has it, else
// with Metadata).
//
// The answer is Kafka's DescribeTopicPartitionsRequestHandler's, paged
// the same way: the topics asked (every topic when none are), each
// once, in name order, from the cursor's topic on; the partitions of
// the cursor's topic from its partition, of the others from 0; at most
// ResponsePartitionLimit partitions (at least 1, at most 2000, Kafka's
// max.request.partition.size.limit default). NextCursor is where the
// next page begins: inside a topic whose partitions did not all fit, or
// at partition 0 of the next topic once the limit is used up. A named
// topic that does not exist is 3 (17 for a name Kafka refuses), and is
// left out when every topic is listed. A cursor whose topic is not among
// those asked, or with a negative partition, refuses the request: 42
// INVALID_REQUEST for every topic asked.
//
// Every partition as Metadata has it: led by this node at leader epoch
// 0, its only replica and ISR, no eligible leader replicas (KIP-966's
// ELR, empty with one replica). Authorized operations as with no
// authorizer (topicAuthorizedOperations).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// maxDescribePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answers.
const maxDescribePartitions = 2000

// handleDescribeTopicPartitions answers DescribeTopicPartitions v0.
func handleDescribeTopicPartitions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	p.resp = resp
	all := len(r.Topics) == 0
	cursorTopic := ""
	if r.Cursor != nil {
		cursorTopic = r.Cursor.Topic
	}
	var names []string
	if all {
		for _, t := range s.cat.Topics() {
			if t.Name >= cursorTopic {
				names = append(names, t.Name)
			}
		}
	} else {
		for _, rt := range r.Topics {
			if rt.Topic >= cursorTopic {
				names = append(names, rt.Topic)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if r.Cursor != nil && (r.Cursor.Partition < 0 || !all && !slices.Contains(names, r.Cursor.Topic)) {
		for _, rt := range r.Topics {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic = strPtr(rt.Topic)
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, st)
		}
		p.setErr(kerr.InvalidRequest.Code)
		return nil
	}
	remaining := int(min(max(r.ResponsePartitionLimit, 1), maxDescribePartitions))
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			return nil
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = strPtr(name)
		if code := s.topicCode(c, kmsg.ACLOperationDescribe, name); code != errNone {
			// Left out of all topics; named, 29 whether it exists
			// or not, as Kafka answers.
			if !all {
				st.ErrorCode = code
				p.setErr(code)
				resp.Topics = append(resp.Topics, st)
			}
			continue
		}
		t, ok := s.cat.Topic(name)
		if !ok {
			if all {
				continue // deleted since the listing
			}
			st.ErrorCode = errUnknownTopicOrPartition
			if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
				st.ErrorCode = kerr.InvalidTopicException.Code
			}
			p.setErr(st.ErrorCode)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.AuthorizedOperations = s.authorizedOps(c, kmsg.ACLResourceTypeTopic, name, topicAuthorizedOperations)
		start := int32(0)
		if r.Cursor != nil && name == r.Cursor.Topic {
			start = r.Cursor.Partition
		}
		upper := t.Partitions
		if int64(start)+int64(remaining) < int64(upper) {
			upper = start + int32(remaining)
		}
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for i := start; i < upper; i++ {
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.Partition, sp.LeaderID, sp.LeaderEpoch = i, nodeID, s.store.OpenLeaderEpoch(logstore.PartitionID{Topic: name, Partition: i})
			sp.Replicas, sp.ISR = []int32{nodeID}, []int32{nodeID}
			sp.EligibleLeaderReplicas, sp.LastKnownELR, sp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		if upper < t.Partitions {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: upper}
			return nil
		}
		remaining -= len(st.Partitions)
	}
	return nil
}
