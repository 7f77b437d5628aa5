package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestDeleteTopics: by name (v0-5) and by name or id (v6); unknown
// names 3, unknown ids 100; a deleted topic is gone from Metadata and
// from the store's directories, and a produce to it is refused with 3.
func TestDeleteTopics(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("a", 2)
	ts.createTopic("b", 1)
	ts.createTopic("c", 1)
	c := ts.dial()
	if got := producePart(t, c, 9, -1, "a", 1, batchOf(-1, 0, 0, "x")); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	r := kmsg.NewPtrDeleteTopicsRequest()
	r.Version = 5
	r.TopicNames = []string{"a", "nope"}
	resp := c.do(r).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("v5: %+v", resp.Topics)
	}
	bt, _ := ts.srv.cat.Topic("b")
	r = kmsg.NewPtrDeleteTopicsRequest()
	r.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = bt.ID
	byName := kmsg.NewDeleteTopicsRequestTopic()
	name := "c"
	byName.Topic = &name
	unknownID := kmsg.NewDeleteTopicsRequestTopic()
	unknownID.TopicID = [16]byte{1}
	r.Topics = []kmsg.DeleteTopicsRequestTopic{byID, byName, unknownID}
	resp = c.do(r).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 3 || resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != "b" ||
		resp.Topics[1].ErrorCode != 0 || resp.Topics[1].TopicID == [16]byte{} || resp.Topics[2].ErrorCode != errUnknownTopicID {
		t.Fatalf("v6: %+v", resp.Topics)
	}
	if m := metadata(t, c, 12, false); len(m.Topics) != 0 {
		t.Fatalf("topics after deletion: %+v", m.Topics)
	}
	ids, err := ts.store.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 0 {
		t.Fatalf("partition directories after deletion: %v", ids)
	}
	if got := producePart(t, c, 9, -1, "a", 1, batchOf(-1, 0, 0, "y")); got.ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("produce to a deleted topic: %+v", got)
	}
}
