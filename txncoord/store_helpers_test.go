package txncoord_test

// Helpers of the tests that run the coordinator over a real
// logstore.Store (crash_store_test.go, markersync_deleted_test.go).

import (
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
)

// recent is a record timestamp the default producer expiry (1 day,
// against the clock) keeps.
var recent = time.Now().UnixMilli()

// txnDataBatch builds a transactional client batch of n records.
func txnDataBatch(pid int64, epoch int16, seq int32, n int) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, recent, true)
}

// openStore opens a store in dir and closes it when the test ends (a
// second Close is harmless).
func openStore(t testing.TB, dir string, opts logstore.Options) *logstore.Store {
	t.Helper()
	s, err := logstore.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPartition(t testing.TB, s *logstore.Store, topic string, partition int32) *logstore.Partition {
	t.Helper()
	p, err := s.Partition(topic, partition)
	if err != nil {
		t.Fatalf("Partition(%q, %d): %v", topic, partition, err)
	}
	return p
}

func mustAppend(t *testing.T, p *logstore.Partition, batch []byte) logstore.AppendResult {
	t.Helper()
	res, err := p.Append(batch)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
