package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// stampedBatch is a client batch without producer whose records have
// the given timestamps.
func stampedBatch(t *testing.T, timestamps ...int64) []byte {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	for _, ts := range timestamps {
		if err := b.Append(ts, nil, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListOffsetsMaxTimestampRecord: ListOffsets -3 answers the offset
// of the record with the largest timestamp (the first of equals), not
// the last offset of its batch, as Kafka 3.8+ does; and when that record
// is above the high watermark (written, not yet synced), it answers no
// offset (-1, -1), as Kafka does, rather than an earlier one.
func TestListOffsetsMaxTimestampRecord(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	const t0 = 1_700_000_000_000
	if got := producePart(t, c, 9, -1, "t", 0, stampedBatch(t, t0+1, t0+5, t0+5, t0+2)); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	list := func() kmsg.ListOffsetsResponseTopicPartition {
		return c.do(listOffsetsReq("t", 0, listMaxTimestamp)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	if got := list(); got.ErrorCode != 0 || got.Offset != 1 || got.Timestamp != t0+5 || got.LeaderEpoch != 0 {
		t.Fatalf("max timestamp: %+v; want offset 1, timestamp %d", got, t0+5)
	}
	p, err := ts.store.ExistingPartition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendWritten(stampedBatch(t, t0+9)); err != nil { // written, not synced
		t.Fatal(err)
	}
	if got := list(); got.ErrorCode != 0 || got.Offset != -1 || got.Timestamp != -1 {
		t.Fatalf("max timestamp above the high watermark: %+v; want offset and timestamp -1", got)
	}
}
