package kafkaserver

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestGroupFlowAtEveryVersion runs a one-member group through its whole
// life (join, sync, heartbeat, commit, fetch, describe, leave, delete)
// at every advertised version of each group API, raw frames encoded by
// kmsg at that version, so that each version the API table advertises
// is seen to work, not only to decode.
func TestGroupFlowAtEveryVersion(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{GroupInitialRebalanceDelay: -1})
	ts.createTopic("t", 2)
	c := ts.dial()
	for v := int16(0); v <= 9; v++ {
		jv, sv, hv, lv := v, min(v, 5), min(v, 4), min(v, 5)
		cv, fv, dv, lgv, dgv := 2+v%7, 1+v%8, min(v, 5), min(v, 4), min(v, 2)
		t.Run(fmt.Sprintf("join%d-sync%d-heartbeat%d-leave%d-commit%d-fetch%d", jv, sv, hv, lv, cv, fv), func(t *testing.T) {
			c.t = t
			group := fmt.Sprintf("flow%d", v)
			inst := "inst"
			join := kmsg.NewPtrJoinGroupRequest()
			join.Version = jv
			join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 10000, 10000, "consumer"
			if jv >= 5 {
				join.InstanceID = &inst
			}
			pr := kmsg.NewJoinGroupRequestProtocol()
			pr.Name, pr.Metadata = "range", []byte("subscription")
			join.Protocols = append(join.Protocols, pr)
			jr := c.do(join).(*kmsg.JoinGroupResponse)
			if jv >= 4 && jv < 5 {
				if jr.ErrorCode != 79 || jr.MemberID == "" {
					t.Fatalf("first join: %+v", jr)
				}
				join.MemberID = jr.MemberID
				jr = c.do(join).(*kmsg.JoinGroupResponse)
			}
			if jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 || string(jr.Members[0].ProtocolMetadata) != "subscription" {
				t.Fatalf("join: %+v", jr)
			}
			if jv >= 7 && (jr.Protocol == nil || *jr.Protocol != "range") {
				t.Fatalf("join protocol: %+v", jr)
			}
			if jv >= 5 && (jr.Members[0].InstanceID == nil || *jr.Members[0].InstanceID != inst) {
				t.Fatalf("join instance id: %+v", jr.Members[0])
			}
			member := jr.MemberID
			instp := func(v int16, min int16) *string {
				if jv >= 5 && v >= min {
					return &inst
				}
				return nil
			}
			sync := kmsg.NewPtrSyncGroupRequest()
			sync.Version = sv
			sync.Group, sync.Generation, sync.MemberID, sync.InstanceID = group, 1, member, instp(sv, 3)
			if sv >= 5 {
				pt, pn := "consumer", "range"
				sync.ProtocolType, sync.Protocol = &pt, &pn
			}
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = member, []byte("assignment")
			sync.GroupAssignment = append(sync.GroupAssignment, a)
			if sr := c.do(sync).(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assignment" {
				t.Fatalf("sync: %+v", sr)
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Version = hv
			hb.Group, hb.Generation, hb.MemberID, hb.InstanceID = group, 1, member, instp(hv, 3)
			if hr := c.do(hb).(*kmsg.HeartbeatResponse); hr.ErrorCode != 0 {
				t.Fatalf("heartbeat: %+v", hr)
			}
			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.Version = cv
			commit.Group, commit.Generation, commit.MemberID, commit.InstanceID = group, 1, member, instp(cv, 7)
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = "t"
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Partition, cp.Offset, cp.LeaderEpoch = 1, 100+int64(v), 4
			md := "md"
			cp.Metadata = &md
			ct.Partitions = append(ct.Partitions, cp)
			cp.Partition = 7 // no such partition
			ct.Partitions = append(ct.Partitions, cp)
			commit.Topics = append(commit.Topics, ct)
			cr := c.do(commit).(*kmsg.OffsetCommitResponse)
			if cr.Topics[0].Partitions[0].ErrorCode != 0 || cr.Topics[0].Partitions[1].ErrorCode != errUnknownTopicOrPartition {
				t.Fatalf("commit: %+v", cr)
			}
			fetch := kmsg.NewPtrOffsetFetchRequest()
			fetch.Version = fv
			fetch.Group = group
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic, ft.Partitions = "t", []int32{0, 1}
			fetch.Topics = append(fetch.Topics, ft)
			fg := kmsg.NewOffsetFetchRequestGroup()
			fg.Group = group
			fgt := kmsg.NewOffsetFetchRequestGroupTopic()
			fgt.Topic, fgt.Partitions = "t", []int32{0, 1}
			fg.Topics = append(fg.Topics, fgt)
			fetch.Groups = append(fetch.Groups, fg)
			fr := c.do(fetch).(*kmsg.OffsetFetchResponse)
			type po struct {
				off   int64
				epoch int32
				md    string
			}
			var got []po
			if fv >= 8 {
				for _, p := range fr.Groups[0].Topics[0].Partitions {
					got = append(got, po{p.Offset, p.LeaderEpoch, str(p.Metadata)})
				}
			} else {
				for _, p := range fr.Topics[0].Partitions {
					got = append(got, po{p.Offset, p.LeaderEpoch, str(p.Metadata)})
				}
			}
			wantEpoch := int32(-1)
			if cv >= 6 {
				wantEpoch = 4
			}
			if fv < 5 {
				wantEpoch = -1 // not in the response before v5
			}
			if len(got) != 2 || got[0].off != -1 || got[1].off != 100+int64(v) || got[1].md != "md" || got[1].epoch != wantEpoch {
				t.Fatalf("fetch: %+v", got)
			}
			desc := kmsg.NewPtrDescribeGroupsRequest()
			desc.Version = dv
			desc.Groups = []string{group}
			desc.IncludeAuthorizedOperations = true
			dr := c.do(desc).(*kmsg.DescribeGroupsResponse)
			if ops := dr.Groups[0].AuthorizedOperations; dv >= 3 && ops != 1<<3|1<<6|1<<8 {
				t.Fatalf("authorized operations %b", ops)
			}
			if g := dr.Groups[0]; g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "assignment" || g.Members[0].ClientID != "test" {
				t.Fatalf("describe: %+v", dr.Groups[0])
			}
			list := kmsg.NewPtrListGroupsRequest()
			list.Version = lgv
			list.StatesFilter = []string{"Stable"}
			found := false
			for _, g := range c.do(list).(*kmsg.ListGroupsResponse).Groups {
				if g.Group == group {
					found = g.ProtocolType == "consumer" && (lgv < 4 || g.GroupState == "Stable")
				}
			}
			if !found {
				t.Fatal("list does not show the group")
			}
			leave := kmsg.NewPtrLeaveGroupRequest()
			leave.Version = lv
			leave.Group, leave.MemberID = group, member
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID, lm.InstanceID = member, instp(lv, 3)
			leave.Members = append(leave.Members, lm)
			lr := c.do(leave).(*kmsg.LeaveGroupResponse)
			if lr.ErrorCode != 0 || lv >= 3 && lr.Members[0].ErrorCode != 0 {
				t.Fatalf("leave: %+v", lr)
			}
			del := kmsg.NewPtrDeleteGroupsRequest()
			del.Version = dgv
			del.Groups = []string{group}
			if r := c.do(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
				t.Fatalf("delete: %+v", r)
			}
		})
	}
}
