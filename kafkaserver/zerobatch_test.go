package kafkaserver

import (
	"testing"

	"github.com/logstore/logstore"
)

// zeroBatchRecords is the number of records of zeroBatchPartition's batch.
const zeroBatchRecords = 16

// zeroBatchPartition starts a server over a store that never syncs, with
// topic (one partition), and returns it, its partition and a batch of
// zeroBatchRecords values of 1000 zero bytes each (16 KiB), which the
// caller appends as often as it needs.
func zeroBatchPartition(t testing.TB, topic string) (*testServer, *logstore.Partition, []byte) {
	t.Helper()
	ts := startServer(t, logstore.Options{Sync: logstore.SyncNever}, Config{})
	ts.createTopic(topic, 1)
	part, err := ts.store.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	values := make([]string, zeroBatchRecords)
	for i := range values {
		values[i] = string(make([]byte, 1000))
	}
	return ts, part, batchOf(-1, 0, 0, values...)
}
