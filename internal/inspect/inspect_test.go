package inspect

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// TestStoredGroup: the lag of an offset is to its partition's end (the
// whole partition for a negative offset, never below 0), unknown for a
// partition without an end, and summed over the known ones.
func TestStoredGroup(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1700000000000)
	var a kmsg.ConsumerMemberAssignment
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "a", Partitions: []int32{2, 0}}}
	g := groupcoord.GroupInfo{Group: "app one", ProtocolType: "consumer", Generation: 3, State: groupcoord.Stable, EmptySince: at, Members: []groupcoord.MemberDescription{
		{MemberID: "m-1", InstanceID: "i-1", ClientID: "c", ClientHost: "/127.0.0.1", Assignment: a.AppendTo(nil)},
		{MemberID: "m-2", ClientID: "c", ClientHost: "/127.0.0.1"},
	}, Offsets: []groupcoord.Offset{
		{TopicPartition: groupcoord.TopicPartition{Topic: "a", Partition: 0}, Offset: 4, Committed: at, Metadata: "m"},
		{TopicPartition: groupcoord.TopicPartition{Topic: "a", Partition: 1}, Offset: -1, Committed: at},
		{TopicPartition: groupcoord.TopicPartition{Topic: "a", Partition: 2}, Offset: 50, Committed: at},
		{TopicPartition: groupcoord.TopicPartition{Topic: "gone", Partition: 0}, Offset: 1, Committed: at},
	}}
	ends := map[groupcoord.TopicPartition]int64{{Topic: "a", Partition: 0}: 10, {Topic: "a", Partition: 1}: 7, {Topic: "a", Partition: 2}: 20}
	j := StoredGroup(g, func(tp groupcoord.TopicPartition) (int64, bool) { e, ok := ends[tp]; return e, ok })
	want := `group="app one" protocolType="consumer" generation=3 state=Stable members=2 emptySince=1700000000000 offsets=4 lag=13
group="app one" member="m-1" instanceId="i-1" clientId="c" host=/127.0.0.1 assignment=a:0,2
group="app one" member="m-2" instanceId=none clientId="c" host=/127.0.0.1 assignment=
group="app one" topic=a partition=0 committed=4 end=10 lag=6 leaderEpoch=0 committedAt=1700000000000 metadata="m"
group="app one" topic=a partition=1 committed=-1 end=7 lag=7 leaderEpoch=0 committedAt=1700000000000 metadata=""
group="app one" topic=a partition=2 committed=50 end=20 lag=0 leaderEpoch=0 committedAt=1700000000000 metadata=""
group="app one" topic=gone partition=0 committed=1 end=unknown lag=unknown leaderEpoch=0 committedAt=1700000000000 metadata=""
`
	if got := string(j.AppendText(nil, true)); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	b, err := j.AppendJSON(nil, false)
	if err != nil || string(b) != `{"group":"app one","protocolType":"consumer","state":"Stable","members":[{"memberId":"m-1","instanceId":"i-1","clientId":"c","clientHost":"/127.0.0.1","assignment":{"a":[0,2]}},{"memberId":"m-2","instanceId":null,"clientId":"c","clientHost":"/127.0.0.1","assignment":{}}],"generation":3,"emptySince":1700000000000,"lag":13,"offsets":null}` {
		t.Errorf("JSON without detail: %s %v", b, err)
	}
}

// TestProducerLine: a producer's text line and JSON object.
func TestProducerLine(t *testing.T) {
	t.Parallel()
	e := producerstate.Entry{ProducerID: 31, Epoch: 1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 9,
		Batches: []producerstate.BatchMeta{{FirstSeq: 0, LastSeq: 1, FirstOffset: 5, LastOffset: 6, Timestamp: 8}, {FirstSeq: 2, LastSeq: 2, FirstOffset: 7, LastOffset: 7, Timestamp: 9}}}
	p := ProducerOf(e)
	if got, want := string(p.AppendText(nil)), "producerId=31 epoch=1 lastSequence=2 lastTimestamp=9 txnFirstOffset=none coordinatorEpoch=-1 window=[0..1@5..6 ts=8, 2..2@7..7 ts=9]"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	e.Batches, e.TxnFirstOffset = nil, 12
	p = ProducerOf(e)
	b, _ := json.Marshal(p)
	if want := `{"producerId":31,"epoch":1,"lastSequence":-1,"lastTimestamp":9,"txnFirstOffset":12,"coordinatorEpoch":-1,"window":[]}`; string(b) != want || p.LastSequence != recordbatch.NoSequence {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
