package main

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/txncoord"
)

type cliIDs struct{ next int64 }

func (c *cliIDs) NewProducerID() (int64, error) { c.next++; return c.next - 1, nil }

type cliMarkers struct{}

func (cliMarkers) WriteMarkers(txncoord.Decision) (func() error, error) {
	return func() error { return nil }, nil
}

func (cliMarkers) TxnFirstOffsets(tps []txncoord.TopicPartition, _ int64) ([]int64, error) {
	return make([]int64, len(tps)), nil
}

func (cliMarkers) OpenTransactions() ([]txncoord.OpenTransaction, error) { return nil, nil }

// TestProducersOpenTransactions: with a transactions.db at the store
// root, producers lists the coordinator's open transactions after the
// partition's producers, as text and JSON, read-only; while a
// coordinator has the file open it fails with a clear error.
func TestProducersOpenTransactions(t *testing.T) {
	dir := t.TempDir()
	if out, errOut, code := inspectRun(t, "append", "--dir", dir, "--timestamp", farTimestamp, "--producer-id", "31", "--producer-epoch", "0", "--base-sequence", "0", "x"); code != exitOK {
		t.Fatalf("append: %s%s", out, errOut)
	}
	// No transactions.db: the producers only.
	out, _, code := inspectRun(t, "producers", "--dir", dir)
	if code != exitOK || strings.Contains(out, "transactionalId") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	start := time.UnixMilli(1_700_000_000_000)
	c, err := txncoord.Open(dir, &cliIDs{next: 500}, cliMarkers{}, txncoord.Config{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, id := range []string{"tx-b", "tx-a", "tx-done", "tx-empty"} {
		pid, epoch, err := c.InitProducerID(id, 30*time.Second, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if id == "tx-empty" {
			continue
		}
		if err := c.AddPartitions(id, pid, epoch, []txncoord.TopicPartition{{Topic: "orders", Partition: 1}, {Topic: "events", Partition: 0}}); err != nil {
			t.Fatal(err)
		}
		if id == "tx-done" {
			if err := c.EndTxn(id, pid, epoch, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The coordinator has the file: a clear error, exit 1.
	_, errOut, code := inspectRun(t, "producers", "--dir", dir)
	if code != exitError || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, txncoord.FileName) {
		t.Fatalf("with the coordinator open: exit %d, stderr %q", code, errOut)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := txncoord.Read(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "producerId=31 epoch=0 lastSequence=0 lastTimestamp=4102444800000 txnFirstOffset=none coordinatorEpoch=-1 window=[0..0@0..0 ts=4102444800000]\n" +
		"transactionalId=tx-a producerId=501 epoch=0 state=Ongoing start=1700000000000 timeoutMs=30000 partitions=[events-0, orders-1]\n" +
		"transactionalId=tx-b producerId=500 epoch=0 state=Ongoing start=1700000000000 timeoutMs=30000 partitions=[events-0, orders-1]\n"
	out, errOut, code = inspectRun(t, "producers", "--dir", dir)
	if code != exitOK || out != want {
		t.Fatalf("exit %d, stderr %q:\n%swant:\n%s", code, errOut, out, want)
	}
	out, _, code = inspectRun(t, "producers", "--dir", dir, "--json")
	wantJSON := `{"transactionalId":"tx-a","producerId":501,"epoch":0,"state":"Ongoing","startMs":1700000000000,"timeoutMs":30000,"partitions":[{"topic":"events","partition":0},{"topic":"orders","partition":1}]}` + "\n"
	if code != exitOK || !strings.HasSuffix(strings.SplitAfterN(out, "\n", 2)[1], wantJSON+strings.Replace(wantJSON, `"tx-a","producerId":501`, `"tx-b","producerId":500`, 1)) {
		t.Fatalf("--json: exit %d:\n%s", code, out)
	}
	// Read-only: the file says the same (no coordinator epoch bump is
	// visible here, but nothing was finished or changed).
	after, err := txncoord.Read(dir, time.Second)
	if err != nil || len(after) != len(before) {
		t.Fatalf("after producers: %v %v", after, err)
	}
	for i := range after {
		if after[i].State != before[i].State || after[i].Epoch != before[i].Epoch {
			t.Fatalf("producers changed %+v to %+v", before[i], after[i])
		}
	}
	if !errors.Is(func() error { _, err := txncoord.Read(t.TempDir(), time.Second); return err }(), fs.ErrNotExist) {
		t.Fatal("Read of a missing file is not fs.ErrNotExist")
	}
}
