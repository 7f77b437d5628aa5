package kafkaserver

import "github.com/twmb/franz-go/pkg/kmsg"

// handleApiVersions answers the API table (dispatch.go's apis), with no
// features: clients then use classic transactions and no KIP-890.
func handleApiVersions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	p.resp = resp
	return nil
}
