package kafkaserver

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// FuzzDescribeConfigs decodes arbitrary DescribeConfigs bodies at every
// advertised version and answers them: no panic, and the answer encodes
// at the request's version with one result per resource.
func FuzzDescribeConfigs(f *testing.F) {
	ts := startServer(f, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	for v := int16(0); v <= 4; v++ {
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Version, r.IncludeSynonyms, r.IncludeDocumentation = v, true, true
		for _, res := range []struct {
			typ  kmsg.ConfigResourceType
			name string
			keys []string
		}{{2, "t", nil}, {2, "t", []string{"retention.ms", "x"}}, {4, "0", nil}, {4, "", nil}, {4, "-1", nil}, {8, "0", nil}, {2, "..", nil}, {2, "nope", nil}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = res.typ, res.name, res.keys
			r.Resources = append(r.Resources, rr)
		}
		f.Add(byte(v), r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version byte, body []byte) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(int16(version % 5))
		if req.ReadFrom(body) != nil {
			return
		}
		p := &pending{key: 32, version: req.Version}
		if err := handleDescribeConfigs(ts.srv, nil, req, p); err != nil {
			t.Fatal(err)
		}
		resp := p.resp.(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != len(req.Resources) {
			t.Fatalf("%d results for %d resources", len(resp.Resources), len(req.Resources))
		}
		back := kmsg.NewPtrDescribeConfigsResponse()
		back.SetVersion(req.Version)
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("the answer does not decode at v%d: %v", req.Version, err)
		}
	})
}
