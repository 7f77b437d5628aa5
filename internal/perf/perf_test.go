package perf

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// The batch shape matches the real builder: a full batch fits
// --batch-size, and one more record would not.
func TestPerfRecordsPerBatch(t *testing.T) {
	for _, tc := range []struct{ valueSize, batchSize int }{
		{100, 16384}, {1, 16384}, {1, 1}, {10, 200}, {1000, 1000}, {500, 1 << 20}, {100, 61 + 64*109},
	} {
		n := RecordsPerBatch(tc.valueSize, tc.batchSize)
		value := bytes.Repeat([]byte{'x'}, tc.valueSize)
		size := func(n int64) int {
			bld := recordbatch.NewBuilder(0)
			for range n {
				if err := bld.Append(1700000000000, nil, value, nil); err != nil {
					t.Fatal(err)
				}
			}
			b, err := bld.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			return len(b)
		}
		if n < 1 || (n > 1 && size(n) > tc.batchSize) || size(n+1) <= tc.batchSize {
			t.Errorf("value %d, batch size %d: %d records per batch, of %d bytes; %d records make %d",
				tc.valueSize, tc.batchSize, n, size(n), n+1, size(n+1))
		}
	}
	if max := MaxRecordSize(); RecordsPerBatch(max, 1<<20+12) != 1 {
		t.Errorf("max record size %d", max)
	}
}

// A refused or duplicate append stops the producer with an error that
// says so.
func TestPerfSendRefused(t *testing.T) {
	store, err := logstore.Open(t.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p, err := store.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	var win window
	value := []byte("v")
	pr := &producer{id: 7, seq: 3}
	if err := pr.send(p, recordbatch.CodecNone, value, 2, &win); !errors.Is(err, logstore.ErrOutOfOrder) ||
		!strings.Contains(err.Error(), "producer 7, batch of 2 records at sequence 3") {
		t.Errorf("an unknown producer at sequence 3: %v", err)
	}
	pr.seq = 0
	if err := pr.send(p, recordbatch.CodecNone, value, 2, &win); err != nil {
		t.Fatal(err)
	}
	pr.seq = 0
	if err := pr.send(p, recordbatch.CodecNone, value, 2, &win); err == nil || !strings.Contains(err.Error(), "DUPLICATE (offsets 0 to 1)") {
		t.Errorf("a retry: %v", err)
	}
	if pr.records != 2 || pr.batches != 1 || len(pr.latencies) != 1 {
		t.Errorf("counted %d records in %d batches, %d latencies; want the one accepted batch", pr.records, pr.batches, len(pr.latencies))
	}

	// The ids of a run start above every id the partition remembers.
	if id, err := firstProducerID(p, 4); id != 8 || err != nil {
		t.Errorf("first producer id %d, %v; want 8", id, err)
	}
	big := &producer{id: 1<<63 - 2}
	if err := big.send(p, recordbatch.CodecNone, value, 1, &win); err != nil {
		t.Fatal(err)
	}
	if _, err := firstProducerID(p, 4); err == nil || !strings.Contains(err.Error(), "no 4 ids above it are free") {
		t.Errorf("no ids left: %v", err)
	}
}

func TestPerfPercentile(t *testing.T) {
	sorted := make(samples, 1000)
	for i := range sorted {
		sorted[i] = time.Duration(i + 1)
	}
	for _, tc := range []struct {
		perMille int64
		want     time.Duration
	}{{500, 500}, {990, 990}, {999, 999}, {1000, 1000}, {1, 1}, {0, 1}} {
		if got := sorted.percentile(tc.perMille); got != tc.want {
			t.Errorf("percentile(%d) of 1..1000 = %d, want %d", tc.perMille, got, tc.want)
		}
	}
	three := samples{10, 20, 30}
	for _, tc := range []struct {
		perMille int64
		want     time.Duration
	}{{500, 20}, {990, 30}, {999, 30}, {1000, 30}, {333, 10}, {334, 20}} {
		if got := three.percentile(tc.perMille); got != tc.want {
			t.Errorf("percentile(%d) of 10,20,30 = %d, want %d", tc.perMille, got, tc.want)
		}
	}
	if got := (samples{}).percentile(500); got != 0 {
		t.Errorf("percentile of nothing = %d", got)
	}
	if got := three.avgMs(); got != 20e-6 {
		t.Errorf("avg %v ms", got)
	}
}
