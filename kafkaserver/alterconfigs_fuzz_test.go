package kafkaserver

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzIncrementalAlterConfigs decodes arbitrary IncrementalAlterConfigs
// bodies at every advertised version and answers them: no panic, one
// result per resource, the answer encodes at the request's version, and
// whatever was accepted is a set the catalog takes again (topic t's
// configs still parse).
func FuzzIncrementalAlterConfigs(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	for v := int16(0); v <= 1; v++ {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Version = v
		for _, res := range []struct {
			typ   kmsg.ConfigResourceType
			name  string
			key   string
			op    kmsg.IncrementalAlterConfigOp
			value *string
		}{
			{2, "t", "retention.ms", 0, kmsg.StringPtr("1000")},
			{2, "t", "cleanup.policy", 2, kmsg.StringPtr("compact,delete")},
			{2, "t", "segment.bytes", 3, kmsg.StringPtr("1")},
			{2, "t", "retention.bytes", 1, nil},
			{2, "nope", "x", 0, nil},
			{4, "0", "log.retention.ms", 0, kmsg.StringPtr("1")},
			{4, "", "num.partitions", 2, kmsg.StringPtr("1")},
			{8, "0", "kafka", 0, kmsg.StringPtr("DEBUG")},
			{2, "..", "retention.ms", 7, kmsg.StringPtr("1")},
		} {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = res.typ, res.name
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op, cfg.Value = res.key, res.op, res.value
			rr.Configs = append(rr.Configs, cfg)
			r.Resources = append(r.Resources, rr)
		}
		f.Add(byte(v), r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(int16(version % 2))
		if req.ReadFrom(body) != nil {
			return
		}
		p := &pending{key: 44, version: req.Version}
		if err := handleIncrementalAlterConfigs(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != len(req.Resources) {
			t.Fatalf("%d results for %d resources", len(resp.Resources), len(req.Resources))
		}
		back := kmsg.NewPtrIncrementalAlterConfigsResponse()
		back.SetVersion(req.Version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode at v%d: %v", req.Version, err)
		}
		tp, ok := ts.srv.cat.Topic("t")
		if !ok {
			t.Fatal("topic t gone")
		}
		if err := checkTopicConfigs(maps.Clone(tp.Configs), ts.store.Options()); err != nil || len(tp.Configs) > 5 {
			t.Fatalf("t's configs %v: %v", tp.Configs, err)
		}
	})
}
