package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/metrics"
)

// txnBatch is a transactional batch of n records.
func txnBatch(pid int64, seq int32, n int) []byte {
	return testutil.ClientBatch(pid, 0, seq, n, time.Now().UnixMilli(), true)
}

// TestLSOLag: the lag is the high watermark minus the last stable
// offset: 0 with no transaction open, the offsets from the open
// transaction's first one to the high watermark while it is open, 0
// again once its marker is written.
func TestLSOLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	s := openStore(t, t.TempDir(), m)
	p, err := s.Partition("txns", 0)
	if err != nil {
		t.Fatal(err)
	}
	lag := func(want float64) {
		t.Helper()
		if got := sample(t, reg, "logstore_partition_lso_lag_offsets", "partition=0", "topic=txns"); got != want {
			t.Fatalf("LSO lag %v, want %v (HWM %d, LSO %d)", got, want, p.DurableEnd(), p.LastStableOffset())
		}
	}
	if _, err := p.Append(producerBatch(1, 0, 0, 2)); err != nil { // 0..1
		t.Fatal(err)
	}
	lag(0)
	if _, err := p.Append(txnBatch(2, 0, 3)); err != nil { // 2..4: LSO 2
		t.Fatal(err)
	}
	if _, err := p.Append(producerBatch(1, 0, 2, 1)); err != nil { // 5
		t.Fatal(err)
	}
	lag(4)
	if _, err := p.AppendMarker(2, 0, true, 0); err != nil { // 6
		t.Fatal(err)
	}
	lag(0)
}
