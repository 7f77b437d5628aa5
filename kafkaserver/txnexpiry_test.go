package kafkaserver

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
)

// TestTransactionalIDExpiration: Config.TransactionalIDExpiration
// reaches the coordinator. An idle id expires (counted in
// logstore_transactional_ids_expired_total): DescribeTransactions
// answers 105 for it as for an unknown id, ListTransactions leaves it
// out, and its next InitProducerId gets a new producer id at epoch 0.
// (That an id with a transaction ongoing stays is txncoord's test: with
// the real clock and an expiration of a millisecond, an id could expire
// between its InitProducerId and its AddPartitionsToTxn.)
func TestTransactionalIDExpiration(t *testing.T) {
	m := metrics.New(prometheus.NewRegistry())
	ts := startServer(t, logstore.Options{}, Config{Metrics: m, TransactionCheckInterval: time.Millisecond, TransactionalIDExpiration: time.Millisecond})
	c := ts.dial()
	old, _ := initTxn(t, c, 4, "idle")
	// Wait for the scan (every millisecond) to expire it.
	for deadline := time.Now().Add(time.Minute); m.TransactionalIDsExpired() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle id did not expire within a minute")
		}
	}
	got := describeTxns(c, "idle")
	if got[0].ErrorCode != errTransactionalIDNotFound || got[0].ProducerID != -1 {
		t.Fatalf("expired id: %+v", got[0])
	}
	if ids := listedIDs(listTxns(t, c, 0, nil, nil, 0)); len(ids) != 0 {
		t.Fatalf("ListTransactions: %v", ids)
	}
	if pid2, epoch2 := initTxn(t, c, 4, "idle"); pid2 <= old || epoch2 != 0 {
		t.Fatalf("the returning id: producer id %d epoch %d (it had %d)", pid2, epoch2, old)
	}
}
