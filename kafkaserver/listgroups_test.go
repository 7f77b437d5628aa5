package kafkaserver

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestListGroupsTypes: ListGroups v5 (KIP-848) names every group
// "classic", and its types filter lists them for "classic" in any case
// and for none without it; DescribeGroups v6 (KIP-1043) answers a group
// that does not exist 69 GROUP_ID_NOT_FOUND with a message, still Dead,
// where v5 answered no error.
func TestListGroupsTypes(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	c := ts.dial()
	// A commit with no generation makes group "vg", Empty.
	commit, code, want := groupVersionReq(8, 8)
	commit.SetVersion(8)
	if got := code(c.do(commit)); got != want {
		t.Fatalf("commit: %d", got)
	}
	for _, tc := range []struct {
		v     int16
		types []string
		want  []string
	}{
		{5, nil, []string{"vg"}},
		{5, []string{"classic"}, []string{"vg"}},
		{5, []string{"Classic", "share"}, []string{"vg"}},
		{5, []string{"consumer"}, nil},
		{5, []string{"nonsense"}, nil},
		{4, []string{"consumer"}, []string{"vg"}}, // not on the wire before v5
	} {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version, r.TypesFilter = tc.v, tc.types
		resp := c.do(r).(*kmsg.ListGroupsResponse)
		var names []string
		for _, g := range resp.Groups {
			names = append(names, g.Group)
			if tc.v >= 5 && g.GroupType != "classic" {
				t.Errorf("group %s type %q, want classic", g.Group, g.GroupType)
			}
		}
		if resp.ErrorCode != 0 || !slices.Equal(names, tc.want) {
			t.Errorf("v%d types %q: code %d, groups %q; want %q", tc.v, tc.types, resp.ErrorCode, names, tc.want)
		}
	}
	for v := int16(5); v <= 6; v++ {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups = v, []string{"vg", "nope"}
		resp := c.do(r).(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 2 {
			t.Fatalf("v%d: %d groups", v, len(resp.Groups))
		}
		if g := resp.Groups[0]; g.ErrorCode != 0 || g.State != "Empty" {
			t.Errorf("v%d vg: code %d state %s", v, g.ErrorCode, g.State)
		}
		g := resp.Groups[1]
		wantCode := int16(0)
		if v >= 6 {
			wantCode = kerr.GroupIDNotFound.Code
		}
		if g.ErrorCode != wantCode || g.State != "Dead" || (v >= 6) != (g.ErrorMessage != nil) {
			t.Errorf("v%d unknown group: code %d state %s message %v; want code %d, Dead", v, g.ErrorCode, g.State, g.ErrorMessage, wantCode)
		}
	}
}
