package kafkaserver

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/groupcoord"
)

func addOffsetsToTxn(c *rawClient, v int16, id string, pid int64, epoch int16, group string) int16 {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version = v
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, group
	return c.do(r).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func txnOffsetCommit(c *rawClient, v int16, id string, pid int64, epoch int16, group string, offset int64) int16 {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = v
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, group
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return c.do(r).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func fetchOffset(c *rawClient, group string, requireStable bool) (int64, int16) {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group, r.RequireStable = group, requireStable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	r.Topics = append(r.Topics, rt)
	p := c.do(r).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// txnOffsetsVersionReq is a request of AddOffsetsToTxn (25) or
// TxnOffsetCommit (28) at version v in a transaction of its own, for
// TestEveryAdvertisedVersion.
func txnOffsetsVersionReq(t *testing.T, c *rawClient, key, v int16) (kmsg.Request, func(kmsg.Response) int16) {
	id := fmt.Sprintf("offsets-%d-v%d", key, v)
	pid, epoch := initTxn(t, c, 4, id)
	if key == 25 {
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, "vtxn"
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }
	}
	if code := addOffsetsToTxn(c, 3, id, pid, epoch, "vtxn"); code != 0 {
		t.Fatalf("AddOffsetsToTxn: %d", code)
	}
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, "vtxn"
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	r.Topics = append(r.Topics, rt)
	return r, func(resp kmsg.Response) int16 {
		return resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
}

// TestTxnOffsetsOverTheWire: offsets committed in a transaction are
// invisible (and unstable to a stable fetch) until EndTxn commits them,
// dropped when it aborts, refused without AddOffsetsToTxn or with an
// old epoch, and pending offsets survive a restart of the server to be
// committed after it.
func TestTxnOffsetsOverTheWire(t *testing.T) {
	dir := t.TempDir()
	store, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, store, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	pid, epoch := initTxn(t, c, 4, "tx")
	// Without AddOffsetsToTxn: no transaction holds the offsets.
	if code := txnOffsetCommit(c, 3, "tx", pid, epoch, "g", 5); code != errInvalidTxnState {
		t.Fatalf("without AddOffsetsToTxn: %d", code)
	}
	if code := addOffsetsToTxn(c, 3, "tx", pid, epoch, "g"); code != 0 {
		t.Fatal(code)
	}
	if code := txnOffsetCommit(c, 3, "tx", pid, epoch-1, "g", 5); code != errInvalidProducerEpoch {
		t.Fatalf("old epoch: %d", code)
	}
	if code := txnOffsetCommit(c, 3, "tx", pid, epoch, "g", 5); code != 0 {
		t.Fatal(code)
	}
	if off, code := fetchOffset(c, "g", false); off != -1 || code != 0 {
		t.Fatalf("pending visible: %d %d", off, code)
	}
	if _, code := fetchOffset(c, "g", true); code != 88 {
		t.Fatalf("require stable: %d", code)
	}
	if code := endTxn(t, c, 3, "tx", pid, epoch, true); code != 0 {
		t.Fatal(code)
	}
	if off, code := fetchOffset(c, "g", true); off != 5 || code != 0 {
		t.Fatalf("after commit: %d %d", off, code)
	}
	// Aborted: the offset stays.
	addOffsetsToTxn(c, 3, "tx", pid, epoch, "g")
	if code := txnOffsetCommit(c, 2, "tx", pid, epoch, "g", 9); code != 0 {
		t.Fatal(code)
	}
	endTxn(t, c, 3, "tx", pid, epoch, false)
	if off, _ := fetchOffset(c, "g", true); off != 5 {
		t.Fatalf("after abort: %d", off)
	}
	// Pending across a restart, then committed.
	addOffsetsToTxn(c, 3, "tx", pid, epoch, "g")
	if code := txnOffsetCommit(c, 0, "tx", pid, epoch, "g", 12); code != 0 {
		t.Fatal(code)
	}
	ts.srv.Close()
	srv, err := New(store, Config{Logger: ts.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if off, code := srvFetch(t, srv, "g", true); code != 88 || off != -1 {
		t.Fatalf("after restart: %d %d", off, code)
	}
	if err := srv.txn.EndTxn("tx", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if off, code := srvFetch(t, srv, "g", true); code != 0 || off != 12 {
		t.Fatalf("committed after restart: %d %d", off, code)
	}
}

func srvFetch(t *testing.T, s *Server, group string, stable bool) (int64, int16) {
	got, code := s.groups.Fetch(group, []groupcoord.TopicPartition{{Topic: "t", Partition: 0}}, stable)
	if code != 0 {
		t.Fatalf("fetch: %v", code)
	}
	return got[0].Offset, int16(got[0].Code)
}
