package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

func producePart(t *testing.T, c *rawClient, version, acks int16, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := c.do(produceReq(version, acks, topic, partition, batch)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestProduceOutcomes: each append outcome has its Kafka answer, with
// LogStartOffset on errors too and LogAppendTime -1; a duplicate gets the
// first copy's base offset; nothing refused is written.
func TestProduceOutcomes(t *testing.T) {
	ts := startServer(t, logstore.Options{MaxMessageBytes: 4096}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	const v = 9
	check := func(name string, got kmsg.ProduceResponseTopicPartition, code int16, base int64) {
		t.Helper()
		if got.ErrorCode != code || got.BaseOffset != base || got.LogAppendTime != -1 || got.LogStartOffset != 0 {
			t.Errorf("%s: code %d base %d append time %d log start %d; want code %d base %d, -1, 0",
				name, got.ErrorCode, got.BaseOffset, got.LogAppendTime, got.LogStartOffset, code, base)
		}
	}
	check("first", producePart(t, c, v, -1, "t", 0, batchOf(7, 0, 0, "a", "b")), 0, 0)
	check("second", producePart(t, c, v, -1, "t", 0, batchOf(7, 0, 2, "c")), 0, 2)
	check("duplicate of the first", producePart(t, c, v, -1, "t", 0, batchOf(7, 0, 0, "a", "b")), 0, 0)
	check("acks=1", producePart(t, c, v, 1, "t", 0, batchOf(-1, 0, 0, "d")), 0, 3)
	check("sequence gap", producePart(t, c, v, -1, "t", 0, batchOf(7, 0, 9, "x")), errOutOfOrderSequence, -1)
	check("new epoch not at 0", producePart(t, c, v, -1, "t", 0, batchOf(7, 1, 5, "x")), errOutOfOrderSequence, -1)
	check("unknown producer", producePart(t, c, v, -1, "t", 0, batchOf(8, 0, 5, "x")), errUnknownProducerID, -1)
	check("new epoch at 0", producePart(t, c, v, -1, "t", 0, batchOf(7, 1, 0, "e")), 0, 4)
	check("older epoch", producePart(t, c, v, -1, "t", 0, batchOf(7, 0, 3, "x")), errInvalidProducerEpoch, -1)
	bad := batchOf(-1, 0, 0, "crc")
	bad[len(bad)-1] ^= 0xff
	check("crc", producePart(t, c, v, -1, "t", 0, bad), errCorruptMessage, -1)
	check("two batches", producePart(t, c, v, -1, "t", 0, append(batchOf(-1, 0, 0, "y"), batchOf(-1, 0, 0, "z")...)), errInvalidRecord, -1)
	check("no records", producePart(t, c, v, -1, "t", 0, nil), errInvalidRecord, -1)
	big := make([]string, 100)
	for i := range big {
		big[i] = string(make([]byte, 100))
	}
	check("too large", producePart(t, c, v, -1, "t", 0, batchOf(-1, 0, 0, big...)), errMessageTooLarge, -1)
	txn := recordbatch.NewBuilder(0)
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence, txn.Transactional = 9, 0, 0, true
	if err := txn.Append(1_700_000_000_000, nil, []byte("t"), nil); err != nil {
		t.Fatal(err)
	}
	txnBatch, err := txn.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	check("transactional, no transactional id in the request", producePart(t, c, v, -1, "t", 0, txnBatch), errInvalidTxnState, -1)
	check("acks=2", producePart(t, c, v, 2, "t", 0, batchOf(-1, 0, 0, "x")), errInvalidRequiredAcks, -1)
	unknown := producePart(t, c, v, -1, "nope", 0, batchOf(-1, 0, 0, "x"))
	if unknown.ErrorCode != errUnknownTopicOrPartition {
		t.Errorf("unknown topic: code %d", unknown.ErrorCode)
	}
	if got := producePart(t, c, v, -1, "t", 1, batchOf(-1, 0, 0, "x")); got.ErrorCode != errUnknownTopicOrPartition {
		t.Errorf("unknown partition: code %d", got.ErrorCode)
	}
	p, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if end := p.EndOffset(); end != 5 {
		t.Fatalf("log end %d, want 5 (a, b, c, d, e)", end)
	}
	data, err := p.Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if epoch := int32(uint32(data[12])<<24 | uint32(data[13])<<16 | uint32(data[14])<<8 | uint32(data[15])); epoch != 0 {
		t.Fatalf("stored PartitionLeaderEpoch %d, want 0", epoch)
	}
}

// TestProduceAcksZero: acks=0 writes no response (the next response on
// the connection is the next request's) but appends, and under
// SyncAlways the batch still becomes durable (visible to fetch); one
// with an error closes the connection.
func TestProduceAcksZero(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	c.send(produceReq(9, 0, "t", 0, batchOf(-1, 0, 0, "a")))
	resp := apiVersions(t, c, 3)
	if resp.ErrorCode != 0 {
		t.Fatal(resp.ErrorCode)
	}
	f := c.do(fetchReq(12, "t", 0, 0, 5000, 1)).(*kmsg.FetchResponse)
	if sp := f.Topics[0].Partitions[0]; sp.HighWatermark != 1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("fetch after acks=0: hwm %d, %d bytes", sp.HighWatermark, len(sp.RecordBatches))
	}
	// A refused acks=0 produce closes the connection, as Kafka does: the
	// client has no other way to learn.
	c.send(produceReq(9, 0, "nope", 0, batchOf(-1, 0, 0, "a")))
	c.expectClosed()
}

// TestProduceAutoCreate: with AutoCreateTopics, a produce to an unknown
// topic creates it with DefaultPartitions.
func TestProduceAutoCreate(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{AutoCreateTopics: true, DefaultPartitions: 2})
	c := ts.dial()
	if got := producePart(t, c, 9, -1, "auto", 1, batchOf(-1, 0, 0, "a")); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("produce to a new topic: %+v", got)
	}
	if tp, ok := ts.srv.cat.Topic("auto"); !ok || tp.Partitions != 2 {
		t.Fatalf("topic after auto-create: %+v, %v", tp, ok)
	}
}

// TestProducePipelined: requests sent back to back on one connection
// are answered in order, each at its offsets.
func TestProducePipelined(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	var corrs []int32
	var reqs []*kmsg.ProduceRequest
	for i := range 20 {
		r := produceReq(9, -1, "t", 0, batchOf(3, 0, int32(i), "v"))
		reqs = append(reqs, r)
		corrs = append(corrs, c.send(r))
	}
	for i, r := range reqs {
		resp := c.read(r, corrs[i]).(*kmsg.ProduceResponse)
		if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != int64(i) {
			t.Fatalf("request %d: %+v", i, sp)
		}
	}
}
