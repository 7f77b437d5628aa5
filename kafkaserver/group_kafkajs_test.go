package kafkaserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/testutil"
)

// kafkajsDir is the directory whose node_modules holds kafkajs (.ci/run
// installs the pinned version into .ci/node), or skips the test.
func kafkajsDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, modules, _, err := kafkaclients.Kafkajs(filepath.Join(testutil.RepoDir(t), ".ci", "node", "node_modules"))
	if err != nil {
		t.Skipf("%v: skipping the kafkajs test", err)
	}
	return node, filepath.Dir(modules)
}

// kafkajsGroupJS: three kafkajs consumers of one group (its only kind
// of consumer) join until they share the six partitions; then an
// idempotent kafkajs producer sends argv's count of records with
// explicit partitions, the consumers consume until they have them all
// and disconnect (committing, and leaving the group). One JSON line per
// record consumed: member, value, partition; timings on stderr.
const kafkajsGroupJS = `
const { Kafka, logLevel } = require('kafkajs')
const [bootstrap, topic, group, count] = process.argv.slice(1) // node -e: no script path
const n = parseInt(count, 10)
const kafka = new Kafka({ clientId: 'kafkajs-test', brokers: [bootstrap], logLevel: logLevel.NOTHING })
async function main() {
  const t0 = Date.now()
  const log = (what) => console.error((Date.now() - t0) + 'ms ' + what)
  let got = 0
  let done
  const all = new Promise(r => { done = r })
  const consumers = []
  const assigned = [0, 0, 0]
  let joined
  const allJoined = new Promise(r => { joined = r })
  for (let m = 0; m < 3; m++) {
    const c = kafka.consumer({ groupId: group, heartbeatInterval: 200, sessionTimeout: 6000, rebalanceTimeout: 10000, maxWaitTimeInMs: 200 })
    c.on(c.events.GROUP_JOIN, e => {
      const a = e.payload.memberAssignment[topic] || []
      assigned[m] = a.length
      log('member ' + m + ' joined with ' + a.length + ' partitions')
      if (assigned.every(x => x > 0) && assigned.reduce((x, y) => x + y) === 6) joined()
    })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ partition, message }) => {
      console.log(JSON.stringify({ member: m, value: message.value.toString(), partition }))
      if (++got >= n) done()
    } })
    consumers.push(c)
  }
  const timer = setTimeout(() => { console.error('timed out with ' + got + ' of ' + n + ', assigned ' + assigned); process.exit(2) }, 90000)
  await allJoined
  log('three members share the partitions')
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (let i = 0; i < n; i += 50) {
    const messages = []
    for (let j = i; j < Math.min(n, i + 50); j++) messages.push({ value: 'v-' + j, partition: j % 6 })
    await producer.send({ topic, acks: -1, messages })
  }
  await producer.disconnect()
  log('produced')
  await all
  log('consumed')
  clearTimeout(timer)
  for (const c of consumers) await c.disconnect()
  log('disconnected')
}
main().catch(e => { console.error(e); process.exit(1) })
`

// TestKafkajsGroupConsumers: kafkajs (a client not built on librdkafka
// or franz-go: JoinGroup 5, SyncGroup 3, Heartbeat 3, OffsetFetch 4,
// OffsetCommit 5, LeaveGroup 3 per the protocol reference) produces
// idempotently and consumes in a group of three; every record once, and
// the group's committed offsets are the partition ends.
func TestKafkajsGroupConsumers(t *testing.T) {
	node, dir := kafkajsDir(t)
	s := newInProcess(t, logstore.Options{}, groupServerConfig())
	createTopic6(t, s.addr, "js")
	const n = 300
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "-e", kafkajsGroupJS, s.addr, "js", "jsgroup", fmt.Sprint(n))
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("kafkajs:\n%s", stderr.String())
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	seen := map[string]int{}
	members := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Member int
			Value  string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seen[r.Value]++
		members[r.Member] = true
	}
	for i := range n {
		if v := fmt.Sprintf("v-%d", i); seen[v] == 0 {
			t.Fatalf("%s never consumed (%d distinct)", v, len(seen))
		}
	}
	committed := fetchCommitted(t, s.addr, "jsgroup")
	var sum int64
	for _, o := range committed {
		sum += o
	}
	if sum != n {
		t.Fatalf("committed %v sum to %d, want %d", committed, sum, n)
	}
	if len(members) != 3 {
		t.Fatalf("members that consumed: %v, want all three", members)
	}
}
