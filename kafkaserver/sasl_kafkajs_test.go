package kafkaserver

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/testutil"
)

// kafkajsSASLJS: over SASL_SSL (argv: bootstrap, CA file, mechanism,
// user, password, topic, count), an idempotent kafkajs producer sends
// count records and a group consumer reads them back, printing each
// value; a refused login exits 3 with kafkajs's error.
const kafkajsSASLJS = `
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const [bootstrap, ca, mechanism, username, password, topic, count] = process.argv.slice(1)
const n = parseInt(count, 10)
const kafka = new Kafka({ clientId: 'kafkajs-sasl', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  ssl: { ca: [fs.readFileSync(ca, 'utf-8')], servername: '127.0.0.1' },
  sasl: { mechanism, username, password }, retry: { retries: 2 } })
async function main() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  try {
    await producer.connect()
  } catch (e) {
    console.error(e.name + ': ' + e.message)
    process.exit(3)
  }
  const messages = []
  for (let i = 0; i < n; i++) messages.push({ value: 'v-' + i, partition: 0 })
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'sasl-js', maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let got = 0
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out with ' + got)), 60000)
    consumer.run({ eachMessage: async ({ message }) => {
      console.log(message.value.toString())
      if (++got >= n) { clearTimeout(timer); resolve() }
    } })
  })
  await consumer.disconnect()
}
main().catch(e => { console.error(e); process.exit(1) })
`

// TestKafkajsSASLSSL: kafkajs over SASL_SSL with SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN produces idempotently and consumes in a
// group; a wrong password is refused at connect.
func TestKafkajsSASLSSL(t *testing.T) {
	node, modules, _, err := kafkaclients.Kafkajs(filepath.Join(testutil.RepoDir(t), ".ci", "node", "node_modules"))
	if err != nil {
		t.Skipf("%v: skipping the kafkajs test", err)
	}
	dir := filepath.Dir(modules)
	ts, _ := startSASLServer(t)
	ts.createTopic("js-sasl", 1)
	addr, _, caFile := serveTLS(t, ts, ListenerConfig{SASL: true})
	run := func(mech, password string, n int) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "-e", kafkajsSASLJS, addr, caFile, mech, "alice", password, "js-sasl", fmt.Sprint(n))
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return stderr.String(), err
		}
		return string(out), nil
	}
	total := 0
	for _, mech := range []string{"scram-sha-256", "scram-sha-512", "plain"} {
		const n = 20
		out, err := run(mech, "pencil", n)
		if err != nil {
			t.Fatalf("%s: %v\n%s", mech, err, out)
		}
		total += n
		// The group reads on from its committed offsets: this round's
		// records, the earlier rounds' committed before.
		if got := len(strings.Fields(out)); got < n {
			t.Errorf("%s: read %d records, want %d", mech, got, n)
		}
	}
	out, err := run("scram-sha-512", "wrong", 1)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(out, "SASL") {
		t.Errorf("a wrong password: %v\n%s", err, out)
	}
	part, err := ts.store.Partition("js-sasl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := part.DurableEnd(); got != int64(total) {
		t.Errorf("%d records in the log, want %d", got, total)
	}
}
