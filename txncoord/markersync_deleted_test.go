package txncoord_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/txncoord"
)

// gatedMarkers is txncoord.StoreMarkers whose syncs wait until gate is
// closed.
type gatedMarkers struct {
	txncoord.Markers
	gate chan struct{}
}

func (m gatedMarkers) WriteMarkers(d txncoord.Decision) (func() error, error) {
	sync, err := m.Markers.WriteMarkers(d)
	if err != nil {
		return nil, err
	}
	return func() error {
		<-m.gate
		return sync()
	}, nil
}

// TestMarkerSyncAfterTopicDeleted: EndTxn answers once its markers are
// written, and their sync runs after. A topic deleted in between (its
// partitions closed, their directories gone) has no marker left to make
// durable, as WriteMarkers skips a deleted partition: the sync must not
// fail on it forever, or every later write of the transactional id
// (here InitProducerID) fails until the coordinator is opened again. Nor
// when the topic is created again before the sync: the new partition
// never held the marker.
func TestMarkerSyncAfterTopicDeleted(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreated=%v", recreate), func(t *testing.T) { testMarkerSyncAfterTopicDeleted(t, recreate) })
	}
}

func testMarkerSyncAfterTopicDeleted(t *testing.T, recreate bool) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncAlways})
	p := openPartition(t, s, "gone", 0)
	markers := gatedMarkers{Markers: txncoord.StoreMarkers(s), gate: make(chan struct{})}
	c, err := txncoord.Open(dir, &coordIDs{next: 1}, markers, txncoord.Config{CheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid, epoch, err := c.InitProducerID("t", time.Minute, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	tp := txncoord.TopicPartition{Topic: "gone", Partition: 0}
	if err := c.AddPartitions("t", pid, epoch, []txncoord.TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	release, err := c.BeginProduce("t", pid, epoch, tp)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, p, txnDataBatch(pid, epoch, 0, 2))
	release()
	if err := c.EndTxn("t", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if recreate {
		openPartition(t, s, "gone", 0)
	}
	close(markers.gate) // the markers' sync runs now
	if _, _, err := c.InitProducerID("t", time.Minute, pid, epoch); err != nil {
		t.Fatalf("InitProducerID after the topic of the last decision was deleted: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
