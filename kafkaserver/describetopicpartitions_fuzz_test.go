package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzDescribeTopicPartitions decodes arbitrary DescribeTopicPartitions
// bodies and answers them: no panic, no more partitions than the limit
// (at least 1, at most 2000), topics in name order, each once (or, for
// a refused cursor, 42 for every topic asked), and an answer that
// encodes and decodes.
func FuzzDescribeTopicPartitions(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("a", 3)
	ts.createTopic("b", 1)
	for _, limit := range []int32{-1, 0, 1, 2, 2000, 1 << 30} {
		for _, cursor := range []string{"", "a/1", "a/-1", "b/0", "z/5", "a/2147483647"} {
			f.Add(describeTopicPartitionsReq(limit, cursor).AppendTo(nil))
			f.Add(describeTopicPartitionsReq(limit, cursor, "b", "a", "nope", "b").AppendTo(nil))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		if req.ReadFrom(body) != nil {
			return
		}
		p := &pending{key: 75}
		if err := handleDescribeTopicPartitions(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.DescribeTopicPartitionsResponse)
		limit := int(min(max(req.ResponsePartitionLimit, 1), maxDescribePartitions))
		if len(resp.Topics) > 0 && resp.Topics[0].ErrorCode == kerr.InvalidRequest.Code {
			// A refused cursor: every topic asked, in request order.
			if len(resp.Topics) != len(req.Topics) {
				t.Fatalf("refused: %d topics answered for %d", len(resp.Topics), len(req.Topics))
			}
			for _, st := range resp.Topics {
				if st.ErrorCode != kerr.InvalidRequest.Code || len(st.Partitions) != 0 {
					t.Fatalf("refused, yet %q answered %d with %d partitions", str(st.Topic), st.ErrorCode, len(st.Partitions))
				}
			}
			return
		}
		n := 0
		for i, st := range resp.Topics {
			if i > 0 && str(resp.Topics[i-1].Topic) >= str(st.Topic) {
				t.Fatalf("topics out of order or repeated: %q then %q", str(resp.Topics[i-1].Topic), str(st.Topic))
			}
			n += len(st.Partitions)
		}
		if n > limit {
			t.Fatalf("%d partitions for a limit of %d", n, limit)
		}
		if c := resp.NextCursor; c != nil && c.Partition < 0 {
			t.Fatalf("cursor %+v", c)
		}
		back := kmsg.NewPtrDescribeTopicPartitionsResponse()
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode: %v", err)
		}
	})
}
