package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzOffsetForLeaderEpoch decodes arbitrary OffsetForLeaderEpoch
// bodies at every advertised version and answers them: no panic, one
// answer per topic and partition asked, in order, an answer that
// encodes and decodes at the request's version, and for t-0 (epoch 0
// from offset 0 up to 1) only the answers Kafka's rules give (an epoch
// below -1 is below every epoch: itself and offset 0).
func FuzzOffsetForLeaderEpoch(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	c := ts.dial()
	c.do(produceReq(9, -1, "t", 0, batchOf(-1, 0, 0, "a")))
	for v := int16(0); v <= 4; v++ {
		for _, tc := range [][3]int32{{0, -1, 0}, {0, 0, 0}, {0, 1, 0}, {0, -2, 0}, {0, 0, -1}, {0, 0, 3}, {1, 0, 0}, {9, 0, 0}} {
			r := epochReq(v, "t", tc[0], tc[1], tc[2])
			f.Add(byte(v), r.AppendTo(nil))
		}
		f.Add(byte(v), epochReq(v, "nope", 0, 0, 0).AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(int16(version % 5))
		if req.ReadFrom(body) != nil {
			return
		}
		p := &pending{key: 23, version: req.Version}
		if err := handleOffsetForLeaderEpoch(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.OffsetForLeaderEpochResponse)
		if len(resp.Topics) != len(req.Topics) {
			t.Fatalf("%d topics answered for %d", len(resp.Topics), len(req.Topics))
		}
		for i, rt := range req.Topics {
			st := resp.Topics[i]
			if st.Topic != rt.Topic || len(st.Partitions) != len(rt.Partitions) {
				t.Fatalf("topic %d: %q with %d partitions for %q with %d", i, st.Topic, len(st.Partitions), rt.Topic, len(rt.Partitions))
			}
			for j, rp := range rt.Partitions {
				sp := st.Partitions[j]
				if sp.Partition != rp.Partition {
					t.Fatalf("partition %d answered for %d", sp.Partition, rp.Partition)
				}
				if sp.ErrorCode != 0 && (sp.LeaderEpoch != -1 || sp.EndOffset != -1) {
					t.Fatalf("error %d with epoch %d end %d", sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset)
				}
				if rt.Topic == "t" && rp.Partition == 0 && sp.ErrorCode == 0 {
					// Below every epoch (and not -1, undefined), as
					// Kafka's endOffsetFor: the epoch asked and the
					// first epoch's start.
					ok := rp.LeaderEpoch == 0 && sp.LeaderEpoch == 0 && sp.EndOffset == 1 ||
						(rp.LeaderEpoch == -1 || rp.LeaderEpoch > 0) && sp.LeaderEpoch == -1 && sp.EndOffset == -1 ||
						rp.LeaderEpoch < -1 && sp.LeaderEpoch == rp.LeaderEpoch && sp.EndOffset == 0
					if !ok {
						t.Fatalf("t-0 epoch %d: epoch %d end %d", rp.LeaderEpoch, sp.LeaderEpoch, sp.EndOffset)
					}
				}
			}
		}
		back := kmsg.NewPtrOffsetForLeaderEpochResponse()
		back.SetVersion(req.Version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode at v%d: %v", req.Version, err)
		}
	})
}
