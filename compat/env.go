package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/recordbatch"
)

// Env is a cell's server: a fresh `logstore serve` child process behind a
// kafkatest.Proxy, which the server advertises, so every client
// connection goes through the proxy (but those of a sasl_ssl cell's
// client under test, which dials SASL.Addr directly).
type Env struct {
	Bootstrap   []string // the proxy's address: what clients dial
	Proxy       *kafkatest.Proxy
	Dir         string // the server's store directory
	Tmp         string // a scratch dir for the cell (scripts' files)
	NodeModules string // the -node-modules flag

	root    string // holds Dir and Tmp; removed by close
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd's exit, once exited is closed
	stderr  *lockedBuffer

	stopOnce sync.Once
	stopErr  error

	faulted bool // Faults was called

	bin          string // the logstore binary, for Restart
	segmentBytes int    // its --segment-bytes, for Restart

	// SASL is the server's SASL_SSL listener, its CA and its user, for a
	// cell whose Cell.SASLSSL is set (nil otherwise; see sasl.go).
	SASL *SASLSSL

	wireMu sync.Mutex
	// wire is the highest version of each API key the proxy saw in the
	// requests of each client id.
	wire map[string]map[int16]int16
	// verdicts are the whole-log verdicts of the transactional logs
	// WriteTxnLog wrote, by topic.
	verdicts map[string]*kafkatest.TxnVerdict
}

// serverArgs are the flags of every cell's server besides --dir,
// --listen, --advertise and --segment-bytes: fsync before each answer,
// and short group delays so that group cells do not wait for Kafka's
// defaults.
var serverArgs = []string{
	"--sync", "always",
	"--group-initial-rebalance-delay", "100ms",
	"--group-min-session-timeout", "500ms",
}

// defaultSegmentBytes is a server's --segment-bytes unless its cell says
// otherwise (Cell.SegmentBytes). A batch larger than a segment is
// refused (Kafka's RECORD_TOO_LARGE rule), so a cell whose client may
// send batches of many KiB keeps this default.
const defaultSegmentBytes = 64 << 10

// smallSegmentBytes is the segment size of the kgo and sarama cells,
// whose batches are a few hundred bytes: a cell's few hundred short
// records then roll each partition's segment several times (each roll
// saves a producer-state snapshot).
const smallSegmentBytes = 1024

// readyTimeout bounds the wait for the server's ready line.
const readyTimeout = 30 * time.Second

// stopTimeout bounds a graceful stop; the server is killed after it.
const stopTimeout = 30 * time.Second

// startEnv starts a proxy and a server for one cell, in a new directory
// under parent; with saslSSL the server has a SASL_SSL listener too
// (Env.SASL).
func startEnv(bin, parent, nodeModules string, segmentBytes int, saslSSL bool) (*Env, error) {
	root, err := os.MkdirTemp(parent, "cell-")
	if err != nil {
		return nil, err
	}
	e := &Env{
		Dir: filepath.Join(root, "store"), Tmp: filepath.Join(root, "tmp"), NodeModules: nodeModules,
		root: root, stderr: &lockedBuffer{}, verdicts: map[string]*kafkatest.TxnVerdict{},
		wire: map[string]map[int16]int16{}, bin: bin, segmentBytes: segmentBytes,
	}
	if err := os.Mkdir(e.Tmp, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if saslSSL {
		s, err := newSASLSSL(bin, root, e.Dir)
		if err != nil {
			os.RemoveAll(root)
			return nil, err
		}
		e.SASL = s
	}
	// The proxy listens first: the server must advertise its address.
	// Its target is set once the server says where it listens.
	p, err := kafkatest.NewProxy(kafkatest.ProxyConfig{Target: "127.0.0.1:1"})
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	e.Proxy, e.Bootstrap = p, []string{p.Addr()}
	e.setRules(kafkatest.Rules{})
	addr, err := e.start(bin, segmentBytes)
	if err != nil {
		p.Close()
		os.RemoveAll(root)
		return nil, err
	}
	p.SetTarget(addr)
	return e, nil
}

// start runs the server and returns the address it listens on, from its
// ready line ("logstore serve: listening on ADDR, store ..."). A server
// with a SASL_SSL listener (e.SASL) listens on two, PLAINTEXT (the
// checkers', advertised as the proxy) and SASL_SSL, whose address goes
// into e.SASL.Addr.
func (e *Env) start(bin string, segmentBytes int) (string, error) {
	args := []string{"serve", "--dir", e.Dir, "--segment-bytes", strconv.Itoa(segmentBytes)}
	if e.SASL != nil {
		args = append(args, e.SASL.serverArgs(e.Proxy.Addr())...)
	} else {
		args = append(args, "--listen", "127.0.0.1:0", "--advertise", e.Proxy.Addr())
	}
	args = append(args, serverArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = e.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s serve: %w", bin, err)
	}
	e.cmd, e.exited = cmd, make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		e.waitErr = cmd.Wait() // after the last read of stdout, as exec requires
		close(e.exited)
	}()
	select {
	case line := <-ready:
		_, rest, ok := strings.Cut(line, "listening on ")
		addr, _, ok2 := strings.Cut(rest, ",")
		if !ok || !ok2 || addr == "" {
			e.kill()
			return "", fmt.Errorf("the server's ready line %q names no address", line)
		}
		if e.SASL != nil {
			if addr, err = e.SASL.readyListeners(addr); err != nil {
				e.kill()
				return "", fmt.Errorf("the server's ready line %q: %w", line, err)
			}
		}
		return addr, nil
	case <-e.exited:
		return "", fmt.Errorf("the server exited before it was ready: %v; its stderr:\n%s", e.waitErr, e.stderr.tail())
	case <-time.After(readyTimeout):
		e.kill()
		return "", fmt.Errorf("the server was not ready after %s; its stderr:\n%s", readyTimeout, e.stderr.tail())
	}
}

// kill ends the server with SIGKILL and waits for it.
func (e *Env) kill() {
	if e.cmd != nil {
		e.cmd.Process.Signal(syscall.SIGKILL)
		<-e.exited
	}
}

// Stop stops the server (SIGTERM, waits for exit 0) so the store can be
// scanned; idempotent. The runner also calls it after Run.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		if e.cmd == nil {
			return
		}
		if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			e.stopErr = fmt.Errorf("stopping the server: %w", err)
			return
		}
		select {
		case <-e.exited:
		case <-time.After(stopTimeout):
			e.kill()
			e.stopErr = fmt.Errorf("the server did not stop within %s of SIGTERM; its stderr:\n%s", stopTimeout, e.stderr.tail())
			return
		}
		if e.waitErr != nil {
			e.stopErr = fmt.Errorf("the server exited with %v after SIGTERM; its stderr:\n%s", e.waitErr, e.stderr.tail())
		}
	})
	return e.stopErr
}

// Restart stops the server (as Stop does: SIGTERM, exit 0) and starts a
// new one on the same store directory, which the proxy then forwards
// to: what a cell checks after it survived a restart.
func (e *Env) Restart() error {
	if err := e.Stop(); err != nil {
		return err
	}
	e.stopOnce, e.stopErr = sync.Once{}, nil
	addr, err := e.start(e.bin, e.segmentBytes)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	e.Proxy.SetTarget(addr)
	return nil
}

// close stops the server (killing it if it does not stop), closes the
// proxy and removes the cell's directory.
func (e *Env) close() {
	if err := e.Stop(); err != nil {
		e.kill()
	}
	e.Proxy.Close()
	os.RemoveAll(e.root)
}

// CreateTopic creates topic with partitions (an existing one is fine).
func (e *Env) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	return kafkatest.CreateTopic(ctx, e.Bootstrap, topic, partitions, nil)
}

// The standard faults: every faultEvery-th Produce response is dropped
// after the server wrote it and both sides closed, and every
// refuseEvery-th Produce request is refused by closing before it is
// forwarded; each at most faultLimit times, so that a cell ends.
const (
	faultEvery  = 7
	refuseEvery = 11
	faultLimit  = 5
)

// Faults installs the standard faults on the proxy: every 7th Produce
// response dropped after the server wrote it (DropAndClose) and every
// 11th Produce request refused by closing before it is forwarded
// (CloseBeforeForward), each limited to a few occurrences so that the
// cell ends. env.Proxy.Counts() says what happened.
func (e *Env) Faults() {
	e.faulted = true
	e.setRules(kafkatest.Rules{
		Request:  kafkatest.Limit(faultLimit, kafkatest.EveryNth(0, refuseEvery, kafkatest.CloseBeforeForward)),
		Response: kafkatest.Limit(faultLimit, kafkatest.EveryNth(0, faultEvery, kafkatest.DropAndClose)),
	})
}

// NoFaults removes every rule.
func (e *Env) NoFaults() { e.setRules(kafkatest.Rules{}) }

// setRules installs r on the proxy, behind the rule that notes each
// request's client id, API key and version (WireVersions).
func (e *Env) setRules(r kafkatest.Rules) {
	req := r.Request
	r.Request = func(ex *kafkatest.Exchange) kafkatest.Action {
		e.noteWire(ex)
		if req == nil {
			return kafkatest.Forward
		}
		return req(ex)
	}
	e.Proxy.SetRules(r)
}

// noteWire keeps the highest version of ex's API key for its client id
// (the request header's nullable string after the API key, version and
// correlation id).
func (e *Env) noteWire(ex *kafkatest.Exchange) {
	b := ex.Request
	if len(b) < 10 {
		return
	}
	n := int(int16(binary.BigEndian.Uint16(b[8:10])))
	id := ""
	if n > 0 && len(b) >= 10+n {
		id = string(b[10 : 10+n])
	}
	e.wireMu.Lock()
	defer e.wireMu.Unlock()
	m := e.wire[id]
	if m == nil {
		m = map[int16]int16{}
		e.wire[id] = m
	}
	if v, ok := m[ex.Key]; !ok || ex.Version > v {
		m[ex.Key] = ex.Version
	}
}

// WireVersions says which request versions the client with the client
// id used, as the proxy saw them: "Produce v3, Fetch v5, ...", in the
// order of the API keys; "" when it sent nothing. Cells give their
// client under test a client id of its own so that the checkers' kgo
// clients do not mix in.
func (e *Env) WireVersions(clientID string) string {
	e.wireMu.Lock()
	defer e.wireMu.Unlock()
	m := e.wire[clientID]
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s v%d", kmsg.NameForKey(int16(k)), m[int16(k)]))
	}
	return strings.Join(parts, ", ")
}

// faultText says what the proxy did to Produce requests and answers.
func (e *Env) faultText() string {
	c := e.Proxy.Counts()
	return fmt.Sprintf("%d answers dropped after the write, %d requests refused before it, %d retries recognised as duplicates",
		c.ProduceDropped, c.ClosedBeforeForward, c.ProduceRepeats)
}

// produceText says what the proxy saw of Produce: the partition answers
// by error code (0 is success) and the retries the server recognised as
// duplicates. A failure of a produce cell names it, so that a retry
// after an error the server answered can be told from one after a
// client's timeout.
func (e *Env) produceText() string {
	c := e.Proxy.Counts()
	codes := make([]int, 0, len(c.ProduceErrors))
	for code := range c.ProduceErrors {
		codes = append(codes, int(code))
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		name := "ok"
		if code != 0 {
			name = kerr.ErrorForCode(int16(code)).Error()
		}
		parts = append(parts, fmt.Sprintf("%d %s", c.ProduceErrors[int16(code)], name))
	}
	return fmt.Sprintf("the proxy saw Produce partition answers: %s; %d repeats of a base offset; %d answers dropped", strings.Join(parts, ", "), c.ProduceRepeats, c.ProduceDropped)
}

// segments says how many segment files the store has for topic (after
// Stop): "N segment files".
func (e *Env) segments(topic string) string {
	logs, _ := filepath.Glob(filepath.Join(e.Dir, topic+"-*", "*.log"))
	return fmt.Sprintf("%d segment files", len(logs))
}

// checkFaultsFired fails a cell whose faults never fired: it would
// measure nothing about retries.
func (e *Env) checkFaultsFired() error {
	if !e.faulted {
		return nil
	}
	c := e.Proxy.Counts()
	if c.ProduceDropped == 0 && c.ClosedBeforeForward == 0 {
		return errors.New("the proxy's faults never fired (too few Produce requests): nothing about retries was measured")
	}
	return nil
}

// VerifyProduce checks an idempotent produce: first it consumes through
// a kgo consumer (read_committed, which is read_uncommitted for
// non-transactional records) and Verifies what it read; then it Stops
// the server, scans the store (ScanStore) and Verifies again, producer
// ids and contiguous sequences included. Every record must have been
// acknowledged. Returns the detail text.
func (e *Env) VerifyProduce(ctx context.Context, res *kafkatest.Result) (string, error) {
	e.NoFaults()
	if res.Acked != len(res.Records) {
		return "", fmt.Errorf("%d of %d records acknowledged (%s): %v", res.Acked, len(res.Records), e.faultText(), res.Err)
	}
	found, err := kafkatest.Consume(ctx, e.Bootstrap, res.Topic, res.Partitions)
	if err != nil {
		return "", err
	}
	if err := kafkatest.Verify(res, found); err != nil {
		return "", fmt.Errorf("consumed: %w", err)
	}
	scanned, err := e.stopAndScan(res)
	if err != nil {
		return "", err
	}
	if err := kafkatest.Verify(res, scanned); err != nil {
		return "", fmt.Errorf("store scan: %w", err)
	}
	if err := e.checkFaultsFired(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d records acknowledged; %s; each record once, at its acknowledged offset, by consuming and by store scan (sequences contiguous, %s)",
		res.Acked, e.faultText(), e.segments(res.Topic)), nil
}

// txnPlan is the commit plan of every transactional cell: even
// transactions commit, odd ones abort.
func txnPlan(t int) bool { return t%2 == 0 }

// WriteTxnLog writes, with kgo, n transactions over topic (created with
// partitions) alternating commit and abort, and returns the result; the
// read_committed cells consume it and check with kafkatest's
// transactional checkers against this result (or with
// CheckReadCommitted).
func (e *Env) WriteTxnLog(ctx context.Context, topic string, partitions int32, n int) (*kafkatest.TxnResult, error) {
	w := &kafkatest.TxnWorkload{
		Brokers: e.Bootstrap, Topic: topic, Partitions: partitions, Transactions: n,
		PerTxn: 10, Commit: txnPlan, Prefix: topic, CreateTopic: true,
		// Uncompressed, so that every client can read it: kgo's default
		// codec is snappy, which kafkajs cannot decode (it ships only
		// gzip).
		Opts: []kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())},
	}
	res, err := w.Run(ctx)
	if err != nil {
		return nil, err
	}
	if err := txnAsPlanned(res); err != nil {
		return nil, fmt.Errorf("writing the transactional log with kgo: %w", err)
	}
	all, err := kafkatest.ConsumeTxns(ctx, e.Bootstrap, topic, partitions, kgo.ReadUncommitted())
	if err != nil {
		return nil, err
	}
	v, err := kafkatest.VerifyTxnLog(res, all)
	if err != nil {
		return nil, fmt.Errorf("the transactional log kgo wrote: %w", err)
	}
	e.verdicts[topic] = v
	return res, nil
}

// txnAsPlanned checks that every transaction ended as its plan said.
func txnAsPlanned(res *kafkatest.TxnResult) error {
	if res.Err != nil {
		return res.Err
	}
	for _, t := range res.Txns {
		want := kafkatest.TxnAborted
		if t.Planned {
			want = kafkatest.TxnCommitted
		}
		if t.Outcome != want || t.Err != nil {
			return fmt.Errorf("transaction %d planned %s, ended %s: %v", t.Index, want, t.Outcome, t.Err)
		}
	}
	return nil
}

// CheckReadCommitted checks what a client read under read_committed from
// a log WriteTxnLog wrote (data records only: Found's producer fields
// are not compared): exactly the committed records, each once, at the
// offset the log has it; no record of an aborted transaction.
func (e *Env) CheckReadCommitted(res *kafkatest.TxnResult, got []kafkatest.Found) (string, error) {
	v := e.verdicts[res.Topic]
	if v == nil {
		return "", fmt.Errorf("no log of topic %s was written by WriteTxnLog", res.Topic)
	}
	var problems []string
	add := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	seen := map[string]bool{}
	aborted := 0
	for _, f := range got {
		if seen[f.Value] {
			add("%q read twice", f.Value)
			continue
		}
		seen[f.Value] = true
		d, ok := v.Decided[f.Value]
		switch {
		case !ok:
			add("%q at partition %d offset %d was never written", f.Value, f.Partition, f.Offset)
		case d != kafkatest.Committed:
			aborted++
			add("%q at partition %d offset %d read, the log has it %s", f.Value, f.Partition, f.Offset, d)
		case v.Found[f.Value].Partition != f.Partition || v.Found[f.Value].Offset != f.Offset:
			add("%q read at partition %d offset %d, the log has it at partition %d offset %d",
				f.Value, f.Partition, f.Offset, v.Found[f.Value].Partition, v.Found[f.Value].Offset)
		}
	}
	committed := 0
	for val, d := range v.Decided {
		if d != kafkatest.Committed {
			continue
		}
		committed++
		if !seen[val] {
			add("committed %q (partition %d offset %d) not read", val, v.Found[val].Partition, v.Found[val].Offset)
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return "", fmt.Errorf("read_committed: %s", strings.Join(problems, "; "))
	}
	return fmt.Sprintf("%d transactions (%d committed, %d aborted) written by kgo; read %d records: each committed record once, at its offset, no aborted one (%d aborted records in the log)",
		len(res.Txns), res.Committed, res.Aborted, len(got), len(v.Decided)-committed), nil
}

// CommittedEnds gives, for each partition of a log WriteTxnLog wrote, the
// offset after its last committed record: a read_committed consumer that
// reached it has read every committed record of the partition (the log
// ends with a committed transaction when WriteTxnLog wrote an odd
// number, so every aborted record lies before it).
func (e *Env) CommittedEnds(topic string) (map[int32]int64, error) {
	v := e.verdicts[topic]
	if v == nil {
		return nil, fmt.Errorf("no log of topic %s was written by WriteTxnLog", topic)
	}
	ends := map[int32]int64{}
	for val, d := range v.Decided {
		if f := v.Found[val]; d == kafkatest.Committed && f.Offset+1 > ends[f.Partition] {
			ends[f.Partition] = f.Offset + 1
		}
	}
	return ends, nil
}

// VerifyTxn checks the records a client's transactional producer wrote
// (committed ones exactly once under read_committed, aborted ones never),
// given what the client said it committed/aborted: kgo consumers at
// read_uncommitted and read_committed (ConsumeTxnsAndVerify), then the
// store, stopped, scanned and checked (ScanTxnsAndVerify: markers,
// .txnindex, Kafka's dump). Every transaction must have ended as planned.
func (e *Env) VerifyTxn(ctx context.Context, res *kafkatest.TxnResult) (string, error) {
	e.NoFaults()
	if err := txnAsPlanned(res); err != nil {
		return "", fmt.Errorf("%w (%s)", err, e.faultText())
	}
	v, err := kafkatest.ConsumeTxnsAndVerify(ctx, e.Bootstrap, res)
	if err != nil {
		return "", err
	}
	if err := e.Stop(); err != nil {
		return "", err
	}
	if _, err := kafkatest.ScanTxnsAndVerify(e.Dir, res, v); err != nil {
		return "", err
	}
	if err := e.checkFaultsFired(); err != nil {
		return "", err
	}
	records := 0
	for _, t := range res.Txns {
		records += len(t.Records)
	}
	return fmt.Sprintf("%d transactions (%d committed, %d aborted), %d records; %s; read_committed reads each committed record once and no aborted one, the store scan agrees (markers, .txnindex, %s)",
		len(res.Txns), res.Committed, res.Aborted, records, e.faultText(), e.segments(res.Topic)), nil
}

// StoreCodecs stops the server and returns the set of compression codecs
// of the data batches of topic (from the store scan), with the number of
// batches of each.
func (e *Env) StoreCodecs(topic string) (map[string]int, error) {
	if err := e.Stop(); err != nil {
		return nil, err
	}
	st, err := logstore.Open(e.Dir, logstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	codecs, err := scanCodecs(st, topic)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("scan: close: %w", cerr)
	}
	return codecs, err
}

func scanCodecs(st *logstore.Store, topic string) (map[string]int, error) {
	ids, err := st.Partitions()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	codecs := map[string]int{}
	for _, id := range ids {
		if id.Topic != topic {
			continue
		}
		p, err := st.ExistingPartition(topic, id.Partition)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		for off, end := p.StartOffset(), p.EndOffset(); off < end; {
			data, err := p.Read(off, 1<<20)
			if err != nil {
				return nil, fmt.Errorf("scan %s at offset %d: %w", id, off, err)
			}
			if len(data) == 0 {
				return nil, fmt.Errorf("scan %s: nothing read at offset %d below the end %d", id, off, end)
			}
			for len(data) > 0 {
				b, err := recordbatch.Parse(data, 0)
				if err != nil {
					return nil, fmt.Errorf("scan %s at offset %d: %w", id, off, err)
				}
				data = data[b.Size():]
				if b.LastOffset() < off {
					continue // a batch Read returned whole, before off
				}
				off = b.LastOffset() + 1
				if !b.Attributes().Control() {
					codecs[b.Attributes().Codec().String()]++
				}
			}
		}
	}
	return codecs, nil
}

// lockedBuffer is a bytes.Buffer for a child's stderr.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail is the last few KiB written.
func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4096 {
		s = "..." + s[len(s)-4096:]
	}
	return s
}
