package kafkaserver

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
)

// growReq is a CreatePartitions request at v3 for topics, each grown to
// count; assignments, when not nil, go with the first topic.
func growReq(count int32, validateOnly bool, assignments [][]int32, topics ...string) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.Version, r.ValidateOnly, r.TimeoutMillis = 3, validateOnly, 1
	for i, name := range topics {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		if i == 0 && assignments != nil {
			rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
			for _, a := range assignments {
				ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
				ra.Replicas = a
				rt.Assignment = append(rt.Assignment, ra)
			}
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// checkPartitions fails unless topic name has want partitions in the
// catalog, in Metadata and as directories of the store.
func checkPartitions(t *testing.T, ts *testServer, c *rawClient, name string, want int32) {
	t.Helper()
	if tp, ok := ts.srv.cat.Topic(name); !ok || tp.Partitions != want {
		t.Fatalf("catalog: %s has %d partitions (%v), want %d", name, tp.Partitions, ok, want)
	}
	md := metadata(t, c, 12, false, name)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != int(want) {
		t.Fatalf("Metadata: %+v, want %d partitions", md.Topics, want)
	}
	ids, err := ts.store.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, id := range ids {
		if id.Topic == name {
			n++
		}
	}
	if n != want {
		t.Fatalf("%d partition directories of %s, want %d", n, name, want)
	}
}

// TestCreatePartitionsKadm: kadm's CreatePartitions (add) and
// UpdatePartitions (set) grow a topic, Metadata (kadm's ListTopics)
// shows the new partitions at once, and they take produce and fetch;
// the validate-only forms change nothing.
func TestCreatePartitionsKadm(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	adm := adminClient(t, ts.addr)
	c := ts.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if rs, err := adm.ValidateCreatePartitions(ctx, 3, "t"); err != nil || rs["t"].Err != nil {
		t.Fatalf("ValidateCreatePartitions: %v, %+v", err, rs)
	}
	if rs, err := adm.ValidateUpdatePartitions(ctx, 9, "t"); err != nil || rs["t"].Err != nil {
		t.Fatalf("ValidateUpdatePartitions: %v, %+v", err, rs)
	}
	checkPartitions(t, ts, c, "t", 2)

	rs, err := adm.CreatePartitions(ctx, 2, "t")
	if err != nil || rs["t"].Err != nil {
		t.Fatalf("CreatePartitions(+2): %v, %+v", err, rs)
	}
	checkPartitions(t, ts, c, "t", 4)
	rs, err = adm.UpdatePartitions(ctx, 6, "t")
	if err != nil || rs["t"].Err != nil {
		t.Fatalf("UpdatePartitions(6): %v, %+v", err, rs)
	}
	checkPartitions(t, ts, c, "t", 6)
	td, err := adm.ListTopics(ctx, "t")
	if err != nil || len(td["t"].Partitions) != 6 {
		t.Fatalf("ListTopics: %v, %+v", err, td)
	}
	// No increase: the server's 37, through kadm.
	rs, err = adm.UpdatePartitions(ctx, 6, "t")
	if err != nil || !errors.Is(rs["t"].Err, kerr.InvalidPartitions) {
		t.Fatalf("UpdatePartitions(6) again: %v, %+v", err, rs)
	}

	// A new partition takes records and serves them.
	if code := partitionCode(c.do(produceReq(9, -1, "t", 5, batchOf(-1, 0, 0, "new")))); code != 0 {
		t.Fatalf("produce to the new partition 5: %d", code)
	}
	fr := c.do(fetchReq(12, "t", 5, 0, 0, 0)).(*kmsg.FetchResponse)
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != 0 || fr.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("fetch the new partition 5: code %d, high watermark %d", code, fr.Topics[0].Partitions[0].HighWatermark)
	}
	if code := partitionCode(c.do(produceReq(9, -1, "t", 6, batchOf(-1, 0, 0, "x")))); code != errUnknownTopicOrPartition {
		t.Fatalf("produce to partition 6 of 6: %d, want 3", code)
	}
}

// TestCreatePartitionsRefusals: what Kafka refuses is refused with its
// code and message, and changes nothing, validate-only or not.
func TestCreatePartitionsRefusals(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 3)
	ts.createTopic("u", 1)
	c := ts.dial()
	for _, tc := range []struct {
		what        string
		count       int32
		assignments [][]int32
		topics      []string
		code        int16
		msg         string
	}{
		{"equal", 3, nil, []string{"t"}, kerr.InvalidPartitions.Code, "Topic already has 3 partition(s)"},
		{"lower", 2, nil, []string{"t"}, kerr.InvalidPartitions.Code, "The topic t currently has 3 partition(s); 2 would not be an increase"},
		{"negative", -1, nil, []string{"t"}, kerr.InvalidPartitions.Code, "-1 would not be an increase"},
		{"absurd", 2147483647, nil, []string{"t"}, kerr.InvalidPartitions.Code, "at most 10000"},
		{"above the bound", 10001, nil, []string{"t"}, kerr.InvalidPartitions.Code, "at most 10000"},
		{"unknown topic", 5, nil, []string{"nope"}, kerr.UnknownTopicOrPartition.Code, "unknown topic"},
		{"too few assignments", 5, [][]int32{{0}}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"no assignments", 5, [][]int32{}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"Attempted to add 2 additional partition(s), but only 0 assignment(s) were specified."},
		{"another broker", 5, [][]int32{{0}, {1}}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 1, but no such broker is registered."},
		{"a negative broker", 4, [][]int32{{0, -1}}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker -1, but no such broker is registered."},
		{"broker 0 twice", 4, [][]int32{{0, 0}}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes the broker 0 more than once."},
		{"an empty list", 4, [][]int32{{}}, []string{"t"}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes an empty replica list."},
		// The count is judged before the assignments, as Kafka does.
		{"lower with assignments", 1, [][]int32{{7}}, []string{"t"}, kerr.InvalidPartitions.Code, "would not be an increase"},
	} {
		for _, validateOnly := range []bool{false, true} {
			resp := c.do(growReq(tc.count, validateOnly, tc.assignments, tc.topics...)).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != tc.topics[0] || resp.Topics[0].ErrorCode != tc.code ||
				resp.Topics[0].ErrorMessage == nil || !strings.Contains(*resp.Topics[0].ErrorMessage, tc.msg) {
				t.Fatalf("%s (validate only %v): %+v, want code %d with %q", tc.what, validateOnly, resp.Topics, tc.code, tc.msg)
			}
			checkPartitions(t, ts, c, "t", 3)
		}
	}

	// A name twice: 42 once for it, and it is not grown; the others are.
	resp := c.do(growReq(4, false, nil, "t", "u", "t")).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("duplicates: %+v", resp.Topics)
	}
	for _, rt := range resp.Topics {
		switch {
		case rt.Topic == "t" && (rt.ErrorCode != kerr.InvalidRequest.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "Duplicate topic name."):
			t.Fatalf("the duplicate: %+v", rt)
		case rt.Topic == "u" && rt.ErrorCode != 0:
			t.Fatalf("the other topic: %+v", rt)
		}
	}
	checkPartitions(t, ts, c, "t", 3)
	checkPartitions(t, ts, c, "u", 4)

	// Valid assignments: broker 0 alone for each new partition.
	resp = c.do(growReq(5, false, [][]int32{{0}, {0}}, "t")).(*kmsg.CreatePartitionsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].ErrorMessage != nil {
		t.Fatalf("valid assignments: %+v", resp.Topics)
	}
	checkPartitions(t, ts, c, "t", 5)
}

// createPartitionsPy grows topic argv[2] to 4 partitions with
// confluent-kafka-python's AdminClient.create_partitions, then asks for 2
// and prints the error code it gets.
const createPartitionsPy = `
import sys
from confluent_kafka.admin import AdminClient, NewPartitions
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for t, f in a.create_partitions([NewPartitions(sys.argv[2], 4)], request_timeout=20).items():
    print("grown", t, f.result(timeout=20))
for t, f in a.create_partitions([NewPartitions(sys.argv[2], 2)], request_timeout=20).items():
    try:
        f.result(timeout=20)
        print("lower ok")
    except Exception as e:
        print("lower failed", e.args[0].code() if e.args and hasattr(e.args[0], "code") else e)
`

// TestCreatePartitionsConfluentPython: librdkafka's admin client grows a
// topic, and a lower count fails with 37.
func TestCreatePartitionsConfluentPython(t *testing.T) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it)", err)
	}
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("py", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", createPartitionsPy, ts.addr, "py")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	want := "grown py None\nlower failed 37\n"
	if got := out.String(); got != want {
		t.Fatalf("python printed:\n%s\nwant:\n%s\nstderr:\n%s", got, want, strings.TrimSpace(errb.String()))
	}
	checkPartitions(t, ts, ts.dial(), "py", 4)
}
