package txncoord_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// TestStoreMarkersDueAndOpen: on a real store, OpenTransactions opens
// every partition and lists the transactions open in each, and a
// decision with first offsets writes its marker only where it is due:
// not where the producer's open transaction is a later one.
func TestStoreMarkersDueAndOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p0, err := s.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := s.Partition("t", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Partition("t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p0.Append(txnBatch(4, 2, 0, 3)); err != nil {
		t.Fatal(err)
	}
	// In t-1 the decided transaction ended, and a later one began at 4.
	if _, err := p1.Append(txnBatch(4, 2, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.AppendMarker(4, 2, true, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Append(txnBatch(4, 2, 3, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = logstore.Open(dir, logstore.Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := txncoord.StoreMarkers(s)
	open, err := m.OpenTransactions()
	if err != nil {
		t.Fatal(err)
	}
	want := []txncoord.OpenTransaction{{TP: txncoord.TopicPartition{Topic: "t", Partition: 0}, ProducerID: 4, FirstOffset: 0}, {TP: txncoord.TopicPartition{Topic: "t", Partition: 1}, ProducerID: 4, FirstOffset: 4}}
	if !slices.Equal(open, want) {
		t.Fatalf("open transactions %+v, want %+v", open, want)
	}
	tps := []txncoord.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
	sync, err := m.WriteMarkers(txncoord.Decision{Partitions: tps, FirstOffsets: []int64{0, 0, -1}, ProducerID: 4, Epoch: 2, Commit: true, CoordinatorEpoch: 2})
	if err == nil {
		err = sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	for _, tp := range tps {
		p, err := s.ExistingPartition(tp.Topic, tp.Partition)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, p.EndOffset())
	}
	// t-0: the marker after its 3 records; t-1: none (its later
	// transaction stays open); t-2: a marker that ends nothing.
	if !slices.Equal(ends, []int64{4, 6, 1}) {
		t.Fatalf("end offsets %v, want [4 6 1]", ends)
	}
	if open := s.OpenPartitions(); len(open) != 3 {
		t.Fatalf("%d partitions open", len(open))
	}
}

// TestOpenTransactionsBeyondOpenBound: the scan of every partition's
// open transactions works in a store that keeps fewer partitions open
// than it holds (each partition is let idle once looked at), and finds
// the open transaction among them.
func TestOpenTransactionsBeyondOpenBound(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		p, err := s.Partition("many", int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 33 {
			if _, err := p.Append(txnBatch(9, 0, 0, 2)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = logstore.Open(dir, logstore.Options{MaxOpenPartitions: 4, EvictIdle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	open, err := txncoord.StoreMarkers(s).OpenTransactions()
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].TP != (txncoord.TopicPartition{Topic: "many", Partition: 33}) || open[0].ProducerID != 9 {
		t.Fatalf("open transactions %+v, want producer 9's on many-33", open)
	}
	if n := len(s.OpenPartitions()); n > 4 {
		t.Errorf("%d partitions open after the scan, the bound is 4", n)
	}
}

// TestOpenTransactionsOpensOnlyMarked: the first scan opens every
// partition (the store is not tracked yet); the scans after it open only
// the partition a transactional batch marked. A store written before
// the marks (the mark removed here) still has its open transaction
// found, and marked, by the first scan.
func TestOpenTransactionsOpensOnlyMarked(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		p, err := s.Partition("mixed", int32(i))
		if err != nil {
			t.Fatal(err)
		}
		batch := testutil.ClientBatch(int64(100+i), 0, 0, 1, time.Now().UnixMilli(), false)
		if i == 7 {
			batch = txnBatch(9, 0, 0, 1)
		}
		if _, err := p.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// As a store of before the marks: none.
	if err := os.Remove(filepath.Join(dir, "mixed-7", "logstore.transactional")); err != nil {
		t.Fatal(err)
	}
	scan := func() (int, []txncoord.OpenTransaction) {
		t.Helper()
		s, err := logstore.Open(dir, logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		open, err := txncoord.StoreMarkers(s).OpenTransactions()
		if err != nil {
			t.Fatal(err)
		}
		return len(s.OpenPartitions()), open
	}
	for i, want := range []int{20, 1, 1} {
		opened, open := scan()
		if opened != want {
			t.Errorf("scan %d opened %d partitions, want %d", i, opened, want)
		}
		if len(open) != 1 || open[0].TP.Partition != 7 || open[0].ProducerID != 9 {
			t.Errorf("scan %d found %+v, want producer 9's on mixed-7", i, open)
		}
	}
}
