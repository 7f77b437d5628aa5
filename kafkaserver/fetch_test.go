package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

func fetchPart(t *testing.T, c *rawClient, r *kmsg.FetchRequest) kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp := c.do(r).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestFetch: a fetch from inside a batch returns that whole batch; at
// least one batch even when it exceeds the partition's max bytes; at the
// high watermark nothing; above it or below the log start
// OFFSET_OUT_OF_RANGE; HWM, LSO and log start in every answer;
// PreferredReadReplica -1.
func TestFetch(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	first := batchOf(-1, 0, 0, "a", "b", "c")
	for _, b := range [][]byte{first, batchOf(-1, 0, 0, "d")} {
		if got := producePart(t, c, 9, -1, "t", 0, b); got.ErrorCode != 0 {
			t.Fatal(got.ErrorCode)
		}
	}
	for _, v := range []int16{4, 11, 12} {
		r := fetchReq(v, "t", 0, 1, 0, 0)
		r.Topics[0].Partitions[0].PartitionMaxBytes = 10
		sp := fetchPart(t, c, r)
		if sp.ErrorCode != 0 || sp.HighWatermark != 4 || sp.LastStableOffset != 4 || (v >= 5 && sp.LogStartOffset != 0) || (v >= 11 && sp.PreferredReadReplica != -1) {
			t.Fatalf("v%d: %+v", v, sp)
		}
		if len(sp.RecordBatches) != len(first) || sp.RecordBatches[0] != 0 || sp.RecordBatches[7] != 0 {
			t.Fatalf("v%d: %d bytes from offset 1, want the first batch whole (%d bytes)", v, len(sp.RecordBatches), len(first))
		}
	}
	for _, v := range []int16{4, 11, 12} {
		// An empty record set, not a null one: librdkafka cannot parse
		// a null one.
		if sp := fetchPart(t, c, fetchReq(v, "t", 0, 4, 0, 0)); sp.ErrorCode != 0 || sp.RecordBatches == nil || len(sp.RecordBatches) != 0 {
			t.Fatalf("v%d fetch at the HWM: %+v", v, sp)
		}
	}
	for _, off := range []int64{5, -1} {
		if sp := fetchPart(t, c, fetchReq(12, "t", 0, off, 0, 0)); sp.ErrorCode != errOffsetOutOfRange || sp.HighWatermark != 4 {
			t.Fatalf("fetch at %d: %+v", off, sp)
		}
	}
	if sp := fetchPart(t, c, fetchReq(12, "nope", 0, 0, 0, 0)); sp.ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("unknown topic: %+v", sp)
	}
	r := fetchReq(12, "t", 0, 0, 0, 0)
	r.SessionID = 5
	if resp := c.do(r).(*kmsg.FetchResponse); resp.ErrorCode != errFetchSessionIDNotFound {
		t.Fatalf("fetch in a session: error %d", resp.ErrorCode)
	}
}

// TestFetchLongPoll: a fetch at the end waits, and an append on another
// connection answers it with the new batch; a fetch whose MaxWait ends
// first answers empty.
func TestFetchLongPoll(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	fc, pc := ts.dial(), ts.dial()
	r := fetchReq(12, "t", 0, 0, 60_000, 1)
	corr := fc.send(r)
	if got := producePart(t, pc, 9, -1, "t", 0, batchOf(-1, 0, 0, "a")); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	resp := fc.read(r, corr).(*kmsg.FetchResponse)
	if sp := resp.Topics[0].Partitions[0]; sp.HighWatermark != 1 || len(sp.RecordBatches) == 0 {
		t.Fatalf("long-poll answer: %+v", sp)
	}
	if sp := fetchPart(t, fc, fetchReq(12, "t", 0, 1, 10, 1)); sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 {
		t.Fatalf("long poll that timed out: %+v", sp)
	}
}

// TestFetchNeverPastHWM: a batch written but not yet fsynced (SyncAlways)
// is not served, and the HWM does not count it.
func TestFetchNeverPastHWM(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	if got := producePart(t, c, 9, -1, "t", 0, batchOf(-1, 0, 0, "a")); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	p, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendWritten(batchOf(-1, 0, 0, "b")); err != nil { // written, not synced
		t.Fatal(err)
	}
	sp := fetchPart(t, c, fetchReq(12, "t", 0, 0, 0, 0))
	if sp.HighWatermark != 1 || len(sp.RecordBatches) != len(batchOf(-1, 0, 0, "a")) {
		t.Fatalf("fetch with an unsynced batch: hwm %d, %d bytes", sp.HighWatermark, len(sp.RecordBatches))
	}
	if sp := fetchPart(t, c, fetchReq(12, "t", 0, 1, 0, 0)); sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 {
		t.Fatalf("fetch at the HWM with an unsynced batch above: %+v", sp)
	}
}

// TestListOffsets: earliest, latest (HWM), max timestamp, by time.
func TestListOffsets(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	for _, b := range [][]byte{batchOf(-1, 0, 0, "a", "b"), batchOf(-1, 0, 0, "c")} {
		if got := producePart(t, c, 9, -1, "t", 0, b); got.ErrorCode != 0 {
			t.Fatal(got.ErrorCode)
		}
	}
	list := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		r := listOffsetsReq("t", 0, ts)
		r.Version = v
		resp := c.do(r).(*kmsg.ListOffsetsResponse)
		return resp.Topics[0].Partitions[0]
	}
	cases := []struct {
		v          int16
		ts         int64
		off, stamp int64
	}{
		{1, -2, 0, -1},
		{8, -4, 0, -1},
		{4, -1, 3, -1},
		{7, -3, 1, 1_700_000_000_001},
		{8, 1_700_000_000_001, 1, 1_700_000_000_001},
		{8, 1_700_000_000_000, 0, 1_700_000_000_000},
		{8, 1_800_000_000_000, -1, -1},
		{10, -1, 3, -1},
	}
	for _, tc := range cases {
		got := list(tc.v, tc.ts)
		if got.ErrorCode != 0 || got.Offset != tc.off || got.Timestamp != tc.stamp || (tc.v >= 4 && got.LeaderEpoch != 0) {
			t.Errorf("v%d timestamp %d: %+v; want offset %d timestamp %d", tc.v, tc.ts, got, tc.off, tc.stamp)
		}
	}
	// -5 (v9+, KIP-1005), the latest tiered offset: nothing is tiered,
	// so offset, timestamp and epoch -1 with no error, as Kafka answers
	// without remote storage.
	for _, v := range []int16{9, 10} {
		if got := list(v, -5); got.ErrorCode != 0 || got.Offset != -1 || got.Timestamp != -1 || got.LeaderEpoch != -1 {
			t.Errorf("v%d timestamp -5: %+v; want no error and -1 for offset, timestamp and epoch", v, got)
		}
	}
}

// TestCurrentLeaderEpoch: ListOffsets (v4+) and Fetch (v9+) check the
// request's CurrentLeaderEpoch as Kafka's Partition does: -1 (unchecked)
// and 0 (ours) are served, a lower epoch is 74 FENCED_LEADER_EPOCH, a
// higher one 76 UNKNOWN_LEADER_EPOCH, with no offset and no data; older
// versions do not carry it.
func TestCurrentLeaderEpoch(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	if got := producePart(t, c, 9, -1, "t", 0, batchOf(-1, 0, 0, "a", "b")); got.ErrorCode != 0 {
		t.Fatal(got.ErrorCode)
	}
	for _, tc := range []struct {
		current int32
		code    int16
	}{{-1, 0}, {0, 0}, {1, kerr.UnknownLeaderEpoch.Code}, {-2, kerr.FencedLeaderEpoch.Code}, {-1 << 31, kerr.FencedLeaderEpoch.Code}} {
		for _, v := range []int16{4, 8, 10} {
			r := listOffsetsReq("t", 0, -1)
			r.Version = v
			r.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.current
			got := c.do(r).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			wantOff := int64(2)
			if tc.code != 0 {
				wantOff = -1
			}
			if got.ErrorCode != tc.code || got.Offset != wantOff {
				t.Errorf("ListOffsets v%d, current epoch %d: %+v; want code %d offset %d", v, tc.current, got, tc.code, wantOff)
			}
		}
		for _, v := range []int16{9, 12} {
			r := fetchReq(v, "t", 0, 0, 0, 0)
			r.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.current
			got := c.do(r).(*kmsg.FetchResponse).Topics[0].Partitions[0]
			if got.ErrorCode != tc.code || (tc.code == 0) != (len(got.RecordBatches) > 0) || (tc.code != 0 && got.HighWatermark != -1) {
				t.Errorf("Fetch v%d, current epoch %d: code %d, %d bytes, high watermark %d; want code %d", v, tc.current, got.ErrorCode, len(got.RecordBatches), got.HighWatermark, tc.code)
			}
		}
	}
	// Below the versions that carry it, a value set is not sent.
	r := listOffsetsReq("t", 0, -1)
	r.Version = 3
	r.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if got := c.do(r).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != 2 {
		t.Errorf("ListOffsets v3 with a current epoch set: %+v", got)
	}
	f := fetchReq(8, "t", 0, 0, 0, 0)
	f.Topics[0].Partitions[0].CurrentLeaderEpoch = 5
	if got := c.do(f).(*kmsg.FetchResponse).Topics[0].Partitions[0]; got.ErrorCode != 0 || len(got.RecordBatches) == 0 {
		t.Errorf("Fetch v8 with a current epoch set: code %d, %d bytes", got.ErrorCode, len(got.RecordBatches))
	}
}

// TestFetchMaxBytes: the response's MaxBytes budget is shared by the
// partitions in order: the first batch goes out whatever its size, and a
// partition after the budget is spent gets no records (but its high
// watermark).
func TestFetchMaxBytes(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	big := string(make([]byte, 4000))
	for p := int32(0); p < 2; p++ {
		for range 3 {
			if got := producePart(t, c, 9, -1, "t", p, batchOf(-1, 0, 0, big)); got.ErrorCode != 0 {
				t.Fatal(got.ErrorCode)
			}
		}
	}
	r := fetchReq(12, "t", 0, 0, 0, 0)
	r.MaxBytes = 1000 // less than one batch
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 1, 1<<20
	r.Topics[0].Partitions = append(r.Topics[0].Partitions, rp)
	resp := c.do(r).(*kmsg.FetchResponse)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	one := len(batchOf(-1, 0, 0, big))
	if len(p0.RecordBatches) != one || len(p1.RecordBatches) != 0 || p1.HighWatermark != 3 || p1.ErrorCode != 0 {
		t.Fatalf("partition 0: %d bytes (one batch is %d), partition 1: %d bytes, hwm %d, code %d",
			len(p0.RecordBatches), one, len(p1.RecordBatches), p1.HighWatermark, p1.ErrorCode)
	}
}
