package logstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore"
)

// TestMayHoldOpenTransactions: until the store is marked tracked every
// partition may hold a transaction; after, only one a transactional
// batch marked, and one never opened by logstore that has a log (a
// Kafka directory); not one of idempotent batches only, nor an empty
// directory. The mark survives a reopen.
func TestMayHoldOpenTransactions(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	txn, err := s.Partition("txn", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, txn, txnDataBatch(7, 0, 0, 2))
	idem, err := s.Partition("idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, idem, concBatch(8, 0, 1))
	for _, d := range []string{"empty-0", "kafka-0"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kafka-0", "00000000000000000000.log"), concBatch(9, 0, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := map[string]logstore.PartitionID{}
	for _, n := range []string{"txn", "idem", "empty", "kafka"} {
		ids[n] = logstore.PartitionID{Topic: n, Partition: 0}
	}
	for n, id := range ids {
		if !s.MayHoldOpenTransactions(id) {
			t.Errorf("%s: not tracked yet, and already ruled out", n)
		}
	}
	if err := s.SetTransactionsTracked(); err != nil {
		t.Fatal(err)
	}
	s = reopenStore(t, s, dir)
	for n, want := range map[string]bool{"txn": true, "idem": false, "empty": false, "kafka": true} {
		if got := s.MayHoldOpenTransactions(ids[n]); got != want {
			t.Errorf("%s: MayHoldOpenTransactions %v, want %v", n, got, want)
		}
	}
}
