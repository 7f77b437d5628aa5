package kafkaserver

// ApiVersions (key 18), versions 0-4 advertised.
//
//   - v1: ThrottleMillis. v3 (KIP-511): the client's software name and
//     version; the request is flexible, the response header never is.
//   - v4: the same as v3 but for features, which logstore sends none of.
//   - A version above 4 is answered with a v0 body: UNSUPPORTED_VERSION
//     (35) and key 18's range alone, so the client retries within it
//     (dispatch.go, handle).
//
// The table is dispatch.go's apis: what is advertised and what is served
// are one table.

import "github.com/twmb/franz-go/pkg/kmsg"

// handleApiVersions answers the API table (dispatch.go's apis), with no
// features: clients then use classic transactions and no KIP-890.
func handleApiVersions(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	p.resp = resp
	for _, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return nil
}
