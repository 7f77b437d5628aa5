package logstore_test

// The harness of TestKillDashNine: the real logstore binary appending
// JSON Lines from a pipe, killed with SIGKILL at seeded moments, restarted
// and fed again as producers retry.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

// buildCLI builds cmd/logstore into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the CLI with: %v", err)
	}
	out := filepath.Join(t.TempDir(), "logstore")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/logstore")
	cmd.Dir = testutil.RepoDir(t)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/logstore: %v\n%s", err, msg)
	}
	return out
}

// procBatch is one batch a producer sends through the CLI.
type procBatch struct {
	part   int32
	pid    int64
	epoch  int16
	seq    int32
	values []string
	line   []byte // the JSON line

	acked      bool
	base, last int64
}

// procProducer is a producer's position.
type procProducer struct {
	pid   int64
	part  int32
	epoch int16
	next  int32
}

// killTest is the state of TestKillDashNine across runs of the CLI.
type killTest struct {
	t     *testing.T
	cli   string
	dir   string
	seed  uint64
	rng   *rand.Rand // the batches
	prods []*procProducer
	sent  []*procBatch // every batch ever generated, in order
	queue []*procBatch // not acknowledged yet: sent again, in order, first
	run   int
	ts    int64

	resent             int // batches sent again after a kill
	dupOnRetry, okOnRe int // their answers: written before the kill, or not
}

const killTopic = "kill"

func (k *killTest) fail(format string, args ...any) {
	k.t.Helper()
	k.t.Fatalf("seed %d, run %d: %s\nreplay: LOGSTORE_CRASH_SEED=%d go test -run TestKillDashNine .", k.seed, k.run, fmt.Sprintf(format, args...), k.seed)
}

// newBatch makes the next batch of a random producer; now and then the
// producer bumps its epoch first.
func (k *killTest) newBatch() *procBatch {
	pr := k.prods[k.rng.IntN(len(k.prods))]
	if pr.next > 0 && k.rng.IntN(25) == 0 && k.allAcked(pr.pid) {
		// A producer re-initialised: a new epoch, its sequences from 0.
		// (Not while a batch of the old epoch awaits its reply: a real
		// producer abandons those, and their retry would be FENCED.)
		pr.epoch, pr.next = pr.epoch+1, 0
	}
	b := &procBatch{part: pr.part, pid: pr.pid, epoch: pr.epoch, seq: pr.next}
	type rec struct {
		Value     string `json:"value"`
		Timestamp int64  `json:"timestamp"`
	}
	var recs []rec
	for i := range 1 + k.rng.IntN(5) {
		v := fmt.Sprintf("p%d-e%d-s%d-%d", pr.pid, pr.epoch, pr.next, i)
		b.values = append(b.values, v)
		recs = append(recs, rec{v, k.ts})
	}
	line, err := json.Marshal(map[string]any{
		"partition": pr.part, "producerId": pr.pid, "producerEpoch": pr.epoch, "baseSequence": pr.next, "records": recs,
	})
	if err != nil {
		k.t.Fatal(err)
	}
	b.line = append(line, '\n')
	pr.next += int32(len(b.values))
	k.sent = append(k.sent, b)
	return b
}

// allAcked reports whether every batch of producer pid was acknowledged.
func (k *killTest) allAcked(pid int64) bool {
	for _, b := range k.sent {
		if b.pid == pid && !b.acked {
			return false
		}
	}
	return true
}

// cliReply is a JSON reply of `logstore append --json`.
type cliReply struct {
	Line    int    `json:"line"`
	Outcome string `json:"outcome"`
	Base    *int64 `json:"base"`
	Last    *int64 `json:"last"`
	Reason  string `json:"reason"`
}

// once runs the CLI: it sends the unacknowledged batches, then new ones,
// keeping up to depth lines ahead of the replies, and kills the process
// with SIGKILL once it has read killAfter replies (kill false: it closes
// the input after killAfter batches and expects a clean exit). Replies
// printed before the process died count, even those read after the kill.
func (k *killTest) once(killAfter, depth int, kill bool, sync string) {
	k.t.Helper()
	cmd := exec.Command(k.cli, "append", "--dir", k.dir, "--topic", killTopic, "--input", "-", "--json",
		"--segment-bytes", "1500", "--sync", sync, "--lock-timeout", "30s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	replies := make(chan string)
	go func() {
		defer close(replies)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // a partial last line was never a reply
			}
			replies <- line
		}
	}()
	finished := false
	defer func() {
		if !finished { // a failure: do not leave the process behind
			cmd.Process.Kill()
			stdin.Close()
			for range replies {
			}
			cmd.Wait()
		}
	}()
	resend := map[*procBatch]bool{}
	for _, b := range k.queue {
		resend[b] = true
	}
	var inflight []*procBatch // sent, no reply yet, in order
	lineNo, got := 0, 0
	take := func(line string) {
		if len(inflight) == 0 {
			k.fail("a reply with nothing in flight: %q", line)
		}
		b := inflight[0]
		inflight = inflight[1:]
		lineNo++
		outcome := k.reply(b, line, lineNo)
		if resend[b] {
			k.resent++
			if outcome == "DUPLICATE" {
				k.dupOnRetry++
			} else {
				k.okOnRe++
			}
		}
		got++
	}
	for got < killAfter {
		for len(inflight) < depth {
			if len(k.queue) == 0 {
				k.queue = append(k.queue, k.newBatch())
			}
			b := k.queue[0]
			k.queue = k.queue[1:]
			if _, err := stdin.Write(b.line); err != nil {
				k.fail("writing to the CLI: %v\nstderr: %s", err, stderr.String())
			}
			inflight = append(inflight, b)
		}
		line, ok := <-replies
		if !ok {
			k.fail("the CLI stopped early: %v\nstderr: %s", cmd.Wait(), stderr.String())
		}
		take(line)
	}
	if kill {
		if err := cmd.Process.Kill(); err != nil {
			k.t.Fatal(err)
		}
	} else {
		stdin.Close()
	}
	for line := range replies {
		take(line)
	}
	err = cmd.Wait()
	stdin.Close()
	if !kill && err != nil {
		k.fail("the last run of the CLI: %v\nstderr: %s", err, stderr.String())
	}
	var ee *exec.ExitError
	if kill && err != nil && !errors.As(err, &ee) {
		k.t.Fatal(err)
	}
	finished = true
	// What got no reply goes first next time, in order.
	k.queue = append(inflight, k.queue...)
}

// reply records the CLI's answer to b and returns its outcome.
func (k *killTest) reply(b *procBatch, line string, lineNo int) string {
	k.t.Helper()
	var r cliReply
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		k.fail("reply %q: %v", line, err)
	}
	if r.Line != lineNo {
		k.fail("reply to line %d where line %d was expected: %q", r.Line, lineNo, line)
	}
	switch r.Outcome {
	case "OK", "DUPLICATE":
		if r.Base == nil || r.Last == nil || *r.Last-*r.Base != int64(len(b.values)-1) {
			k.fail("reply %q to a batch of %d records", line, len(b.values))
		}
		if b.acked && (b.base != *r.Base || b.last != *r.Last) {
			k.fail("producer %d seq %d acknowledged at %d..%d, now %q", b.pid, b.seq, b.base, b.last, line)
		}
		if r.Outcome == "OK" && b.acked {
			k.fail("producer %d seq %d acknowledged before, written again: %q", b.pid, b.seq, line)
		}
		b.acked, b.base, b.last = true, *r.Base, *r.Last
	default:
		k.fail("producer %d epoch %d seq %d: %q", b.pid, b.epoch, b.seq, strings.TrimSpace(line))
	}
	return r.Outcome
}

// verify opens the store with the library and checks every partition:
// valid batches with contiguous offsets; each batch one that was sent,
// once; every batch sent present (the last run sent them all), at the
// offsets its reply gave; the producer state a full replay; and retries
// of each producer's window answered DUPLICATE with their offsets.
func (k *killTest) verify() {
	k.t.Helper()
	s, err := logstore.Open(k.dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		k.fail("open: %v", err)
	}
	defer s.Close()
	type key struct {
		pid   int64
		epoch int16
		seq   int32
	}
	want := map[key]*procBatch{}
	for _, b := range k.sent {
		want[key{b.pid, b.epoch, b.seq}] = b
	}
	found := map[key]bool{}
	for part := range int32(2) {
		p, err := s.Partition(killTopic, part)
		if err != nil {
			k.fail("partition %d: %v", part, err)
		}
		log, err := crashtest.ReadLog(p)
		if err != nil {
			k.fail("partition %d: %v", part, err)
		}
		var off int64
		var rr recordbatch.RecordReader
		for _, b := range log {
			kk := key{b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()}
			sb := want[kk]
			switch {
			case b.BaseOffset() != off:
				k.fail("partition %d: batch at %d where %d was expected", part, b.BaseOffset(), off)
			case sb == nil || sb.part != part:
				k.fail("partition %d: batch at %d (producer %d epoch %d seq %d) was never sent there", part, b.BaseOffset(), kk.pid, kk.epoch, kk.seq)
			case found[kk]:
				k.fail("partition %d: producer %d epoch %d seq %d written twice", part, kk.pid, kk.epoch, kk.seq)
			case !sb.acked || sb.base != b.BaseOffset() || sb.last != b.LastOffset():
				k.fail("partition %d: producer %d seq %d at %d..%d, acknowledged at %d..%d (acked %t)", part, kk.pid, kk.seq, b.BaseOffset(), b.LastOffset(), sb.base, sb.last, sb.acked)
			}
			if err := rr.Reset(b, 0); err != nil {
				k.fail("partition %d: batch at %d: %v", part, b.BaseOffset(), err)
			}
			var values []string
			for rr.Next() {
				values = append(values, string(rr.Record().Value))
			}
			if rr.Err() != nil || strings.Join(values, ",") != strings.Join(sb.values, ",") {
				k.fail("partition %d: batch at %d holds %v, %v; sent %v", part, b.BaseOffset(), values, rr.Err(), sb.values)
			}
			found[kk] = true
			off = b.LastOffset() + 1
		}
		checkAgainstFullReplay(k.t, p)
		for _, pe := range p.ProducerSnapshot().Producers {
			for _, m := range pe.Batches {
				data, err := p.Read(m.FirstOffset, 1)
				if err != nil {
					k.t.Fatal(err)
				}
				b, _ := recordbatch.Parse(data, 0)
				res, err := p.Append(bytes.Clone(b))
				if err != nil || !res.Duplicate || res.BaseOffset != m.FirstOffset || res.LastOffset != m.LastOffset {
					k.fail("retry of producer %d seq %d: %+v, %v; want DUPLICATE %d..%d", pe.ProducerID, m.FirstSeq, res, err, m.FirstOffset, m.LastOffset)
				}
			}
		}
	}
	for kk, b := range want {
		if !found[kk] {
			k.fail("producer %d epoch %d seq %d (acked %t) is not in the log", kk.pid, kk.epoch, kk.seq, b.acked)
		}
	}
}
