package kafkaserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// epochReq is an OffsetForLeaderEpoch request at version for one
// partition.
func epochReq(version int16, topic string, partition, current, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	r := kmsg.NewPtrOffsetForLeaderEpochRequest()
	r.Version = version
	r.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

// askEpoch sends epochReq and returns its one partition's answer.
func askEpoch(t *testing.T, c *rawClient, r *kmsg.OffsetForLeaderEpochRequest) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	resp := c.do(r).(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// TestOffsetForLeaderEpoch: every rule of the answer over a partition of
// logstore's own (epoch 0 from the log start), at every version: unknown
// topic and partition 3; CurrentLeaderEpoch (v2+) -1 and 0 pass, below 0
// is 74, above 76, and before v2 it is not read; epoch -1 and epochs
// above 0 are (-1, -1); epoch 0 is (0, high watermark); an empty
// partition has no epochs; a broker's ReplicaID (v3+) is answered the
// same.
func TestOffsetForLeaderEpoch(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	for i := range 3 {
		resp := c.do(produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "a", "b"))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce %d: %d", i, code)
		}
	}
	const hwm = 6
	type want struct {
		code  int16
		epoch int32
		end   int64
	}
	type epochCase struct {
		name                    string
		topic                   string
		partition, current, ask int32
		want                    want
	}
	for v := int16(0); v <= 4; v++ {
		cases := []epochCase{
			{"unknown topic", "nope", 0, -1, 0, want{3, -1, -1}},
			{"unknown partition", "t", 2, -1, 0, want{3, -1, -1}},
			{"negative partition", "t", -1, -1, 0, want{3, -1, -1}},
			{"epoch 0", "t", 0, -1, 0, want{0, 0, hwm}},
			{"epoch 0, current 0", "t", 0, 0, 0, want{0, 0, hwm}},
			{"undefined epoch", "t", 0, 0, -1, want{0, -1, -1}},
			{"epoch above every epoch", "t", 0, 0, 1, want{0, -1, -1}},
			{"empty partition", "t", 1, 0, 0, want{0, -1, -1}},
		}
		if v >= 2 {
			cases = append(cases,
				epochCase{"current epoch above ours", "t", 0, 1, 0, want{kerr.UnknownLeaderEpoch.Code, -1, -1}},
				epochCase{"current epoch below ours", "t", 0, -2, 0, want{kerr.FencedLeaderEpoch.Code, -1, -1}},
			)
		}
		for _, cs := range cases {
			r := epochReq(v, cs.topic, cs.partition, cs.current, cs.ask)
			got := askEpoch(t, c, r)
			if v < 1 {
				got.LeaderEpoch = cs.want.epoch // v0 has no epoch in the answer
			}
			if g := (want{got.ErrorCode, got.LeaderEpoch, got.EndOffset}); g != cs.want {
				t.Errorf("v%d %s: %+v, want %+v", v, cs.name, g, cs.want)
			}
		}
	}
	// Before v2 CurrentLeaderEpoch is not on the wire: a value set is
	// not sent, so not checked.
	if got := askEpoch(t, c, epochReq(1, "t", 0, 7, 0)); got.ErrorCode != 0 || got.EndOffset != hwm {
		t.Errorf("v1 with a current epoch set: %+v", got)
	}
	// A broker's replica id is answered as a consumer's.
	r := epochReq(3, "t", 0, 0, 0)
	r.ReplicaID = 0
	if got := askEpoch(t, c, r); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != hwm {
		t.Errorf("replica id 0: %+v", got)
	}
	// DeleteRecords moves epoch 0's start; its end stays the high watermark.
	if _, err := openExisting(t, ts.store, "t", 0).DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	if got := askEpoch(t, c, epochReq(4, "t", 0, 0, 0)); got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != hwm {
		t.Errorf("after DeleteRecords: %+v", got)
	}
}

func openExisting(t *testing.T, s *logstore.Store, topic string, partition int32) *logstore.Partition {
	t.Helper()
	p, err := s.ExistingPartition(topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// adoptedServer serves a store whose partition a-0 holds ten one-record
// batches written in epochs 0 (offsets 0-2), 2 (3-6) and 5 (7-9), with
// the leader-epoch-checkpoint Kafka would keep for them, as data adopted
// from Kafka has.
func adoptedServer(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Partition("a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		b := recordbatch.NewBuilder(0)
		switch {
		case i < 3:
			b.PartitionLeaderEpoch = 0
		case i < 7:
			b.PartitionLeaderEpoch = 2
		default:
			b.PartitionLeaderEpoch = 5
		}
		if err := b.Append(1_700_000_000_000, nil, []byte{byte('0' + i)}, nil); err != nil {
			t.Fatal(err)
		}
		batch, err := b.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cp := []byte("0\n3\n0 0\n2 3\n5 7\n")
	if err := os.WriteFile(filepath.Join(dir, "a-0", logstore.LeaderEpochCheckpointName), cp, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, s, Config{})
}

// TestOffsetForLeaderEpochAdopted: over an adopted partition's
// checkpoint, each case of Kafka's endOffsetFor: an epoch between two is
// the lower one's and ends where the higher begins; the latest ends at
// the high watermark; one above every epoch is (-1, -1). ListOffsets
// names the epoch of each offset it answers.
func TestOffsetForLeaderEpochAdopted(t *testing.T) {
	ts := adoptedServer(t)
	c := ts.dial()
	for _, cs := range []struct {
		ask, epoch int32
		end        int64
	}{{0, 0, 3}, {1, 0, 3}, {2, 2, 7}, {3, 2, 7}, {5, 5, 10}, {6, -1, -1}, {-1, -1, -1}} {
		got := askEpoch(t, c, epochReq(4, "a", 0, 5, cs.ask)) // 5: the partition's epoch
		if got.ErrorCode != 0 || got.LeaderEpoch != cs.epoch || got.EndOffset != cs.end {
			t.Errorf("epoch %d: %+v, want epoch %d end %d", cs.ask, got, cs.epoch, cs.end)
		}
	}
	// ListOffsets names each offset's epoch, as Kafka's epoch cache
	// does: the latest for the end, the first for the start.
	for _, cs := range []struct {
		ts    int64
		off   int64
		epoch int32
	}{{-1, 10, 5}, {-2, 0, 0}, {-3, 0, 0}, {1_700_000_000_000, 0, 0}} {
		r := listOffsetsReq("a", 0, cs.ts)
		got := c.do(r).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.Offset != cs.off || got.LeaderEpoch != cs.epoch {
			t.Errorf("ListOffsets %d: %+v, want offset %d epoch %d", cs.ts, got, cs.off, cs.epoch)
		}
	}
	if _, err := openExisting(t, ts.store, "a", 0).DeleteRecords(5); err != nil {
		t.Fatal(err)
	}
	r := listOffsetsReq("a", 0, -2)
	if got := c.do(r).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.Offset != 5 || got.LeaderEpoch != 2 {
		t.Errorf("ListOffsets -2 after DeleteRecords(5): %+v, want offset 5 epoch 2", got)
	}
}

// TestOffsetForLeaderEpochKgo: kgo validates an offset given with an
// epoch (KIP-320) by OffsetForLeaderEpoch before it fetches. Where the
// answer covers the offset it consumes from it; where the epoch ended
// below it (offset 9 of epoch 2, which ended at 7) it reports the data
// loss and resumes where the epoch ended, as against a Kafka broker.
func TestOffsetForLeaderEpochKgo(t *testing.T) {
	ts := adoptedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, cs := range []struct {
		name        string
		offset      int64
		epoch       int32
		first       int64
		lossResetTo int64
	}{
		{"covered", 4, 2, 4, -1},
		{"latest epoch", 8, 5, 8, -1},
		{"truncated", 9, 2, 7, 7},
	} {
		t.Run(cs.name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
				"a": {0: kgo.NewOffset().At(cs.offset).WithEpoch(cs.epoch)},
			}), kgo.FetchMaxWait(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var first int64 = -1
			resetTo := int64(-1)
			for first < 0 && ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachError(func(_ string, _ int32, err error) {
					var dl *kgo.ErrDataLoss
					if errors.As(err, &dl) {
						resetTo = dl.ResetTo
						return
					}
					if ctx.Err() == nil {
						t.Errorf("fetch error: %v", err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					if first < 0 {
						first = r.Offset
					}
				})
			}
			if first != cs.first || resetTo != cs.lossResetTo {
				t.Fatalf("first record %d, data loss reset to %d; want %d and %d", first, resetTo, cs.first, cs.lossResetTo)
			}
		})
	}
}

// TestAdoptedEpochExtended: what logstore appends to an adopted
// partition extends its latest epoch (5 here), as a Kafka leader's
// appends extend its own: the batch is stamped 5, Metadata says 5 once
// the partition is open, a CurrentLeaderEpoch of 0 is fenced, and a kgo
// consumer that read the new record and validates its epoch finds no
// data loss (with the batch stamped 0 it would have asked for epoch 0,
// been told it ended at 3, and re-read from there).
func TestAdoptedEpochExtended(t *testing.T) {
	ts := adoptedServer(t)
	c := ts.dial()
	if code := partitionCode(c.do(produceReq(9, -1, "a", 0, batchOf(-1, 0, 0, "new")))); code != 0 {
		t.Fatalf("produce: %d", code)
	}
	fr := c.do(fetchReq(12, "a", 0, 10, 0, 0)).(*kmsg.FetchResponse)
	batches := fr.Topics[0].Partitions[0].RecordBatches
	if len(batches) < recordbatch.HeaderSize {
		t.Fatalf("fetch at 10: %d bytes", len(batches))
	}
	if e := recordbatch.Batch(batches).PartitionLeaderEpoch(); e != 5 {
		t.Fatalf("the appended batch carries epoch %d, want 5", e)
	}
	md := metadata(t, c, 12, false, "a")
	if e := md.Topics[0].Partitions[0].LeaderEpoch; e != 5 {
		t.Fatalf("Metadata: leader epoch %d, want 5", e)
	}
	req := fetchReq(12, "a", 0, 10, 0, 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 0
	if code := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch with epoch 0: code %d, want FENCED_LEADER_EPOCH", code)
	}
	if got := askEpoch(t, c, epochReq(4, "a", 0, 5, 5)); got.ErrorCode != 0 || got.LeaderEpoch != 5 || got.EndOffset != 11 {
		t.Fatalf("OffsetForLeaderEpoch(5): %+v, want epoch 5 end 11", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"a": {0: kgo.NewOffset().At(10).WithEpoch(5)},
	}), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got *kgo.Record
	for got == nil && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("kgo: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = r })
	}
	if got == nil || got.Offset != 10 || got.LeaderEpoch != 5 || string(got.Value) != "new" {
		t.Fatalf("kgo read %+v, want offset 10 at epoch 5", got)
	}
}
