package kafkaserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// describeTopicPartitionsReq asks for topics (every topic when none),
// at most limit partitions, from cursor ("topic/partition", or none).
func describeTopicPartitionsReq(limit int32, cursor string, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	r := kmsg.NewPtrDescribeTopicPartitionsRequest()
	r.ResponsePartitionLimit = limit
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		r.Topics = append(r.Topics, rt)
	}
	if cursor != "" {
		i := strings.LastIndexByte(cursor, '/')
		var p int32
		fmt.Sscan(cursor[i+1:], &p)
		r.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor[:i], Partition: p}
	}
	return r
}

// pageOf renders an answer as "topic:code:partitions;...>cursor".
func pageOf(resp *kmsg.DescribeTopicPartitionsResponse) string {
	var b strings.Builder
	for _, t := range resp.Topics {
		fmt.Fprintf(&b, "%s:%d:", str(t.Topic), t.ErrorCode)
		for i, p := range t.Partitions {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, p.Partition)
		}
		b.WriteByte(';')
	}
	if c := resp.NextCursor; c != nil {
		fmt.Fprintf(&b, ">%s/%d", c.Topic, c.Partition)
	}
	return b.String()
}

// TestDescribeTopicPartitions: the pages of Kafka's handler: topics in
// name order, each once, from the cursor; at most the limit (at least
// 1) of partitions, the next cursor inside a topic cut short or at the
// next topic once the limit is spent; unknown named topics 3, bad names
// 17, both left out of a listing of all; a cursor outside the topics
// asked, or with a negative partition, 42 for every topic; each
// partition led by node 0 at epoch 0, its only replica.
func TestDescribeTopicPartitions(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("a", 3)
	ts.createTopic("b", 1)
	ts.createTopic("c", 2)
	c := ts.dial()
	for _, tc := range []struct {
		limit  int32
		cursor string
		topics []string
		want   string
	}{
		{2000, "", nil, "a:0:0,1,2;b:0:0;c:0:0,1;"},
		{2, "", nil, "a:0:0,1;>a/2"},
		{2, "a/2", nil, "a:0:2;b:0:0;>c/0"},
		{2, "c/0", nil, "c:0:0,1;"},
		{3, "", nil, "a:0:0,1,2;>b/0"},
		{0, "", nil, "a:0:0;>a/1"},  // a limit below 1 is 1
		{-5, "", nil, "a:0:0;>a/1"}, // so is a negative one
		{10, "a/7", nil, "a:0:;b:0:0;c:0:0,1;"},
		{10, "bb/0", nil, "c:0:0,1;"}, // the cursor's topic need not exist when listing all
		{10, "", []string{"c", "nope", "a", "a", "bad/name"}, "a:0:0,1,2;bad/name:17:;c:0:0,1;nope:3:;"},
		{1, "", []string{"c", "nope"}, "c:0:0;>c/1"},
		{2, "", []string{"c", "nope"}, "c:0:0,1;>nope/0"},
		{10, "c/1", []string{"a", "c"}, "c:0:1;"},
		{10, "b/0", []string{"a", "c"}, "a:42:;c:42:;"},
		{10, "a/-1", []string{"a"}, "a:42:;"},
		{10, "a/-1", nil, ""},
	} {
		r := describeTopicPartitionsReq(tc.limit, tc.cursor, tc.topics...)
		resp := c.do(r).(*kmsg.DescribeTopicPartitionsResponse)
		if got := pageOf(resp); got != tc.want {
			t.Errorf("limit %d cursor %q topics %q: %s, want %s", tc.limit, tc.cursor, tc.topics, got, tc.want)
		}
	}
	resp := c.do(describeTopicPartitionsReq(10, "", "b")).(*kmsg.DescribeTopicPartitionsResponse)
	tp, _ := ts.srv.cat.Topic("b")
	st := resp.Topics[0]
	if st.TopicID != tp.ID || st.IsInternal || st.AuthorizedOperations != topicAuthorizedOperations {
		t.Errorf("topic b: id %x (want %x), internal %v, operations %d", st.TopicID, tp.ID, st.IsInternal, st.AuthorizedOperations)
	}
	sp := st.Partitions[0]
	if sp.ErrorCode != 0 || sp.LeaderID != 0 || sp.LeaderEpoch != 0 || fmt.Sprint(sp.Replicas, sp.ISR) != "[0] [0]" || len(sp.EligibleLeaderReplicas) != 0 || len(sp.OfflineReplicas) != 0 {
		t.Errorf("partition b-0: %+v", sp)
	}
}
