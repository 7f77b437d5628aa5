package txncoord_test

import (
	"errors"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// txnBatch is a transactional batch of n records.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, time.Now().UnixMilli(), true)
}

// TestStoreMarkers: StoreMarkers ends the open transaction of a real
// partition durably, skips a partition that does not exist (without
// making it), and reports a marker the partition refuses.
func TestStoreMarkers(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(txnBatch(4, 2, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if lso := p.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO with an open transaction: %d", lso)
	}
	m := txncoord.StoreMarkers(s)
	write := func(d txncoord.Decision) error {
		sync, err := m.WriteMarkers(d)
		if err != nil {
			return err
		}
		return sync()
	}
	if err := write(txncoord.Decision{Partitions: []txncoord.TopicPartition{{Topic: "t", Partition: 0}}, ProducerID: 4, Epoch: 2, Commit: true, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if lso, end := p.LastStableOffset(), p.EndOffset(); lso != end || end != 4 {
		t.Fatalf("after the marker: LSO %d, end %d; want 4, 4", lso, end)
	}
	// A partition that does not exist: skipped, not made.
	if err := write(txncoord.Decision{Partitions: []txncoord.TopicPartition{{Topic: "gone", Partition: 3}}, ProducerID: 4, Epoch: 2, CoordinatorEpoch: 1}); err != nil {
		t.Fatalf("missing partition: %v", err)
	}
	if _, err := s.ExistingPartition("gone", 3); !errors.Is(err, logstore.ErrNoPartition) {
		t.Fatalf("the missing partition was made: %v", err)
	}
	// Refused: an older producer epoch.
	var refused *logstore.RefusedError
	if err := write(txncoord.Decision{Partitions: []txncoord.TopicPartition{{Topic: "t", Partition: 0}}, ProducerID: 4, Epoch: 1, CoordinatorEpoch: 1}); !errors.As(err, &refused) {
		t.Fatalf("older epoch marker: %v, want a *logstore.RefusedError", err)
	}
}
