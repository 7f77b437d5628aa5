package segment_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logstore/logstore/segment"
)

// TestLogTxnIndex: entries go to the active segment, in order, each one
// inside it; AbortedTxns follows Kafka's collectAbortedTxns; a reopen
// reads them back.
func TestLogTxnIndex(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, segment.Config{SegmentBytes: 400})
	for range 3 {
		if _, err := l.Append(batch(t, 1, 10, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	e1 := segment.AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 1}
	if err := l.AppendAbortedTxn(segment.AbortedTxn{ProducerID: 1, LastOffset: 3}); err == nil {
		t.Fatal("an entry past the log end was taken")
	}
	// The refusal poisoned the log: refusals are bugs of the caller.
	l.Close()
	l, _ = open(t, dir, segment.Config{SegmentBytes: 400})
	if err := l.AppendAbortedTxn(e1); err != nil {
		t.Fatal(err)
	}
	// The next segment.
	next := l.EndOffset()
	for l.Segments()[len(l.Segments())-1] == 0 {
		next = l.EndOffset()
		if _, err := l.Append(batch(t, 1, 10, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	e2 := segment.AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: next, LastStableOffset: next + 1}
	if err := l.AppendAbortedTxn(e2); err != nil {
		t.Fatal(err)
	}
	check := func(l *segment.Log) {
		t.Helper()
		for _, c := range []struct {
			from, upper int64
			want        []segment.AbortedTxn
		}{
			{0, next + 1, []segment.AbortedTxn{e1, e2}},
			{0, 2, []segment.AbortedTxn{e1, e2}}, // e1's LSO 1 < 2: the search goes on, and e2 began at 1
			{3, next + 1, []segment.AbortedTxn{e2}},
			{0, 1, []segment.AbortedTxn{e1}}, // complete at e1 (LSO 1 >= 1)
		} {
			got, err := l.AbortedTxns(c.from, c.upper)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("AbortedTxns(%d, %d) = %+v, want %+v", c.from, c.upper, got, c.want)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rep := open(t, dir, segment.Config{SegmentBytes: 400})
	defer l.Close()
	if len(rep.DamagedTxnIndexes) != 0 {
		t.Fatalf("damaged %v", rep.DamagedTxnIndexes)
	}
	check(l)
	data, err := os.ReadFile(filepath.Join(dir, segmentName(next)+".txnindex"))
	if err != nil || !bytes.Equal(data, segment.AppendTxnEntry(nil, e2)) {
		t.Fatalf("segment %d's .txnindex = % x, %v", next, data, err)
	}
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }
