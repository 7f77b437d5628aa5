package kafkaserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// groupConsumersPy runs three confluent-kafka consumers in one group
// (argv: bootstrap, topic, group, records expected), polling each in
// turn until the group has consumed that many records, committing each
// member's offsets synchronously after every record it processed, then
// closes them (LeaveGroup). It prints one JSON object per record:
// member, value, partition, offset; and one per member: its assignment.
const groupConsumersPy = `
import json, sys, time
from confluent_kafka import Consumer, KafkaException

bootstrap, topic, group, want = sys.argv[1:5]
want = int(want)
members = []
for i in range(3):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": "py-%d" % i,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
    })
    c.subscribe([topic])
    members.append(c)
got = 0
deadline = time.time() + 90
while got < want and time.time() < deadline:
    for i, c in enumerate(members):
        msg = c.poll(0.1)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        print(json.dumps({"member": i, "value": msg.value().decode(), "partition": msg.partition(), "offset": msg.offset()}))
        c.commit(message=msg, asynchronous=False)
        got += 1
for i, c in enumerate(members):
    print(json.dumps({"member": i, "assignment": sorted(tp.partition for tp in c.assignment())}))
for c in members:
    c.close()
`

// TestLibrdkafkaGroupConsumers: three confluent-kafka-python consumers
// (librdkafka's classic group protocol) share a topic's six partitions
// in one group, every record is consumed once, and their synchronous
// commits are the group's committed offsets.
func TestLibrdkafkaGroupConsumers(t *testing.T) {
	py := confluentPython(t)
	const n = 300
	s := newGroupServer(t, "py", n)
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", groupConsumersPy, s.addr, "py", "pygroup", fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	seen := map[string]int{}
	byMember := map[int]int{}
	var assigned []int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Member     int
			Value      string
			Assignment []int
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if r.Value != "" {
			seen[r.Value]++
			byMember[r.Member]++
			continue
		}
		assigned = append(assigned, r.Assignment...)
	}
	for i := range n {
		if v := fmt.Sprintf("v-%d", i); seen[v] != 1 {
			t.Fatalf("%s consumed %d times", v, seen[v])
		}
	}
	if len(assigned) != 6 {
		t.Fatalf("the three members were assigned %v, want the six partitions once", assigned)
	}
	committed := fetchCommitted(t, s.addr, "pygroup")
	var sum int64
	for _, o := range committed {
		sum += o
	}
	if sum != n {
		t.Fatalf("committed %v sum to %d, want %d", committed, sum, n)
	}
	t.Logf("records per member: %v", byMember)
}
