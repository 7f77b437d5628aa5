package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzDeleteRecords decodes arbitrary DeleteRecords bodies at every
// advertised version and answers them: no panic, one answer per
// partition asked for, each either an error with low watermark -1 or no
// error with the partition's start, an answer that encodes at the
// request's version, and the start never past the high watermark.
func FuzzDeleteRecords(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	for i := range 20 {
		if code := partitionCode(c.do(produceReq(9, -1, "t", int32(i%2), batchOf(-1, 0, 0, "x")))); code != 0 {
			f.Fatalf("produce: %d", code)
		}
	}
	for v := int16(0); v <= 2; v++ {
		for _, off := range []int64{-2, -1, 0, 1, 5, 10, 11, 1 << 62} {
			r := deleteRecordsReq("t", map[int32]int64{0: off, 1: off / 2, 7: off})
			r.Version = v
			f.Add(byte(v), r.AppendTo(nil))
		}
	}
	parts := make([]*logstore.Partition, 2)
	for p := range parts {
		part, err := ts.store.ExistingPartition("t", int32(p))
		if err != nil {
			f.Fatal(err)
		}
		parts[p] = part
	}
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(int16(version % 3))
		if req.ReadFrom(body) != nil {
			return
		}
		p := &pending{key: 21, version: req.Version}
		if err := handleDeleteRecords(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.DeleteRecordsResponse)
		if len(resp.Topics) != len(req.Topics) {
			t.Fatalf("%d topics answered for %d", len(resp.Topics), len(req.Topics))
		}
		for i, st := range resp.Topics {
			if len(st.Partitions) != len(req.Topics[i].Partitions) {
				t.Fatalf("%s: %d partitions answered for %d", st.Topic, len(st.Partitions), len(req.Topics[i].Partitions))
			}
			for _, sp := range st.Partitions {
				if (sp.ErrorCode != 0) != (sp.LowWatermark == -1) {
					t.Fatalf("%s-%d: code %d with low watermark %d", st.Topic, sp.Partition, sp.ErrorCode, sp.LowWatermark)
				}
			}
		}
		back := kmsg.NewPtrDeleteRecordsResponse()
		back.SetVersion(req.Version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode at v%d: %v", req.Version, err)
		}
		for _, part := range parts {
			if part.StartOffset() > part.DurableEnd() {
				t.Fatalf("%s: start %d past the high watermark %d", part.ID(), part.StartOffset(), part.DurableEnd())
			}
		}
	})
}
