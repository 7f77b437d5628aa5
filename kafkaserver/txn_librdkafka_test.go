package kafkaserver_test

// librdkafka (C, not Go) as a transactional producer against the server:
// confluent-kafka-python (Debian's python3-confluent-kafka, over the
// system's librdkafka) runs init_transactions, then transactions over 3
// partitions, committed and aborted by a plan; kcat sends its whole input
// as one transaction (-X transactional.id), committed at the end of its
// input. Each is checked with the verifiers of internal/kafkatest (kgo
// consumers at both isolation levels, then the store), and kcat's own
// consumer (librdkafka reads read_committed by default) must read exactly
// the committed records.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/kafkatest"
)

// confluentPython returns a python3 that imports confluent_kafka, or
// skips the test: CI installs Debian's python3-confluent-kafka for
// /usr/bin/python3 (.ci/run).
func confluentPython(t *testing.T) string {
	t.Helper()
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		t.Skipf("%v (.ci/run installs it): skipping the librdkafka test", err)
	}
	return py
}

// txnProducerPy produces the transactions of its plan (argv: bootstrap,
// topic, transactional id, value prefix, records per transaction, then
// one "c" or "a" per transaction) with one transactional producer, and
// prints one JSON object per delivered record: value, partition, offset.
const txnProducerPy = `
import json, sys
from confluent_kafka import Producer, KafkaException

bootstrap, topic, tid, prefix, per = sys.argv[1:6]
plan = sys.argv[6:]
per = int(per)
p = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": tid,
    "acks": "all",
    "linger.ms": 5,
    "transaction.timeout.ms": 60000,
})
delivered = []
def on_delivery(err, msg):
    if err is not None:
        raise KafkaException(err)
    delivered.append({"value": msg.value().decode(), "partition": msg.partition(), "offset": msg.offset()})

p.init_transactions(30)
for t, decision in enumerate(plan):
    p.begin_transaction()
    for j in range(per):
        p.produce(topic, value="%s-t%06d-r%03d" % (prefix, t, j), partition=(t + j) % 3, on_delivery=on_delivery)
    p.flush(30)
    if decision == "c":
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
for d in delivered:
    print(json.dumps(d))
`

// delivered is one line of txnProducerPy's output.
type delivered struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// TestLibrdkafkaTransactions: confluent-kafka-python's transactional
// producer, 8 transactions of 6 records over 3 partitions, the 3rd and
// 6th aborted, the others committed.
func TestLibrdkafkaTransactions(t *testing.T) {
	py := confluentPython(t)
	dir := t.TempDir()
	addr, stop := kcatServer(t, dir)
	const topic = "librdkafka-txn"
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, []string{addr}, topic, 3, nil); err != nil {
		t.Fatal(err)
	}
	w := &kafkatest.TxnWorkload{Topic: topic, Transactions: 8, PerTxn: 6, Prefix: "rdk",
		Commit: func(i int) bool { return i != 2 && i != 5 }}
	res := &kafkatest.TxnResult{Topic: topic, Partitions: 3, Txns: w.Plan()}
	args := []string{"-c", txnProducerPy, addr, topic, "rdk-producer", "rdk", "6"}
	for _, tx := range res.Txns {
		if tx.Planned {
			args = append(args, "c")
		} else {
			args = append(args, "a")
		}
	}
	cmd := exec.CommandContext(ctx, py, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("the librdkafka producer: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	acked := map[string]delivered{}
	for line := range strings.Lines(out.String()) {
		var d delivered
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("the librdkafka producer printed %q: %v", line, err)
		}
		acked[d.Value] = d
	}
	for i := range res.Txns {
		tx := &res.Txns[i]
		tx.Outcome = kafkatest.TxnAborted
		if tx.Planned {
			tx.Outcome = kafkatest.TxnCommitted
		}
		for j := range tx.Records {
			a := &tx.Records[j]
			d, ok := acked[a.Value]
			if !ok {
				t.Fatalf("record %q: no delivery report", a.Value)
			}
			if d.Partition != a.Partition {
				t.Fatalf("record %q delivered to partition %d, produced to %d", a.Value, d.Partition, a.Partition)
			}
			a.Offset = d.Offset
		}
	}
	v, err := kafkatest.ConsumeTxnsAndVerify(ctx, []string{addr}, res)
	if err != nil {
		t.Fatal(err)
	}
	if v.Committed != 6 || v.Aborted != 2 {
		t.Fatalf("%d committed, %d aborted, want 6 and 2", v.Committed, v.Aborted)
	}
	kcatReadsCommitted(t, addr, topic, v)
	stop()
	if _, err := kafkatest.ScanTxnsAndVerify(dir, res, v); err != nil {
		t.Fatal(err)
	}
}

// kcatReadsCommitted consumes every partition of topic with kcat
// (librdkafka's default isolation.level is read_committed) when kcat is
// installed, and checks it reads exactly the values v has committed, at
// their offsets.
func kcatReadsCommitted(t *testing.T, addr, topic string, v *kafkatest.TxnVerdict) {
	t.Helper()
	path, err := kafkaclients.Kcat()
	if err != nil {
		t.Logf("%v: the librdkafka read_committed consumer is left out", err)
		return
	}
	out := kcat(t, path, "", "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%p|%o|%s\n`)
	var got, want []string
	for line := range strings.Lines(out) {
		got = append(got, strings.TrimSuffix(line, "\n"))
	}
	for val, d := range v.Decided {
		if d == kafkatest.Committed {
			e := v.Found[val]
			want = append(want, strconv.Itoa(int(e.Partition))+"|"+strconv.FormatInt(e.Offset, 10)+"|"+val)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("kcat read_committed read %d records, want the %d committed:\ngot  %q\nwant %q", len(got), len(want), got, want)
	}
}

// TestKcatTransaction: kcat -X transactional.id sends its input as one
// transaction, committed once the input ends: three runs, one per
// partition, 50 records each.
func TestKcatTransaction(t *testing.T) {
	path := kcatPath(t)
	dir := t.TempDir()
	addr, stop := kcatServer(t, dir)
	const topic, per = "kcat-txn", 50
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, []string{addr}, topic, 3, nil); err != nil {
		t.Fatal(err)
	}
	// A kcat run writes one partition: transaction p holds partition
	// p's records.
	res := &kafkatest.TxnResult{Topic: topic, Partitions: 3}
	for p := range int32(3) {
		tx := kafkatest.Txn{Index: int(p), TransactionalID: "kcat", Planned: true, Outcome: kafkatest.TxnCommitted}
		var in strings.Builder
		for j := range per {
			v := fmt.Sprintf("kcat-t%06d-r%03d", p, j)
			in.WriteString(v + "\n")
			tx.Records = append(tx.Records, kafkatest.Ack{Value: v, Partition: p, Offset: -1, ProducerID: -1, Epoch: -1})
		}
		res.Txns = append(res.Txns, tx)
		kcat(t, path, in.String(), "-P", "-b", addr, "-t", topic, "-p", strconv.Itoa(int(p)), "-X", "transactional.id=kcat-producer")
	}
	v, err := kafkatest.ConsumeTxnsAndVerify(ctx, []string{addr}, res)
	if err != nil {
		t.Fatal(err)
	}
	if v.Committed != 3 {
		t.Fatalf("%d transactions committed, want 3", v.Committed)
	}
	kcatReadsCommitted(t, addr, topic, v)
	stop()
	if _, err := kafkatest.ScanTxnsAndVerify(dir, res, v); err != nil {
		t.Fatal(err)
	}
}
