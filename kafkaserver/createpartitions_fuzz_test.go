package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzCreatePartitions decodes arbitrary CreatePartitions bodies at every
// advertised version and answers them validate-only (a real growth would
// make up to 10,000 directories per input): no panic, one result per
// distinct topic name, an answer that encodes at the request's version,
// and the topic unchanged.
func FuzzCreatePartitions(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	for v := int16(0); v <= 3; v++ {
		for _, assign := range [][][]int32{nil, {}, {{0}}, {{0}, {0}}, {{0, 0}}, {{1}}, {{}}} {
			f.Add(byte(v), growReq(4, true, assign, "t", "nope", "t").AppendTo(nil))
		}
		f.Add(byte(v), growReq(-1, false, nil, "t").AppendTo(nil))
		f.Add(byte(v), growReq(1<<31-1, false, nil, "t").AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(int16(version % 4))
		if req.ReadFrom(body) != nil {
			return
		}
		req.ValidateOnly = true
		p := &pending{key: 37, version: req.Version}
		if err := handleCreatePartitions(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.CreatePartitionsResponse)
		names := map[string]bool{}
		for _, rt := range req.Topics {
			names[rt.Topic] = true
		}
		if len(resp.Topics) != len(names) {
			t.Fatalf("%d results for %d names", len(resp.Topics), len(names))
		}
		back := kmsg.NewPtrCreatePartitionsResponse()
		back.SetVersion(req.Version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode at v%d: %v", req.Version, err)
		}
		if tp, _ := ts.srv.cat.Topic("t"); tp.Partitions != 2 {
			t.Fatalf("validate only grew t to %d", tp.Partitions)
		}
	})
}
