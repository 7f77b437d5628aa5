package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupVersionReq is a request of group API key at version v for
// TestEveryAdvertisedVersion, the error code of its answer and the code
// expected: commits and fetches of a group without members succeed; the
// member APIs name an unknown member (UNKNOWN_MEMBER_ID), deletions an
// unknown group (GROUP_ID_NOT_FOUND).
func groupVersionReq(key, v int16) (kmsg.Request, func(kmsg.Response) int16, int16) {
	switch key {
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation = "vg", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = int64(v)
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r, func(resp kmsg.Response) int16 {
			return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}, 0
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = "vg"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "vg"
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "t", []int32{0}
		rg.Topics = append(rg.Topics, gt)
		r.Groups = append(r.Groups, rg)
		return r, func(resp kmsg.Response) int16 {
			rr := resp.(*kmsg.OffsetFetchResponse)
			if v >= 8 {
				if rr.Groups[0].Topics[0].Partitions[0].Offset < 0 {
					return -100
				}
				return rr.Groups[0].ErrorCode
			}
			if rr.Topics[0].Partitions[0].Offset < 0 {
				return -100
			}
			return rr.Topics[0].Partitions[0].ErrorCode
		}, 0
	case 11:
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "vj", "nobody", 10000, 10000
		r.ProtocolType = "consumer"
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name = "range"
		r.Protocols = append(r.Protocols, pr)
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.JoinGroupResponse).ErrorCode }, 25
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID = "vj", "nobody"
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.HeartbeatResponse).ErrorCode }, 25
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = "vj", "nobody"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "nobody"
		r.Members = append(r.Members, m)
		return r, func(resp kmsg.Response) int16 {
			rr := resp.(*kmsg.LeaveGroupResponse)
			if v >= 3 {
				return rr.Members[0].ErrorCode
			}
			return rr.ErrorCode
		}, 25
	case 14:
		r := kmsg.NewPtrSyncGroupRequest()
		r.Group, r.MemberID = "vj", "nobody"
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.SyncGroupResponse).ErrorCode }, 25
	case 15:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{"vg"}
		return r, func(resp kmsg.Response) int16 {
			g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
			if g.State != "Empty" {
				return -100
			}
			return g.ErrorCode
		}, 0
	case 16:
		r := kmsg.NewPtrListGroupsRequest()
		r.StatesFilter = []string{"Empty"}
		return r, func(resp kmsg.Response) int16 {
			rr := resp.(*kmsg.ListGroupsResponse)
			if len(rr.Groups) == 0 {
				return -100
			}
			return rr.ErrorCode
		}, 0
	case 42:
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"absent"}
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, 69
	case 47:
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = "absent"
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		r.Topics = append(r.Topics, rt)
		return r, func(resp kmsg.Response) int16 { return resp.(*kmsg.OffsetDeleteResponse).ErrorCode }, 69
	}
	panic("not a group API")
}

// groupSeeds are FuzzConn's seeds of the group APIs, each at its newest
// advertised version.
func groupSeeds() []kmsg.Request {
	var out []kmsg.Request
	for _, a := range apis {
		switch a.key {
		case 8, 9, 11, 12, 13, 14, 15, 16, 42, 47:
			r, _, _ := groupVersionReq(a.key, a.max)
			r.SetVersion(a.max)
			out = append(out, r)
		}
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version, ao.TransactionalID, ao.Group = 3, "tx", "g"
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.Version, tc.TransactionalID, tc.Group = 3, "tx", "g"
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "t"
	tt.Partitions = append(tt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	tc.Topics = append(tc.Topics, tt)
	return append(out, ao, tc)
}
