package kafkaserver

import (
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestFindCoordinatorKeyTypes: groups (0) and transactional ids (1)
// find this node at every version; a share group (2, KIP-932) is 42
// INVALID_REQUEST with no node, below v6 and at v6 alike, as Kafka
// answers without a share coordinator, and so is a key type no version
// has.
func TestFindCoordinatorKeyTypes(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	c := ts.dial()
	_, ps, err := net.SplitHostPort(ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(ps)
	if err != nil {
		t.Fatal(err)
	}
	port := int32(p)
	for v := int16(1); v <= 6; v++ {
		for _, tc := range []struct {
			keyType int8
			code    int16
		}{{0, 0}, {1, 0}, {2, kerr.InvalidRequest.Code}, {3, kerr.InvalidRequest.Code}, {-1, kerr.InvalidRequest.Code}} {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version = v
			r.CoordinatorType = tc.keyType
			r.CoordinatorKey, r.CoordinatorKeys = "k", []string{"k", "k2"}
			resp := c.do(r).(*kmsg.FindCoordinatorResponse)
			type answer struct {
				code int16
				node int32
				port int32
			}
			var got []answer
			if v < 4 {
				got = append(got, answer{resp.ErrorCode, resp.NodeID, resp.Port})
			} else {
				for _, co := range resp.Coordinators {
					got = append(got, answer{co.ErrorCode, co.NodeID, co.Port})
				}
				if len(got) != 2 {
					t.Fatalf("v%d key type %d: %d coordinators for 2 keys", v, tc.keyType, len(got))
				}
			}
			want := answer{0, 0, port}
			if tc.code != 0 {
				want = answer{tc.code, -1, -1}
			}
			for _, g := range got {
				if g != want {
					t.Errorf("v%d key type %d: %+v, want %+v", v, tc.keyType, g, want)
				}
			}
		}
	}
}
