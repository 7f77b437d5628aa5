package kafkaserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// deleteRecordsReq is a DeleteRecords request at v2 of topic's
// partitions, each to its offset.
func deleteRecordsReq(topic string, offsets map[int32]int64) *kmsg.DeleteRecordsRequest {
	r := kmsg.NewPtrDeleteRecordsRequest()
	r.Version, r.TimeoutMillis = 2, 1000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

// TestDeleteRecordsKadm: kadm's DeleteRecords moves a partition's start
// into its records; ListOffsets and a consumer from the start see it, a
// fetch below it is out of range, and the other partition is untouched.
// -1 deletes up to the high watermark; the start never moves back.
func TestDeleteRecordsKadm(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	for p := range int32(2) {
		for i := range 10 {
			if code := partitionCode(c.do(produceReq(9, -1, "t", p, batchOf(-1, 0, 0, string(rune('a'+i)))))); code != 0 {
				t.Fatalf("produce: %d", code)
			}
		}
	}
	adm := adminClient(t, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var o kadm.Offsets
	o.AddOffset("t", 0, 4, -1)
	rs, err := adm.DeleteRecords(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := rs.Lookup("t", 0); !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords(t-0, 4): %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if s0, _ := starts.Lookup("t", 0); s0.Offset != 4 {
		t.Fatalf("start of t-0 %d, want 4", s0.Offset)
	}
	if s1, _ := starts.Lookup("t", 1); s1.Offset != 0 {
		t.Fatalf("start of t-1 %d, want 0", s1.Offset)
	}
	fr := c.do(fetchReq(12, "t", 0, 3, 0, 0)).(*kmsg.FetchResponse)
	if sp := fr.Topics[0].Partitions[0]; sp.ErrorCode != errOffsetOutOfRange || sp.LogStartOffset != 4 {
		t.Fatalf("fetch at 3: code %d, log start %d", sp.ErrorCode, sp.LogStartOffset)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var first *kgo.Record
	for first == nil && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
	}
	if first == nil || first.Offset != 4 || string(first.Value) != "e" {
		t.Fatalf("the first record from the start: %+v", first)
	}

	// Below the start: no change; -1: the high watermark.
	for _, tc := range []struct{ offset, low int64 }{{2, 4}, {-1, 10}, {10, 10}} {
		resp := c.do(deleteRecordsReq("t", map[int32]int64{0: tc.offset})).(*kmsg.DeleteRecordsResponse)
		if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.LowWatermark != tc.low {
			t.Fatalf("delete to %d: code %d, low watermark %d, want %d", tc.offset, sp.ErrorCode, sp.LowWatermark, tc.low)
		}
	}
	// Appends go on at the end.
	if code := partitionCode(c.do(produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "after")))); code != 0 {
		t.Fatalf("produce after deleting everything: %d", code)
	}
}

// TestDeleteRecordsRefusals: an offset above the high watermark or below
// -1 is OFFSET_OUT_OF_RANGE, an unknown topic or partition 3, each with
// low watermark -1, and the start does not move.
func TestDeleteRecordsRefusals(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	for range 3 {
		if code := partitionCode(c.do(produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "x")))); code != 0 {
			t.Fatalf("produce: %d", code)
		}
	}
	for _, tc := range []struct {
		topic     string
		partition int32
		offset    int64
		code      int16
	}{
		{"t", 0, 4, errOffsetOutOfRange},
		{"t", 0, -2, errOffsetOutOfRange},
		{"t", 1, 1, errUnknownTopicOrPartition},
		{"t", -1, 1, errUnknownTopicOrPartition},
		{"nope", 0, 1, errUnknownTopicOrPartition},
	} {
		resp := c.do(deleteRecordsReq(tc.topic, map[int32]int64{tc.partition: tc.offset})).(*kmsg.DeleteRecordsResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != tc.code || sp.LowWatermark != -1 {
			t.Fatalf("%s-%d to %d: code %d (%v), low watermark %d; want code %d", tc.topic, tc.partition, tc.offset, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), sp.LowWatermark, tc.code)
		}
	}
	part, err := ts.store.ExistingPartition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if part.StartOffset() != 0 {
		t.Fatalf("start %d after refusals", part.StartOffset())
	}
	// kadm says which.
	var o kadm.Offsets
	o.AddOffset("t", 0, 9, -1)
	rs, err := adminClient(t, ts.addr).DeleteRecords(context.Background(), o)
	if r, _ := rs.Lookup("t", 0); err != nil || !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("kadm DeleteRecords above the high watermark: %v, %+v", err, r)
	}
}
