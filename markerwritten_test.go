package logstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/txncoord"
)

// TestAppendMarkerWritten: the marker is checked and applied as
// AppendMarker does, but returns before it is durable: its transaction
// stays below the last stable offset until SyncTo makes the marker
// durable.
func TestAppendMarkerWritten(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncAlways, logstore.SyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode})
			p := openPartition(t, s, "txn", 0)
			mustAppend(t, p, txnDataBatch(1, 3, 0, 2)) // 0-1
			if err := p.SyncTo(p.EndOffset()); err != nil {
				t.Fatal(err)
			}
			if _, err := p.AppendMarkerWritten(1, 2, false, 5); !errors.Is(err, logstore.ErrFenced) {
				t.Fatalf("older producer epoch: %v", err)
			}
			res, err := p.AppendMarkerWritten(1, 3, false, 5)
			if err != nil {
				t.Fatal(err)
			}
			if res.BaseOffset != 2 || res.LastOffset != 2 || p.EndOffset() != 3 {
				t.Fatalf("marker at %+v, end %d", res, p.EndOffset())
			}
			if mode == logstore.SyncAlways {
				// Not synced: the transaction is not stable yet. (Under
				// SyncNever a written offset counts as durable.)
				if d := p.DurableEnd(); d > res.LastOffset {
					t.Fatalf("durable end %d: the marker was synced", d)
				}
				wantLSO(t, p, 0)
			}
			// Applied: the abort is in the .txnindex already.
			if got, _ := p.AbortedTransactions(0, 3); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 {
				t.Fatalf("aborted transactions %+v", got)
			}
			if err := p.SyncTo(res.LastOffset + 1); err != nil {
				t.Fatal(err)
			}
			wantLSO(t, p, 3)
		})
	}
}

// TestStoreMarkersWriteAllThenSync: txncoord.StoreMarkers, with several
// partitions: every
// marker is written before the first of their syncs (one wait for all,
// not a write and a sync per partition), and each is durable when
// WriteMarkers returns.
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
	s, err := logstore.Open(root, logstore.Options{Sync: logstore.SyncAlways, LockTimeout: -1}.WithFS(fs))
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
