package segment_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// TestFrameTailEdges: a tail of exactly 17 bytes ends Kafka's iterator
// quietly whatever its length field says (a torn write), while 18 bytes
// with a length below 14 are corruption. Open and verify frame the same.
func TestFrameTailEdges(t *testing.T) {
	for _, tc := range []struct {
		tail   int
		reason error
		detail string
	}{
		{17, recordbatch.ErrTruncated, "17 bytes at the end of the file, too few for a batch header"},
		{18, recordbatch.ErrBatchTooSmall, "batch length 0 is below the minimum 14"},
	} {
		cfg := segment.Config{}
		dir, sizes, segs := crashedLog(t, cfg, 3)
		modify(t, filepath.Join(dir, name(segs[0], ".log")), func(b []byte) []byte { return append(b, make([]byte, tc.tail)...) })
		problems, _, _ := verifyBoth(t, dir)
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p.Detail, tc.detail)
		}
		if !found {
			t.Errorf("%d-byte tail: verify found\n%swant %q", tc.tail, problemsText(problems), tc.detail)
		}
		rep := reopenAndCheck(t, dir, cfg, len(sizes))
		if rep.TruncatedBytes != int64(tc.tail) || !errors.Is(rep.Reason, tc.reason) {
			t.Errorf("%d-byte tail: report %+v, want %d bytes cut for %v", tc.tail, rep, tc.tail, tc.reason)
		}
	}
}
