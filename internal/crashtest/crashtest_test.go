package crashtest_test

import (
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
)

// TestTimelineIndex: Index finds a batch by its base offset, gives the
// length at the end, and -1 inside a batch or beyond the end.
func TestTimelineIndex(t *testing.T) {
	var tl crashtest.Timeline
	if tl.End() != 0 || tl.Index(0) != 0 {
		t.Fatalf("empty timeline: End %d, Index(0) %d", tl.End(), tl.Index(0))
	}
	tl = append(tl, crashtest.NewWritten(crashtest.ProducerBatch(1, 0, 0, 3, crashtest.Timestamp), 0))
	tl = append(tl, crashtest.NewWritten(crashtest.PlainBatch("a", "b"), 3))
	for off, want := range map[int64]int{0: 0, 1: -1, 3: 1, 4: -1, 5: 2, 6: -1} {
		if got := tl.Index(off); got != want {
			t.Errorf("Index(%d) = %d, want %d", off, got, want)
		}
	}
	if tl.End() != 5 || tl[1].PID != -1 || tl[0].Last != 2 {
		t.Fatalf("End %d, %+v", tl.End(), tl)
	}
}

// TestSmallWorkload runs a short workload and checks every crash point of
// it in one mode: the machinery works from a package of its own.
func TestSmallWorkload(t *testing.T) {
	w := crashtest.Workload{Name: "small", Steps: 8, Producers: 2, Sync: logstore.SyncAlways, SegBytes: 1024}
	r := crashtest.NewRun(t, w, 1)
	r.Run()
	st := r.CheckPoints(-1, []crashfs.Mode{crashfs.KeepAll}, 0)
	if st.Recorded == 0 || st.Checked == 0 {
		t.Fatalf("%+v: nothing checked", st)
	}
}
