package kafkaserver

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func describeTxns(c *rawClient, ids ...string) []kmsg.DescribeTransactionsResponseTransactionState {
	r := kmsg.NewPtrDescribeTransactionsRequest()
	r.TransactionalIDs = ids
	return c.do(r).(*kmsg.DescribeTransactionsResponse).TransactionStates
}

// TestDescribeTransactions: each transactional id with its producer id,
// epoch, state, timeout, start and partitions by topic, as the
// coordinator has it; an unknown id is 105, an empty one 42.
func TestDescribeTransactions(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("a", 2)
	ts.createTopic("b", 1)
	c := ts.dial()
	pid, epoch := initTxn(t, c, 4, "ongoing")
	before := time.Now().UnixMilli()
	if got := addPartitions(t, c, 3, "ongoing", pid, epoch, "b", 0, "a", 1, 0); got["a"][0] != 0 || got["a"][1] != 0 || got["b"][0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", got)
	}
	after := time.Now().UnixMilli()
	pid2, epoch2 := initTxn(t, c, 4, "empty")

	got := describeTxns(c, "ongoing", "empty", "nope", "")
	if len(got) != 4 {
		t.Fatalf("%d states for 4 ids: %+v", len(got), got)
	}
	o := got[0]
	if o.ErrorCode != 0 || o.TransactionalID != "ongoing" || o.ProducerID != pid || o.ProducerEpoch != epoch ||
		o.State != "Ongoing" || o.TimeoutMillis != 60000 || o.StartTimestamp < before || o.StartTimestamp > after {
		t.Fatalf("ongoing: %+v", o)
	}
	if len(o.Topics) != 2 || o.Topics[0].Topic != "a" || !slices.Equal(o.Topics[0].Partitions, []int32{0, 1}) ||
		o.Topics[1].Topic != "b" || !slices.Equal(o.Topics[1].Partitions, []int32{0}) {
		t.Fatalf("ongoing partitions: %+v", o.Topics)
	}
	e := got[1]
	if e.ErrorCode != 0 || e.ProducerID != pid2 || e.ProducerEpoch != epoch2 || e.State != "Empty" || e.StartTimestamp != -1 || len(e.Topics) != 0 {
		t.Fatalf("empty: %+v", e)
	}
	if got[2].ErrorCode != errTransactionalIDNotFound || got[2].TransactionalID != "nope" || got[2].ProducerID != -1 {
		t.Fatalf("unknown: %+v", got[2])
	}
	if got[3].ErrorCode != errInvalidRequest {
		t.Fatalf("empty id: %+v", got[3])
	}

	// Committed: CompleteCommit, no partitions, the start kept (as
	// Kafka's prepareComplete keeps txnStartTimestamp).
	if code := endTxn(t, c, 4, "ongoing", pid, epoch, true); code != 0 {
		t.Fatalf("EndTxn: %d", code)
	}
	got = describeTxns(c, "ongoing")
	if got[0].State != "CompleteCommit" || len(got[0].Topics) != 0 || got[0].StartTimestamp != o.StartTimestamp {
		t.Fatalf("committed: %+v", got[0])
	}
}
