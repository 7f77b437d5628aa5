package segment_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// TestVerifyUndecodableRecords: a whole batch whose CRC is valid but
// whose records cannot be decoded (the header claims 2^31-1 records, the
// section holds 2) is ProblemCorrupt at its position, naming the record;
// it counts as damage, so Batch stops before it. As the last batch of an
// unclean log it is still no torn tail: the next open keeps it.
func TestVerifyUndecodableRecords(t *testing.T) {
	for _, clean := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "p-0")
		l, _ := open(t, dir, segment.Config{})
		good := batch(t, 3, 10, 1700000000000)
		poison := recordbatch.Batch(testutil.PoisonBatches(0)[1].Batch)
		var pos, seg int64
		for i, b := range []recordbatch.Batch{good, poison, batch(t, 1, 10, 1700000000000)} {
			if !clean && i == 2 {
				break // the poison batch ends the active segment
			}
			info, err := l.Append(b)
			if err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				// Its offsets do not fit the first segment: it rolls.
				pos, seg = info.Position, info.Segment
			}
		}
		if clean {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			// Open, as a killed process leaves it once the roll's
			// background work is done: no clean mark.
			if err := l.Flushed(); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
		}
		got, stats, seen := verifyBoth(t, dir)
		logName := filepath.Join(dir, fmt.Sprintf("%020d.log", seg))
		checkProblems(t, got, wantProblem{segment.ProblemCorrupt, logName, pos,
			"the records of the batch of offsets 3..2147483649 cannot be decoded: invalid record: record 2 at byte 79 of the batch: the header claims 2147483647 records, the records section holds 2"})
		wantRecords := int64(3) // the poison batch's 2^31-1 are not counted
		if clean {
			wantRecords = 4
		}
		if !stats.Damaged || stats.TornBytes != 0 || stats.EndOffset != 3 || len(seen) != 1 || stats.Records != wantRecords {
			t.Fatalf("clean %t: stats %+v, %d batches seen", clean, stats, len(seen))
		}
	}
}
