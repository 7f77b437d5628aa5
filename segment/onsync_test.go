package segment_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/logstore/logstore/segment"
)

// syncRecorder is a Config.OnSync that keeps what it is given.
type syncRecorder struct {
	mu    sync.Mutex
	infos []segment.SyncInfo
}

func (r *syncRecorder) record(i segment.SyncInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.infos = append(r.infos, i)
}

func (r *syncRecorder) take() []segment.SyncInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.infos
	r.infos = nil
	return out
}

// TestOnSyncReportsEachLeaderSync: each fsync of group commit is
// reported once, with the batches and bytes appended since the previous
// one; a SyncTo that finds its end durable reports nothing; a failed
// fsync is reported with its error.
func TestOnSyncReportsEachLeaderSync(t *testing.T) {
	var rec syncRecorder
	h := newHoldFS()
	l, _ := open(t, filepath.Join(t.TempDir(), "p-0"), segment.Config{FS: h, OnSync: rec.record})
	defer l.Close()
	appendN := func(n int) (bytes int64) {
		for i := range n {
			b := batch(t, 1+i%3, 40, 1700000000000+int64(i))
			bytes += int64(len(b))
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		return bytes
	}

	size := appendN(3)
	if err := l.SyncTo(l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if len(got) != 1 || got[0].Batches != 3 || got[0].Bytes != size || got[0].Err != nil || got[0].Duration < 0 {
		t.Fatalf("after 3 appends and a sync: %+v; want one sync of 3 batches, %d bytes", got, size)
	}
	if err := l.SyncTo(l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a SyncTo of a durable end reported %+v", got)
	}

	size = appendN(2)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0].Batches != 2 || got[0].Bytes != size {
		t.Fatalf("after 2 more appends and a sync: %+v; want one sync of 2 batches, %d bytes", got, size)
	}

	size = appendN(1)
	h.fail.Store(true)
	if err := l.SyncTo(l.EndOffset()); !errors.Is(err, segment.ErrPoisoned) {
		t.Fatalf("SyncTo with a failing fsync: %v", err)
	}
	if got := rec.take(); len(got) != 1 || !errors.Is(got[0].Err, errSyncFault) || got[0].Batches != 1 || got[0].Bytes != size {
		t.Fatalf("a failed fsync reported %+v; want its error, 1 batch, %d bytes", got, size)
	}
}

// TestRecoveryReportsScannedFigures: an unclean open says how many
// batches and bytes its scan kept, beside what it cut.
func TestRecoveryReportsScannedFigures(t *testing.T) {
	cfg := segment.Config{}
	dir, sizes, segs := crashedLog(t, cfg, 10)
	garbage := bytes.Repeat([]byte{0x5a}, 100)
	modify(t, filepath.Join(dir, name(segs[0], ".log")), func(b []byte) []byte { return append(b, garbage...) })
	var total int64
	for _, n := range sizes {
		total += int64(n)
	}
	l, rep := open(t, dir, cfg)
	defer l.Close()
	if rep.Clean || rep.ScannedBatches != int64(len(sizes)) || rep.ScannedBytes != total || rep.TruncatedBytes != int64(len(garbage)) {
		t.Fatalf("report %+v; want %d batches and %d bytes scanned, %d cut", rep, len(sizes), total, len(garbage))
	}
}
