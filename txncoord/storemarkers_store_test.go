package txncoord_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/txncoord"
)

// TestStoreMarkersWriteAllThenSync: txncoord.StoreMarkers, with several
// partitions of a real store. Every marker is written before the first
// of their syncs (one wait for all, not a write and a sync per
// partition), and each is durable when WriteMarkers returns.
func TestStoreMarkersWriteAllThenSync(t *testing.T) {
	root := t.TempDir()
	tps := []txncoord.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
	for _, tp := range tps {
		// producer-snapshots.db is on the real OS.
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs := crashfs.New(root)
	s, err := logstore.Open(root, crashtest.WithFS(logstore.Options{Sync: logstore.SyncAlways, LockTimeout: -1}, fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parts := make([]*logstore.Partition, len(tps))
	for i, tp := range tps {
		if parts[i], err = s.Partition(tp.Topic, tp.Partition); err != nil {
			t.Fatal(err)
		}
		if _, err := parts[i].Append(txnDataBatch(4, 2, 0, 3)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		ops []crashfs.Op
	)
	fs.SetHook(func(op crashfs.Op) {
		mu.Lock()
		ops = append(ops, op)
		mu.Unlock()
	})
	sync, err := txncoord.StoreMarkers(s).WriteMarkers(txncoord.Decision{Partitions: tps, ProducerID: 4, Epoch: 2, Commit: true, CoordinatorEpoch: 1})
	if err == nil {
		err = sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	fs.SetHook(nil)
	lastWrite, firstSync := -1, -1
	for i, op := range ops {
		if filepath.Ext(op.Path) != ".log" {
			continue
		}
		switch op.Kind {
		case crashfs.OpWrite:
			lastWrite = i
		case crashfs.OpSync:
			if firstSync < 0 {
				firstSync = i
			}
		}
	}
	if lastWrite < 0 || firstSync < lastWrite {
		t.Fatalf("a marker was synced before the last was written: %v", ops)
	}
	for i, p := range parts {
		if lso, d, end := p.LastStableOffset(), p.DurableEnd(), p.EndOffset(); end != 4 || d != end || lso != end {
			t.Fatalf("partition %d: LSO %d, durable end %d, end %d; want 4", i, lso, d, end)
		}
	}
}
