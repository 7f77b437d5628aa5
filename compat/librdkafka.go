package main

// librdkafka's clients: confluent-kafka-python (Debian's
// python3-confluent-kafka, for /usr/bin/python3) through the driver
// compat/clients/confluent_kafka.py, and kcat (Debian's kcat) run
// directly. Both negotiate request versions with ApiVersions: one row,
// "default".

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafkaclients"
	"github.com/logstore/logstore/internal/kafkatest"
)

//go:embed clients/confluent_kafka.py
var confluentDriver string

const (
	confluentClient = "confluent-kafka-python (librdkafka)"
	kcatClient      = "kcat (librdkafka)"
	// The client ids of the clients under test, which the report's
	// request versions are listed by.
	confluentClientID = "compat-confluent"
	kcatClientID      = "compat-kcat"
)

// Record counts of the librdkafka cells.
const (
	rdkRecords     = 200
	rdkIdemRecords = 300
	rdkTxns        = 6
	rdkPerTxn      = 10
	rdkGroupParts  = 4
)

// rdkConfig are the librdkafka settings of every client under test:
// short reconnect and retry backoffs (librdkafka's reconnect backoff
// grows to 10 s by default, which the proxy's closed connections would
// make the cells wait for), and the client id.
func rdkConfig(clientID string) map[string]any {
	return map[string]any{
		"client.id":                clientID,
		"reconnect.backoff.ms":     10,
		"reconnect.backoff.max.ms": 100,
		"retry.backoff.ms":         20,
	}
}

func init() {
	confluent := ClientInfo{Name: confluentClient, Version: "not installed", Source: "Debian package python3-confluent-kafka (over Debian's librdkafka)",
		Note: "versions column: default, librdkafka picks each request's version from the server's ApiVersions answer"}
	if py, err := kafkaclients.ConfluentPython(); err == nil {
		out, err := exec.Command(py, "-c", "import confluent_kafka as c; print('confluent-kafka %s, librdkafka %s' % (c.version()[0], c.libversion()[0]))").Output()
		if err == nil {
			confluent.Version = strings.TrimSpace(string(out))
		}
	}
	kcat := ClientInfo{Name: kcatClient, Version: "not installed", Source: "Debian package kcat",
		Note: "versions column: default, librdkafka picks each request's version from the server's ApiVersions answer"}
	if path, err := kafkaclients.Kcat(); err == nil {
		out, _ := exec.Command(path, "-V").CombinedOutput()
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "Version ") {
				v, _, _ := strings.Cut(strings.TrimPrefix(line, "Version "), " (")
				kcat.Version = "kcat " + strings.TrimSpace(v)
				if _, lib, ok := strings.Cut(line, "librdkafka "); ok {
					kcat.Version += ", librdkafka " + strings.Fields(lib)[0]
				}
			}
		}
	}
	clientInfos = append(clientInfos, confluent, kcat)
	cellSets = append(cellSets, confluentCells, confluentAdminCells, kcatCells)
}

// codecs are the codec features with librdkafka's names for them.
var codecs = []struct{ feature, name string }{
	{FeatureGzip, "gzip"}, {FeatureSnappy, "snappy"}, {FeatureLZ4, "lz4"}, {FeatureZstd, "zstd"},
}

func confluentCells() []Cell {
	var cells []Cell
	add := func(feature string, run func(context.Context, *Env) Result) {
		cells = append(cells, Cell{Client: confluentClient, Version: "default", Feature: feature, ClientID: confluentClientID,
			Run: func(ctx context.Context, e *Env) Result {
				if _, err := kafkaclients.ConfluentPython(); err != nil {
					return unavailable("%v", err)
				}
				return run(ctx, e)
			}})
	}
	add(FeatureProduce, confluentProduce)
	add(FeatureIdempotent, confluentIdempotent)
	add(FeatureTransactions, confluentTransactions)
	add(FeatureReadCommitted, confluentReadCommitted)
	add(FeatureGroups, confluentGroups)
	for _, c := range codecs {
		add(c.feature, func(ctx context.Context, e *Env) Result { return confluentCodec(ctx, e, c.name) })
	}
	return cells
}

// runConfluent runs the driver's mode with args (bootstrap, unless args
// name one, seconds and the common librdkafka settings added; args'
// "config" over them).
func runConfluent(ctx context.Context, e *Env, mode string, args map[string]any) (*driverRun, error) {
	py, err := kafkaclients.ConfluentPython()
	if err != nil {
		return nil, err
	}
	conf := rdkConfig(confluentClientID)
	if extra, ok := args["config"].(map[string]any); ok {
		for k, v := range extra {
			conf[k] = v
		}
	}
	args["config"] = conf
	if args["bootstrap"] == nil {
		args["bootstrap"] = e.Bootstrap[0]
	}
	args["seconds"] = driverSeconds(ctx)
	js, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	// -c: run from the embedded text, so that the driver's file name
	// (the module's) shadows nothing.
	return runDriver(ctx, "confluent_kafka.py "+mode, e.Tmp, nil, "", py, "-c", confluentDriver, mode, string(js))
}

// confluentProduceRecords produces res's records with the driver and
// takes its delivery reports into res.
func confluentProduceRecords(ctx context.Context, e *Env, res *kafkatest.Result, config map[string]any) error {
	run, err := runConfluent(ctx, e, "produce", map[string]any{"topic": res.Topic, "records": specs(res.Records), "config": config})
	if err != nil {
		return err
	}
	return applyAcks(res, run.Lines)
}

// confluentRead reads topic from its start to its end with the driver.
func confluentRead(ctx context.Context, e *Env, topic string, partitions int32, config map[string]any) ([]kafkatest.Found, error) {
	run, err := runConfluent(ctx, e, "consume", map[string]any{"topic": topic, "partitions": partitions, "config": config})
	if err != nil {
		return nil, err
	}
	return foundOf(run.Lines), nil
}

// confluentProduce: a plain producer (librdkafka's default: not
// idempotent), acks=all, read back by the driver's consumer.
func confluentProduce(ctx context.Context, e *Env) Result {
	if err := e.CreateTopic(ctx, "plain", 3); err != nil {
		return fail("%v", err)
	}
	res := newResult("plain", 3, rdkRecords, "py")
	if err := confluentProduceRecords(ctx, e, res, map[string]any{"enable.idempotence": false}); err != nil {
		return fail("%v", err)
	}
	read, err := confluentRead(ctx, e, res.Topic, res.Partitions, nil)
	if err != nil {
		return fail("%v", err)
	}
	return checkProducedOnce(e, res, read, "its consumer")
}

// confluentIdempotent: enable.idempotence through the standard faults,
// batches of at most 10 records, then VerifyProduce.
func confluentIdempotent(ctx context.Context, e *Env) Result {
	if err := e.CreateTopic(ctx, "idem", 3); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	res := newResult("idem", 3, rdkIdemRecords, "py")
	if err := confluentProduceRecords(ctx, e, res, map[string]any{"enable.idempotence": true, "linger.ms": 0, "batch.num.messages": 10}); err != nil {
		return fail("%v (%s)", err, e.faultText())
	}
	return verdict(e.VerifyProduce(ctx, res))
}

// confluentTransactions: the transactional producer (init_transactions,
// then transactions alternating commit and abort, each flushed before it
// ends) through the standard faults; then VerifyTxn.
func confluentTransactions(ctx context.Context, e *Env) Result {
	if err := e.CreateTopic(ctx, "txn", txnPartitions); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	res := newTxnResult("txn", txnPartitions, rdkTxns, rdkPerTxn, "py")
	run, err := runConfluent(ctx, e, "txn", map[string]any{"topic": res.Topic, "tid": "compat-confluent-txn", "txns": txnSpecs(res),
		"config": map[string]any{"batch.num.messages": 5}})
	if err != nil {
		return fail("%v (%s)", err, e.faultText())
	}
	if err := applyTxnLines(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	return verdict(e.VerifyTxn(ctx, res))
}

// confluentReadCommitted: the driver's consumer at
// isolation.level=read_committed reads kgo's log of committed and
// aborted transactions to its end.
func confluentReadCommitted(ctx context.Context, e *Env) Result {
	res, err := e.WriteTxnLog(ctx, "rc", txnPartitions, rcTxns)
	if err != nil {
		return fail("%v", err)
	}
	read, err := confluentRead(ctx, e, res.Topic, res.Partitions, map[string]any{"isolation.level": "read_committed"})
	if err != nil {
		return fail("%v", err)
	}
	return verdict(e.CheckReadCommitted(res, read))
}

// confluentGroups: two consumers of one group (subscribe, manual
// synchronous commits of every record) share the topic's partitions; the
// driver's producer produces half the records and the members read them;
// member 2 closes (leaving the group), member 1 takes its partitions
// over and reads the other half; then checkHandover (no record read
// twice).
func confluentGroups(ctx context.Context, e *Env) Result {
	const group = "compat-confluent"
	if err := e.CreateTopic(ctx, "grp", rdkGroupParts); err != nil {
		return fail("%v", err)
	}
	res := newResult("grp", rdkGroupParts, rdkRecords, "py")
	run, err := runConfluent(ctx, e, "group", map[string]any{"topic": res.Topic, "partitions": res.Partitions, "group": group,
		"records": specs(res.Records)})
	if err != nil {
		return fail("%v", err)
	}
	if err := applyAcks(res, run.Lines); err != nil {
		return fail("%v", err)
	}
	return checkHandover(ctx, e, group, res, membersOf(run.Lines, 2), " (manual synchronous commits of each record)")
}

// confluentCodec: a plain producer with compression.type, batches of up
// to 20 records, read back by the driver's consumer; the store's batches
// must carry the codec.
func confluentCodec(ctx context.Context, e *Env, codec string) Result {
	topic := "codec-" + codec
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return fail("%v", err)
	}
	res := newResult(topic, 3, rdkRecords, "py")
	if err := confluentProduceRecords(ctx, e, res, map[string]any{"compression.type": codec, "batch.num.messages": 20}); err != nil {
		return fail("%v", err)
	}
	read, err := confluentRead(ctx, e, res.Topic, res.Partitions, nil)
	if err != nil {
		return fail("%v", err)
	}
	return checkReadBack(e, res, read, codec, "its consumer")
}

func kcatCells() []Cell {
	var cells []Cell
	add := func(feature string, run func(context.Context, *Env, string) Result) {
		cells = append(cells, Cell{Client: kcatClient, Version: "default", Feature: feature, ClientID: kcatClientID,
			Run: func(ctx context.Context, e *Env) Result {
				path, err := kafkaclients.Kcat()
				if err != nil {
					return unavailable("%v", err)
				}
				return run(ctx, e, path)
			}})
	}
	add(FeatureProduce, func(ctx context.Context, e *Env, kcat string) Result { return kcatProduce(ctx, e, kcat, false) })
	add(FeatureIdempotent, func(ctx context.Context, e *Env, kcat string) Result { return kcatProduce(ctx, e, kcat, true) })
	add(FeatureTransactions, kcatTransactions)
	add(FeatureReadCommitted, kcatReadCommitted)
	add(FeatureGroups, kcatGroups)
	for _, c := range codecs {
		add(c.feature, func(ctx context.Context, e *Env, kcat string) Result { return kcatCodec(ctx, e, kcat, c.name) })
	}
	return cells
}

// kcatArgs are the -X settings of every kcat run (rdkConfig), then the
// extra ones.
func kcatArgs(extra ...string) []string {
	var args []string
	for k, v := range rdkConfig(kcatClientID) {
		args = append(args, "-X", fmt.Sprintf("%s=%v", k, v))
	}
	for _, x := range extra {
		args = append(args, "-X", x)
	}
	return args
}

// kcatSend produces res's records with one kcat -P run per partition
// (kcat writes a run's input to the partition -p names), with the extra
// -X settings; -E keeps kcat going when the proxy closes its one
// connection (which librdkafka reports as all brokers down). kcat prints
// no delivery reports: a run that exits 0 and reports no failed delivery
// has had every record delivered, and as each partition is written by one
// run into a new topic, the j-th record of partition p was acknowledged
// at offset j. The cells check those offsets against the log.
func kcatSend(ctx context.Context, e *Env, kcat string, res *kafkatest.Result, extra ...string) error {
	return kcatSendTo(ctx, e, kcat, e.Bootstrap[0], res, extra...)
}

// kcatSendTo is kcatSend to the broker.
func kcatSendTo(ctx context.Context, e *Env, kcat, broker string, res *kafkatest.Result, extra ...string) error {
	byPart := make([][]int, res.Partitions)
	for i, a := range res.Records {
		byPart[a.Partition] = append(byPart[a.Partition], i)
	}
	for p, idx := range byPart {
		var in strings.Builder
		for _, i := range idx {
			in.WriteString(res.Records[i].Value + "\n")
		}
		args := append([]string{"-P", "-E", "-b", broker, "-t", res.Topic, "-p", strconv.Itoa(p), "-m", "30"}, kcatArgs(extra...)...)
		run, err := runDriver(ctx, fmt.Sprintf("kcat -P -p %d", p), e.Tmp, nil, in.String(), kcat, args...)
		if err != nil {
			return err
		}
		// A connection the proxy closes is reported (-E: and survived);
		// a record kcat gave up on is not acknowledged.
		if s := run.Stderr; strings.Contains(s, "Delivery failed") || strings.Contains(s, "Failed to produce") {
			return fmt.Errorf("kcat -P -p %d exited 0 but reports: %s", p, tail(s, 800))
		}
		for j, i := range idx {
			res.Records[i].Offset, res.Records[i].Err = int64(j), nil
		}
	}
	res.Acked, res.Err = 0, nil
	for _, a := range res.Records {
		if a.Err == nil {
			res.Acked++
		}
	}
	return nil
}

// kcatCommand is kcat with args, run in the cell's scratch directory
// and killed when ctx ends; its stderr goes to the returned builder,
// for the tail an error shows.
func kcatCommand(ctx context.Context, e *Env, kcat string, args ...string) (*exec.Cmd, *strings.Builder) {
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Dir = e.Tmp
	cmd.WaitDelay = driverWaitDelay
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	return cmd, stderr
}

// kcatRead reads topic from its start to its end (-e: each partition's
// end, the last stable offset at read_committed) with kcat -C -J.
func kcatRead(ctx context.Context, e *Env, kcat, topic string, extra ...string) ([]kafkatest.Found, error) {
	args := append([]string{"-C", "-E", "-b", e.Bootstrap[0], "-t", topic, "-o", "beginning", "-e", "-q", "-J", "-m", "30"}, kcatArgs(extra...)...)
	cmd, stderr := kcatCommand(ctx, e, kcat, args...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kcat -C: %w; stderr: %s", err, tail(stderr.String(), 800))
	}
	found, err := parseKcatJSON(out, nil)
	if err != nil {
		return nil, fmt.Errorf("kcat -C: %w", err)
	}
	return found, nil
}

// kcatRecord is a record of kcat -J.
type kcatRecord struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Payload   *string `json:"payload"`
}

// parseKcatJSON parses kcat -J's lines; fn, when set, is called with
// each record.
func parseKcatJSON(out []byte, fn func(kafkatest.Found)) ([]kafkatest.Found, error) {
	var found []kafkatest.Found
	for line := range strings.Lines(string(out)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r kcatRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("line %q: %w", tail(line, 200), err)
		}
		f := kafkatest.Found{Partition: r.Partition, Offset: r.Offset, Sequence: -1}
		if r.Payload != nil {
			f.Value = *r.Payload
		}
		found = append(found, f)
		if fn != nil {
			fn(f)
		}
	}
	return found, nil
}

// kcatProduce: kcat -P (plain, or -X enable.idempotence=true through the
// standard faults with batches of at most 10 records), read back by
// kcat -C (plain), or checked by VerifyProduce (idempotent).
func kcatProduce(ctx context.Context, e *Env, kcat string, idempotent bool) Result {
	topic, n := "plain", rdkRecords
	if idempotent {
		topic, n = "idem", rdkIdemRecords
	}
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return fail("%v", err)
	}
	res := newResult(topic, 3, n, "kcat")
	if !idempotent {
		if err := kcatSend(ctx, e, kcat, res); err != nil {
			return fail("%v", err)
		}
		read, err := kcatRead(ctx, e, kcat, topic)
		if err != nil {
			return fail("%v", err)
		}
		return checkProducedOnce(e, res, read, "kcat -C")
	}
	e.Faults()
	if err := kcatSend(ctx, e, kcat, res, "enable.idempotence=true", "linger.ms=0", "batch.num.messages=10"); err != nil {
		return fail("%v (%s)", err, e.faultText())
	}
	detail, err := e.VerifyProduce(ctx, res)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s (one kcat run per partition; offsets as their order implies, kcat prints none)", detail)
}

// kcatTransactions: kcat -X transactional.id sends its whole input as
// one transaction, committed when the input ends. Its help says an
// interrupted run aborts the transaction; measured, kcat 1.7.1 exits 1
// ("Program terminated while producing message") and leaves it open,
// and the next run with the same transactional id aborts it
// (InitProducerId fences the open epoch, as Kafka's coordinator does).
// Three runs of the same transactional id, one per partition, through
// the standard faults: the first commits; the second is interrupted
// once its records are in the log (its input is larger than what kcat
// reads at once, so it sends before its input ends); the third commits,
// and its start aborts the second's. Then VerifyTxn.
func kcatTransactions(ctx context.Context, e *Env, kcat string) Result {
	const tid, perTxn, interruptedRecords = "compat-kcat-txn", 40, 3000
	if err := e.CreateTopic(ctx, "txn", txnPartitions); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	res := &kafkatest.TxnResult{Topic: "txn", Partitions: txnPartitions}
	args := func(p int32) []string {
		return append([]string{"-P", "-E", "-b", e.Bootstrap[0], "-t", res.Topic, "-p", strconv.Itoa(int(p)), "-m", "30"},
			kcatArgs("transactional.id="+tid, "linger.ms=0", "batch.num.messages=5")...)
	}
	interrupted := ""
	for p := range int32(txnPartitions) {
		commit := txnPlan(int(p))
		tx := kafkatest.Txn{Index: int(p), TransactionalID: tid, Planned: commit, Outcome: kafkatest.TxnCommitted}
		n := perTxn
		if !commit {
			n, tx.Outcome = interruptedRecords, kafkatest.TxnAborted
		}
		var in strings.Builder
		for j := range n {
			v := fmt.Sprintf("kcat-t%06d-r%04d-%s", p, j, strings.Repeat("x", 24))
			in.WriteString(v + "\n")
			tx.Records = append(tx.Records, kafkatest.Ack{Value: v, Partition: p, Offset: -1, ProducerID: -1, Epoch: -1})
		}
		res.Txns = append(res.Txns, tx)
		if !commit {
			detail, err := kcatInterrupt(ctx, e, kcat, in.String(), res.Topic, p, args(p))
			if err != nil {
				return fail("transaction %d: %v (%s)", p, err, e.faultText())
			}
			interrupted = detail
			res.Aborted++
			continue
		}
		run, err := runDriver(ctx, "kcat -P -X transactional.id", e.Tmp, nil, in.String(), kcat, args(p)...)
		if err != nil {
			return fail("transaction %d: %v (%s)", p, err, e.faultText())
		}
		if !strings.Contains(run.Stderr, "Transaction successfully committed") {
			return fail("transaction %d: kcat exited 0 without saying it committed: %s", p, tail(run.Stderr, 800))
		}
		res.Committed++
	}
	detail, err := e.VerifyTxn(ctx, res)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s; %s", detail, interrupted)
}

// interruptAfter is how many records of the interrupted kcat run must
// be in the log before it is interrupted.
const interruptAfter = 100

// kcatInterrupt runs kcat with args and input, interrupts it (SIGINT,
// then its input closed) once partition p's high watermark shows it has
// sent interruptAfter records, and says what it measured.
func kcatInterrupt(ctx context.Context, e *Env, kcat, input, topic string, p int32, args []string) (string, error) {
	cmd, stderr := kcatCommand(ctx, e, kcat, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer cmd.Process.Kill()
	go io.WriteString(stdin, input) // kcat reads it as it can; the pipe stays open
	var hw int64
	err = waitUntil(ctx, func() bool {
		ends, err := kafkatest.ListOffsetsAt(ctx, e.Bootstrap, topic, txnPartitions, 0)
		if err == nil {
			hw = ends[p]
		}
		return hw >= interruptAfter
	})
	if err != nil {
		return "", fmt.Errorf("kcat sent nothing before its input ended: %w; stderr: %s", err, tail(stderr.String(), 400))
	}
	cmd.Process.Signal(syscall.SIGINT)
	stdin.Close()
	werr := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
	case werr != nil:
		return "", werr
	}
	// Still open (the last stable offset below the high watermark), or
	// aborted by kcat itself.
	hws, err := kafkatest.ListOffsetsAt(ctx, e.Bootstrap, topic, txnPartitions, 0)
	if err != nil {
		return "", err
	}
	lsos, err := kafkatest.ListOffsetsAt(ctx, e.Bootstrap, topic, txnPartitions, 1)
	if err != nil {
		return "", err
	}
	left := "aborted it itself"
	if lsos[p] < hws[p] {
		left = fmt.Sprintf("left it open (last stable offset %d, high watermark %d), and the next run's init_transactions aborted it", lsos[p], hws[p])
	}
	said := ""
	for line := range strings.Lines(stderr.String()) {
		if strings.Contains(line, "ERROR") {
			said = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "% ERROR:"))
		}
	}
	return fmt.Sprintf("the interrupted run (SIGINT once %d of its records were in the log) exited %d (%q) and %s",
		hw, code, said, left), nil
}

// kcatReadCommitted: kcat -C -X isolation.level=read_committed reads
// kgo's log of committed and aborted transactions to its end.
func kcatReadCommitted(ctx context.Context, e *Env, kcat string) Result {
	res, err := e.WriteTxnLog(ctx, "rc", txnPartitions, rcTxns)
	if err != nil {
		return fail("%v", err)
	}
	read, err := kcatRead(ctx, e, kcat, res.Topic, "isolation.level=read_committed")
	if err != nil {
		return fail("%v", err)
	}
	return verdict(e.CheckReadCommitted(res, read))
}

// kcatMember is a kcat -G process.
type kcatMember struct {
	n    int
	cmd  *exec.Cmd
	read []kafkatest.Found // under the group's mutex
	done chan struct{}     // closed when the process has exited
	errb *strings.Builder
	// leaving is set before leave interrupts the process: its exit is
	// then leave's to report (exitErr), not a failure of the member.
	leaving atomic.Bool
	exitErr error
}

// startKcatMember starts member n of group, which adds what it reads to
// read and values (under mu), and its failures to errs.
func startKcatMember(ctx context.Context, e *Env, kcat string, n int, group, topic string, mu *sync.Mutex, values map[string]bool, errs *[]error) (*kcatMember, error) {
	args := append([]string{"-b", e.Bootstrap[0], "-G", group, "-q", "-u", "-J", "-m", "30"},
		kcatArgs("auto.offset.reset=earliest", "enable.auto.commit=true", "auto.commit.interval.ms=100",
			"session.timeout.ms=6000", "heartbeat.interval.ms=200")...)
	m := &kcatMember{n: n, done: make(chan struct{})}
	m.cmd, m.errb = kcatCommand(ctx, e, kcat, append(args, topic)...)
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("kcat -G: %w", err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, perr := parseKcatJSON(sc.Bytes(), func(f kafkatest.Found) {
				mu.Lock()
				m.read = append(m.read, f)
				values[f.Value] = true
				mu.Unlock()
			})
			if perr != nil {
				mu.Lock()
				*errs = append(*errs, fmt.Errorf("member %d: %w", n, perr))
				mu.Unlock()
			}
		}
		io.Copy(io.Discard, stdout)
		err := m.cmd.Wait()
		if m.leaving.Load() {
			m.exitErr = err
			return
		}
		mu.Lock()
		*errs = append(*errs, fmt.Errorf("member %d: kcat -G exited: %v; stderr: %s", n, err, tail(m.errb.String(), 400)))
		mu.Unlock()
	}()
	return m, nil
}

// leave interrupts the member (SIGINT: kcat closes its consumer, which
// commits the offsets of what it read and leaves the group) and waits
// until it has exited.
func (m *kcatMember) leave(ctx context.Context) error {
	m.leaving.Store(true)
	m.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-m.done:
	case <-ctx.Done():
		m.cmd.Process.Kill()
		return fmt.Errorf("member %d: kcat -G still running after SIGINT: %w", m.n, ctx.Err())
	}
	if m.exitErr != nil {
		return fmt.Errorf("member %d: kcat -G exited after SIGINT: %w; stderr: %s", m.n, m.exitErr, tail(m.errb.String(), 400))
	}
	return nil
}

// kcatGroups: two kcat -G members of one group (auto commit every
// 100 ms) join; once they share the topic's partitions (DescribeGroups),
// kgo produces half the records and the members read them; member 2 is
// interrupted (SIGINT: kcat closes its consumer, committing and leaving
// the group) and member 1 takes its partitions over and reads the other
// half; then checkHandover (no record read twice).
func kcatGroups(ctx context.Context, e *Env, kcat string) Result {
	const group, topic = "compat-kcat", "grp"
	if err := e.CreateTopic(ctx, topic, rdkGroupParts); err != nil {
		return fail("%v", err)
	}
	var (
		mu     sync.Mutex
		values = map[string]bool{}
		errs   []error
	)
	members := make([]*kcatMember, 2)
	for i := range members {
		m, err := startKcatMember(ctx, e, kcat, i+1, group, topic, &mu, values, &errs)
		if err != nil {
			return fail("%v", err)
		}
		members[i] = m
		defer m.cmd.Process.Kill()
	}
	shared := func(n int) error {
		var shareErr error
		err := waitUntil(ctx, func() bool {
			mu.Lock()
			shareErr = errors.Join(errs...)
			mu.Unlock()
			if shareErr != nil {
				return true
			}
			ok, err := groupShared(ctx, e, group, topic, rdkGroupParts, n)
			shareErr = err
			return ok || err != nil
		})
		return errors.Join(err, shareErr)
	}
	if err := shared(2); err != nil {
		return fail("the two kcat members never shared the %d partitions: %v", rdkGroupParts, err)
	}
	res, err := groupHandover(ctx, e, topic, rdkGroupParts, rdkRecords, &mu, values, &errs, func() error {
		if err := members[1].leave(ctx); err != nil {
			return err
		}
		return shared(1)
	})
	if err != nil {
		return fail("%v", err)
	}
	if err := members[0].leave(ctx); err != nil {
		return fail("%v", err)
	}
	mu.Lock()
	read := [][]kafkatest.Found{members[0].read, members[1].read}
	mu.Unlock()
	return checkHandover(ctx, e, group, res, read, " (two kcat -G processes, auto commit every 100 ms and on close; produced by kgo)")
}

// groupShared says whether group is stable with members members, each
// assigned some of topic's partitions and all of them assigned
// (DescribeGroups).
func groupShared(ctx context.Context, e *Env, group, topic string, partitions int32, members int) (bool, error) {
	cl, err := kgo.NewClient(kafkatest.ClientOpts(e.Bootstrap...)...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, fmt.Errorf("describe group %s: %w", group, err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].State != "Stable" || len(resp.Groups[0].Members) != members {
		return false, nil
	}
	held := map[int32]int{}
	for _, m := range resp.Groups[0].Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			return false, fmt.Errorf("describe group %s: member %s's assignment: %w", group, m.MemberID, err)
		}
		n := 0
		for _, t := range a.Topics {
			if t.Topic == topic {
				for _, p := range t.Partitions {
					held[p]++
					n++
				}
			}
		}
		if n == 0 {
			return false, nil
		}
	}
	return len(held) == int(partitions), nil
}

// kcatCodec: kcat -P -X compression.codec (one run per partition),
// read back by kcat -C; the store's batches must carry the codec.
func kcatCodec(ctx context.Context, e *Env, kcat, codec string) Result {
	topic := "codec-" + codec
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return fail("%v", err)
	}
	res := newResult(topic, 3, rdkRecords, "kcat")
	if err := kcatSend(ctx, e, kcat, res, "compression.codec="+codec, "batch.num.messages=20"); err != nil {
		return fail("%v", err)
	}
	read, err := kcatRead(ctx, e, kcat, topic)
	if err != nil {
		return fail("%v", err)
	}
	return checkReadBack(e, res, read, codec, "kcat -C")
}

// confluentAdminCells: AdminClient of confluent-kafka-python 1.7.0.
func confluentAdminCells() []Cell {
	run := func(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
		r, err := runConfluent(ctx, e, "admin", args)
		if err != nil {
			return nil, err
		}
		return adminResult(r)
	}
	ops := driverAdminOps(run,
		featureSet(FeatureCreateTopics, FeatureDeleteTopics, FeatureDescribeConfigs, FeatureAlterConfigs, FeatureCreatePartitions, FeatureDescribeCluster),
		map[string]string{
			FeatureIncrementalAlter: "AdminClient of confluent-kafka 1.7 has no incremental_alter_configs",
			FeatureDeleteRecords:    "AdminClient of confluent-kafka 1.7 has no delete_records",
			FeatureDescribeLogDirs:  "AdminClient of confluent-kafka 1.7 has no call that describes log dirs",
		},
		map[string]string{FeatureDescribeCluster: "AdminClient 1.7 has no describe_cluster: list_topics' ClusterMetadata, from Metadata"})
	return adminCells(confluentClient, "default", confluentClientID, ops, func(context.Context, *Env) *Result {
		if _, err := kafkaclients.ConfluentPython(); err != nil {
			r := unavailable("%v", err)
			return &r
		}
		return nil
	})
}
