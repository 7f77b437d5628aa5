package main

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/txncoord"
)

// abortAppend runs `logstore append` with args in dir (timestamp
// farTimestamp) and fails the test unless it was taken.
func abortAppend(t *testing.T, dir string, args ...string) {
	t.Helper()
	args = append([]string{"append", "--dir", dir, "--timestamp", farTimestamp}, args...)
	if out, errOut, code := inspectRun(t, args...); code != exitOK {
		t.Fatalf("logstore %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
	}
}

// abortFixture is a store whose partition events-0 holds "before" at
// offset 0, the open transaction of producer 31 epoch 0 ("a", "b") at
// 1..2, written with append --transactional, and "after" at 3.
func abortFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	abortAppend(t, dir, "before")
	abortAppend(t, dir, "--producer-id", "31", "--producer-epoch", "0", "--base-sequence", "0", "--transactional", "a", "b")
	abortAppend(t, dir, "after")
	return dir
}

// segmentLog is the first segment file of partition tp in dir.
func segmentLog(t *testing.T, dir, tp string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, tp, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readCommitted reads partition topic-partition of the store in dir as a
// read_committed consumer does: the batches below the last stable
// offset, without the records of the aborted transactions the partition
// lists (Kafka's consumer rule: a transactional batch of a producer
// whose aborted transaction began at or before it, until that
// producer's marker). It returns the values read, the LSO and the end.
func readCommitted(t *testing.T, dir, topic string, partition int32) (values []string, lso, end int64) {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.ExistingPartition(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	lso, end = p.LastStableOffset(), p.EndOffset()
	aborted, err := p.AbortedTransactions(0, lso)
	if err != nil {
		t.Fatal(err)
	}
	skipping := map[int64]bool{}
	var rr recordbatch.RecordReader
	for off := int64(0); off < lso; {
		data, _, _, err := p.ReadStable(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			data, off = data[b.Size():], b.LastOffset()+1
			for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
				skipping[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			switch {
			case b.Attributes().Control():
				delete(skipping, b.ProducerID())
				continue
			case b.Attributes().Transactional() && skipping[b.ProducerID()]:
				continue
			}
			if err := rr.Reset(b, 0); err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
				values = append(values, string(rr.Record().Value))
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return values, lso, end
}

// TestAbort: a transaction written with append --transactional holds the
// last stable offset at its first offset; abort writes an ABORT marker
// for it (dump shows the control batch and the .txnindex entry), the
// LSO moves to the end, producers shows the transaction closed, and a
// read_committed read skips the aborted records. With --json, and with
// another transaction still open, the LSO stops at that one.
func TestAbort(t *testing.T) {
	dir := abortFixture(t)
	if values, lso, end := readCommitted(t, dir, "events", 0); lso != 1 || end != 4 || strings.Join(values, ",") != "before" {
		t.Fatalf("before abort: read_committed %q, LSO %d, end %d; want [before], 1, 4", values, lso, end)
	}
	out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", "31")
	if want := "aborted producerId=31 epoch=0 txnFirstOffset=1 markerOffset=4 lastStableOffset=5\n"; code != exitOK || out != want || errOut != "" {
		t.Fatalf("abort: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
	out, _, code = inspectRun(t, "dump", "--deep-iteration", "--files", filepath.Join(dir, "events-0"))
	for _, want := range []string{
		"baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 31 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true ",
		"| offset: 4 CreateTime: ",
		" endTxnMarker: ABORT coordinatorEpoch: 0\n",
		"version: 0 producerId: 31 firstOffset: 1 lastOffset: 4 lastStableOffset: 5\n",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dump: exit %d, no %q in:\n%s", code, want, out)
		}
	}
	out, _, code = inspectRun(t, "producers", "--dir", dir)
	if code != exitOK || !strings.HasPrefix(out, "producerId=31 epoch=0 lastSequence=1 lastTimestamp=") ||
		!strings.HasSuffix(out, " txnFirstOffset=none coordinatorEpoch=0 window=[0..1@1..2 ts=4102444800000]\n") {
		t.Errorf("producers after abort: exit %d:\n%s", code, out)
	}
	if values, lso, end := readCommitted(t, dir, "events", 0); lso != 5 || end != 5 || strings.Join(values, ",") != "before,after" {
		t.Errorf("after abort: read_committed %q, LSO %d, end %d; want [before after], 5, 5", values, lso, end)
	}
	// Once ended, the transaction is no longer open: a second abort is
	// refused.
	if _, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", "31"); code != exitError || !strings.Contains(errOut, "producer id 31 has no open transaction in partition events-0") {
		t.Errorf("second abort: exit %d, stderr %q", code, errOut)
	}

	// Partition 1: producer 7 (epoch 3) opens a transaction at 0, then
	// producer 8 one at 1; aborting 7's leaves the LSO at 8's.
	abortAppend(t, dir, "--partition", "1", "--producer-id", "7", "--producer-epoch", "3", "--base-sequence", "0", "--transactional", "x")
	abortAppend(t, dir, "--partition", "1", "--producer-id", "8", "--producer-epoch", "0", "--base-sequence", "0", "--transactional", "y")
	out, errOut, code = inspectRun(t, "abort", "--dir", dir, "--partition", "1", "--producer-id", "7", "--json")
	if want := `{"producerId":7,"epoch":3,"txnFirstOffset":0,"markerOffset":2,"lastStableOffset":1}` + "\n"; code != exitOK || out != want || errOut != "" {
		t.Fatalf("abort --json: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
	if values, lso, end := readCommitted(t, dir, "events", 1); lso != 1 || end != 3 || len(values) != 0 {
		t.Errorf("partition 1: read_committed %q, LSO %d, end %d; want [], 1, 3", values, lso, end)
	}
}

// TestAbortNoOpenTransaction: a producer without an open transaction
// (an idempotent one, or one the store never saw) is refused with exit
// status 1, and nothing is written.
func TestAbortNoOpenTransaction(t *testing.T) {
	dir := t.TempDir()
	abortAppend(t, dir, "--producer-id", "31", "--producer-epoch", "0", "--base-sequence", "0", "x")
	before := segmentLog(t, dir, "events-0")
	for _, pid := range []string{"31", "32"} {
		out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", pid)
		want := "logstore abort: producer id " + pid + " has no open transaction in partition events-0: nothing to abort\n"
		if code != exitError || out != "" || errOut != want {
			t.Errorf("producer %s: exit %d, stdout %q, stderr %q; want 1 and %q", pid, code, out, errOut, want)
		}
	}
	if !bytes.Equal(segmentLog(t, dir, "events-0"), before) {
		t.Error("a refused abort changed the log")
	}
	if _, _, end := readCommitted(t, dir, "events", 0); end != 1 {
		t.Errorf("end offset %d after a refused abort, want 1", end)
	}
}

// TestAbortCoordinatorTransaction: a transaction of a producer id that
// transactions.db maps a transactional id to is its coordinator's to
// end, whether or not the id's record lists the partition: abort
// refuses it, naming the transactional id, unless --force.
func TestAbortCoordinatorTransaction(t *testing.T) {
	dir := t.TempDir()
	c, err := txncoord.Open(dir, &cliIDs{next: 500}, cliMarkers{}, txncoord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, id := range []string{"tx-a", "tx-b"} {
		pid, epoch, err := c.InitProducerID(id, 30*time.Second, -1, -1)
		if err != nil || pid != int64(500+i) || epoch != 0 {
			t.Fatalf("InitProducerID(%s): %d %d %v", id, pid, epoch, err)
		}
		// tx-a lists events-0, tx-b only events-1.
		if err := c.AddPartitionsDurable(id, pid, epoch, []txncoord.TopicPartition{{Topic: "events", Partition: int32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	abortAppend(t, dir, "--producer-id", "500", "--producer-epoch", "0", "--base-sequence", "0", "--transactional", "a")
	abortAppend(t, dir, "--producer-id", "501", "--producer-epoch", "0", "--base-sequence", "0", "--transactional", "b")
	before := segmentLog(t, dir, "events-0")

	out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", "500")
	want := `logstore abort: the transaction of producer id 500 in partition events-0 is transactional id "tx-a"'s (Ongoing in transactions.db): its coordinator (serve) will end it; --force aborts it anyway` + "\n"
	if code != exitError || out != "" || errOut != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
	}
	if !bytes.Equal(segmentLog(t, dir, "events-0"), before) {
		t.Fatal("a refused abort changed the log")
	}
	// tx-b does not list events-0: still its coordinator's (after a
	// crash serve aborts it and fences the producer).
	out, errOut, code = inspectRun(t, "abort", "--dir", dir, "--producer-id", "501")
	if code != exitError || out != "" || !strings.Contains(errOut, `transactional id "tx-b"'s (Ongoing in transactions.db)`) {
		t.Fatalf("abort of tx-b's producer on a partition it does not list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = inspectRun(t, "abort", "--dir", dir, "--producer-id", "501", "--force")
	if want := "aborted producerId=501 epoch=0 txnFirstOffset=1 markerOffset=2 lastStableOffset=0\n"; code != exitOK || out != want {
		t.Fatalf("abort --force of tx-b's producer: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	out, errOut, code = inspectRun(t, "abort", "--dir", dir, "--producer-id", "500", "--force")
	if want := "aborted producerId=500 epoch=0 txnFirstOffset=0 markerOffset=3 lastStableOffset=4\n"; code != exitOK || out != want {
		t.Fatalf("abort --force: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	// transactions.db was only read.
	txns, err := txncoord.Read(dir, time.Second)
	if err != nil || len(txns) != 2 || txns[0].State != "Ongoing" || txns[1].State != "Ongoing" {
		t.Fatalf("transactions.db after abort: %+v %v", txns, err)
	}
}

// TestAbortStoreInUse: while another opener holds the store, abort fails
// with the store's lock error and writes nothing.
func TestAbortStoreInUse(t *testing.T) {
	dir := abortFixture(t)
	before := segmentLog(t, dir, "events-0")
	held, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", "31", "--lock-timeout", "0")
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if code != exitError || out != "" || !strings.Contains(errOut, "store in use") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and the lock error", code, out, errOut)
	}
	if !bytes.Equal(segmentLog(t, dir, "events-0"), before) {
		t.Error("abort on a held store changed the log")
	}
	if _, lso, _ := readCommitted(t, dir, "events", 0); lso != 1 {
		t.Errorf("LSO %d, want 1: the transaction is still open", lso)
	}
}

// TestAbortBadInput: a missing partition is logstore.ErrNoPartition and
// no directory is made; a missing store is not made either; bad flags
// are refused, exit status 1.
func TestAbortBadInput(t *testing.T) {
	dir := abortFixture(t)
	out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--topic", "nope", "--producer-id", "31")
	if code != exitError || out != "" || !strings.Contains(errOut, "partition directory does not exist") {
		t.Errorf("missing partition: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	o := &abortOptions{partitionFlags: newPartitionFlags(), producerID: 31, producerIDSet: true}
	o.dir, o.topic, o.partition = dir, "events", 3
	if err := runAbort(o); !errors.Is(err, logstore.ErrNoPartition) {
		t.Errorf("missing partition: %v, want logstore.ErrNoPartition", err)
	}
	for _, tp := range []string{"nope-0", "events-3"} {
		if _, err := os.Stat(filepath.Join(dir, tp)); err == nil {
			t.Errorf("abort created %s", tp)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		args []string
		want string // stderr
	}{
		{[]string{"--dir", missing, "--producer-id", "31"}, "logstore abort: store directory " + missing + " does not exist\n"},
		{[]string{"--dir", dir}, "logstore abort: --producer-id is required: the producer whose transaction to abort\n"},
		{[]string{"--dir", dir, "--producer-id", "-1"}, "logstore abort: --producer-id -1: must be 0 or more\n"},
		{[]string{"--dir", dir, "--producer-id", "31", "--topic", "../x"}, `logstore abort: invalid topic or partition: topic "../x": character '/' at 2 is not one of [a-zA-Z0-9._-]` + "\n"},
		{[]string{"--dir", dir, "--producer-id", "31", "extra"}, `logstore abort: unexpected argument "extra": name the partition with --dir, --topic and --partition, the producer with --producer-id` + "\n"},
	} {
		out, errOut, code := inspectRun(t, append([]string{"abort"}, c.args...)...)
		if code != exitError || out != "" || errOut != c.want {
			t.Errorf("abort %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("abort created a store")
	}
	if _, lso, _ := readCommitted(t, dir, "events", 0); lso != 1 {
		t.Errorf("LSO %d, want 1: the transaction is still open", lso)
	}
}

// foreignMarkers are the markers of a store whose partition events-0
// holds a transaction of producer 99 open, which no transactional id
// maps to.
type foreignMarkers struct{ cliMarkers }

func (foreignMarkers) OpenTransactions() ([]txncoord.OpenTransaction, error) {
	return []txncoord.OpenTransaction{{TP: txncoord.TopicPartition{Topic: "events", Partition: 0}, ProducerID: 99, FirstOffset: 5}}, nil
}

// TestAbortNamedInCoordinatorWarning: the warning the coordinator logs
// at an open after a crash, for a transaction no transactional id maps
// to, names the command that ends it.
func TestAbortNamedInCoordinatorWarning(t *testing.T) {
	dir := t.TempDir()
	c, err := txncoord.Open(dir, &cliIDs{next: 500}, cliMarkers{}, txncoord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.InitProducerID("tx-a", 30*time.Second, -1, -1); err != nil {
		t.Fatal(err)
	}
	// The file as a crash now would leave it (no close record).
	data, err := os.ReadFile(filepath.Join(dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	if err := os.WriteFile(filepath.Join(crashed, txncoord.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.LockedBuffer{}
	c2, err := txncoord.Open(crashed, &cliIDs{next: 600}, foreignMarkers{}, txncoord.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := logs.String(); !strings.Contains(got, "no transactional id maps to") || !strings.Contains(got, "logstore abort") {
		t.Errorf("the coordinator's log does not name logstore abort:\n%s", got)
	}
}

// TestAbortCoordinatorEpoch: the marker carries the producer's current
// epoch and its last coordinator epoch in the partition (Kafka refuses
// a marker with a lower one), here 5 from the COMMIT that ended its
// previous transaction, written through the logstore package.
func TestAbortCoordinatorEpoch(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(testutil.ClientBatch(40, 2, 0, 2, 1_700_000_000_000, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendMarker(40, 2, true, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(testutil.ClientBatch(40, 2, 2, 1, 1_700_000_000_000, true)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := inspectRun(t, "abort", "--dir", dir, "--producer-id", "40")
	if want := "aborted producerId=40 epoch=2 txnFirstOffset=3 markerOffset=4 lastStableOffset=5\n"; code != exitOK || out != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	out, _, _ = inspectRun(t, "dump", "--deep-iteration", "--files", filepath.Join(dir, "events-0"))
	if !strings.Contains(out, " endTxnMarker: COMMIT coordinatorEpoch: 5\n") || !strings.Contains(out, " endTxnMarker: ABORT coordinatorEpoch: 5\n") {
		t.Errorf("dump:\n%s", out)
	}
	if values, lso, end := readCommitted(t, dir, "events", 0); lso != 5 || end != 5 || strings.Join(values, ",") != "p40-e2-s0-0,p40-e2-s0-1" {
		t.Errorf("read_committed %q, LSO %d, end %d; want the committed two, 5, 5", values, lso, end)
	}
}
