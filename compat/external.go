package main

// The clients that are not Go (kcat, confluent-kafka-python, kafkajs) run
// as child processes. Their drivers (compat/clients) print one JSON
// object per line on stdout: a delivery report (value, partition,
// offset, error), a record read (partition, offset, value, and member in
// a group), a transaction's end (txn, outcome, error) or a member's
// assignment (member, assignment). This file runs a driver with a bound
// and turns its lines into kafkatest's types, so that the cells check
// them with the same checkers as the Go clients.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/logstore/logstore/internal/kafkatest"
)

// driverWaitDelay is how long a killed driver's output may take to
// close (exec.Cmd.WaitDelay).
const driverWaitDelay = 2 * time.Second

// driverLine is one line a driver printed.
type driverLine struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Error is present on delivery reports only ("" when delivered).
	Error *string `json:"error"`
	// Txn and Outcome: a transaction's end.
	Txn     *int   `json:"txn"`
	Outcome string `json:"outcome"`
	// Member: the group member that read the record; with Assignment,
	// the member's partitions at the end.
	Member     *int    `json:"member"`
	Assignment []int32 `json:"assignment"`
	// Result: an admin call's answer (its shape is the call's).
	Result json.RawMessage `json:"result"`
}

func (l *driverLine) isAck() bool        { return l.Error != nil && l.Txn == nil }
func (l *driverLine) isTxn() bool        { return l.Txn != nil }
func (l *driverLine) isAssignment() bool { return l.Assignment != nil }
func (l *driverLine) isRecord() bool     { return l.Error == nil && l.Txn == nil && !l.isAssignment() }

// driverRun is a driver's output.
type driverRun struct {
	Lines  []driverLine
	Stderr string
	Took   time.Duration
}

// runDriver runs name with args (stdin, the working directory dir and
// the extra environment env as given) until it exits or ctx ends, when
// it is killed. label names the run in errors. It parses stdout's lines; a driver that exits non-zero,
// or prints a line that is not JSON, is an error naming the tail of its
// stderr.
func runDriver(ctx context.Context, label, dir string, env []string, stdin string, name string, args ...string) (*driverRun, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), env...)
	cmd.WaitDelay = driverWaitDelay
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	run := &driverRun{Stderr: stderr.String(), Took: time.Since(t0)}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (killed when the cell's bound ended)", err)
		}
		return run, fmt.Errorf("%s: %w after %.1fs; stderr: %s", label, err, run.Took.Seconds(), tail(run.Stderr, 1500))
	}
	lines, err := parseDriverLines(stdout.Bytes())
	if err != nil {
		return run, fmt.Errorf("%s: %w", label, err)
	}
	run.Lines = lines
	return run, nil
}

// parseDriverLines parses one JSON object per non-empty line.
func parseDriverLines(out []byte) ([]driverLine, error) {
	var lines []driverLine
	for i, b := range bytes.Split(out, []byte("\n")) {
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var l driverLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("output line %d %q: %w", i+1, tail(string(b), 200), err)
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// tail is the last n bytes of s, on one line.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.Join(strings.Fields(s), " ")
}

// driverSeconds is the deadline a driver sets itself: a little less than
// what is left of ctx, so that it reports its own timeout before it is
// killed.
func driverSeconds(ctx context.Context) int {
	d, ok := ctx.Deadline()
	if !ok {
		return 45
	}
	s := int(time.Until(d)/time.Second) - 3
	return max(s, 1)
}

// spec is a record a driver is to produce.
type spec struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
}

// errNoReport is the error of a record no delivery report answered.
var errNoReport = errors.New("no delivery report")

// newResult is the plan of a produce of n records over topic's
// partitions: value "<prefix>-%08d", record i to partition i mod
// partitions (kafkatest.Workload's layout), none acknowledged yet.
func newResult(topic string, partitions int32, n int, prefix string) *kafkatest.Result {
	res := &kafkatest.Result{Topic: topic, Partitions: partitions, Records: make([]kafkatest.Ack, n)}
	for i := range res.Records {
		res.Records[i] = kafkatest.Ack{
			Value: fmt.Sprintf("%s-%08d", prefix, i), Partition: int32(i % int(partitions)),
			Offset: -1, ProducerID: -1, Epoch: -1, Err: errNoReport,
		}
	}
	return res
}

// specs are res's records, for a driver.
func specs(recs []kafkatest.Ack) []spec {
	s := make([]spec, len(recs))
	for i, a := range recs {
		s[i] = spec{Value: a.Value, Partition: a.Partition}
	}
	return s
}

// applyAcks takes the driver's delivery reports into res: each record's
// offset, or its error. A report of a value never produced, in another
// partition, or twice, is an error: the client misreported.
func applyAcks(res *kafkatest.Result, lines []driverLine) error {
	index := make(map[string]int, len(res.Records))
	for i, a := range res.Records {
		index[a.Value] = i
	}
	reported := make(map[string]bool, len(res.Records))
	res.Acked, res.Err = 0, nil
	for _, l := range lines {
		if !l.isAck() {
			continue
		}
		i, ok := index[l.Value]
		if !ok {
			return fmt.Errorf("a delivery report of %q, which was never produced", l.Value)
		}
		if reported[l.Value] {
			return fmt.Errorf("two delivery reports of %q", l.Value)
		}
		reported[l.Value] = true
		a := &res.Records[i]
		if l.Partition != a.Partition {
			return fmt.Errorf("%q reported delivered to partition %d, produced to %d", l.Value, l.Partition, a.Partition)
		}
		if *l.Error != "" || l.Offset < 0 {
			a.Err = fmt.Errorf("delivery failed: %s", *l.Error)
			continue
		}
		a.Offset, a.Err = l.Offset, nil
	}
	for i, a := range res.Records {
		if a.Err == nil {
			res.Acked++
		} else if res.Err == nil {
			res.Err = fmt.Errorf("record %d (%s): %w", i, a.Value, a.Err)
		}
	}
	return nil
}

// foundOf is what a driver read: its record lines (of every member).
// The producer fields are unknown to a consumer: ProducerID 0 and
// Sequence -1 leave kafkatest.Verify's producer checks out.
func foundOf(lines []driverLine) []kafkatest.Found {
	var found []kafkatest.Found
	for _, l := range lines {
		if l.isRecord() {
			found = append(found, kafkatest.Found{Partition: l.Partition, Offset: l.Offset, Value: l.Value, Sequence: -1})
		}
	}
	return found
}

// membersOf splits a group driver's records by member.
func membersOf(lines []driverLine, members int) [][]kafkatest.Found {
	read := make([][]kafkatest.Found, members)
	for _, l := range lines {
		if l.isRecord() && l.Member != nil && *l.Member >= 0 && *l.Member < members {
			read[*l.Member] = append(read[*l.Member], kafkatest.Found{Partition: l.Partition, Offset: l.Offset, Value: l.Value, Sequence: -1})
		}
	}
	return read
}

// newTxnResult is the plan of n transactions of per records over
// topic's partitions, commit and abort alternating (txnPlan), with
// kafkatest.TxnWorkload's layout and values.
func newTxnResult(topic string, partitions int32, n, per int, prefix string) *kafkatest.TxnResult {
	w := &kafkatest.TxnWorkload{Topic: topic, Partitions: partitions, Transactions: n, PerTxn: per, Commit: txnPlan, Prefix: prefix}
	return &kafkatest.TxnResult{Topic: topic, Partitions: partitions, Txns: w.Plan()}
}

// txnSpec is a transaction a driver is to run.
type txnSpec struct {
	Commit  bool   `json:"commit"`
	Records []spec `json:"records"`
}

func txnSpecs(res *kafkatest.TxnResult) []txnSpec {
	s := make([]txnSpec, len(res.Txns))
	for i, t := range res.Txns {
		s[i] = txnSpec{Commit: t.Planned, Records: specs(t.Records)}
	}
	return s
}

// applyTxnLines takes a transactional driver's delivery reports and
// transaction ends into res: each record's offset, each transaction's
// outcome (a transaction the driver did not report is an error of it).
func applyTxnLines(res *kafkatest.TxnResult, lines []driverLine) error {
	acks := map[string]driverLine{}
	ends := map[int]driverLine{}
	for _, l := range lines {
		switch {
		case l.isTxn():
			if _, dup := ends[*l.Txn]; dup {
				return fmt.Errorf("transaction %d reported ended twice", *l.Txn)
			}
			ends[*l.Txn] = l
		case l.isAck():
			if _, dup := acks[l.Value]; dup {
				return fmt.Errorf("two delivery reports of %q", l.Value)
			}
			acks[l.Value] = l
		}
	}
	res.Committed, res.Aborted, res.Uncertain = 0, 0, 0
	for i := range res.Txns {
		tx := &res.Txns[i]
		for j := range tx.Records {
			a := &tx.Records[j]
			l, ok := acks[a.Value]
			switch {
			case !ok:
				a.Err = errNoReport
			case l.Partition != a.Partition:
				return fmt.Errorf("%q reported delivered to partition %d, produced to %d", a.Value, l.Partition, a.Partition)
			case *l.Error != "" || l.Offset < 0:
				a.Err = fmt.Errorf("delivery failed: %s", *l.Error)
			default:
				a.Offset = l.Offset
			}
		}
		end, ok := ends[tx.Index]
		switch {
		case !ok:
			// Never ended by the client: only an abort (by the server's
			// timeout, or a later producer's fencing) can end it.
			tx.Outcome = kafkatest.TxnAborted
			tx.Err = errors.New("the client never reported this transaction's end")
		case end.Outcome == "committed":
			tx.Outcome = kafkatest.TxnCommitted
		case end.Outcome == "aborted":
			tx.Outcome = kafkatest.TxnAborted
		case end.Outcome == "uncertain":
			tx.Outcome = kafkatest.TxnUncertain
		default:
			return fmt.Errorf("transaction %d: outcome %q", tx.Index, end.Outcome)
		}
		if ok && end.Error != nil && *end.Error != "" {
			tx.Err = errors.New(*end.Error)
		}
		countOutcome(res, tx.Outcome)
		if tx.Err != nil && res.Err == nil {
			res.Err = fmt.Errorf("transaction %d: %w", tx.Index, tx.Err)
		}
	}
	return nil
}

// checkProducedOnce checks a plain produce (no faults) by the records
// the same client read back (once each, at the acknowledged offsets),
// then by the store scan (verifyPlain: no producer id either).
func checkProducedOnce(e *Env, res *kafkatest.Result, read []kafkatest.Found, readBy string) Result {
	if err := allAcked(res); err != nil {
		return fail("%v", err)
	}
	if err := kafkatest.Verify(res, read); err != nil {
		return fail("read back by %s: %v", readBy, err)
	}
	scanned, err := e.stopAndScan(res)
	if err != nil {
		return fail("%v", err)
	}
	if err := verifyPlain(res, scanned); err != nil {
		return fail("store scan: %v", err)
	}
	return pass("%d records acknowledged, read back by %s once each at their acknowledged offsets; the store scan agrees", res.Acked, readBy)
}

// checkReadBack checks the records a client read back after producing
// with a codec (once each, at their offsets), then the store's codecs.
func checkReadBack(e *Env, res *kafkatest.Result, read []kafkatest.Found, codec, readBy string) Result {
	if err := allAcked(res); err != nil {
		return fail("%v", err)
	}
	if err := kafkatest.Verify(res, read); err != nil {
		return fail("read back by %s: %v", readBy, err)
	}
	return checkCodecs(e, res.Topic, codec, fmt.Sprintf("%d records produced with %s and read back by %s once each", res.Acked, codec, readBy))
}
