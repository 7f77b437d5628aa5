package inspect

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/groupcoord"
)

// Group is a consumer group with its state, members and committed
// offsets.
type Group struct {
	Group        string        `json:"group"`
	ProtocolType string        `json:"protocolType"`
	State        string        `json:"state"`
	Members      []GroupMember `json:"members"`
	Generation   int32         `json:"generation"`
	EmptySince   *int64        `json:"emptySince"` // Unix ms; nil when unknown
	Lag          int64         `json:"lag"`        // the sum of the offsets' known lags
	Offsets      []GroupOffset `json:"offsets"`

	fromBroker bool // a broker described it: its text line differs
}

// GroupOffset is one committed offset of a group, with the end of its
// partition and the lag to it when they are known.
type GroupOffset struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Committed   int64  `json:"committed"`
	End         *int64 `json:"end"`
	Lag         *int64 `json:"lag"`
	LeaderEpoch int32  `json:"leaderEpoch"`
	CommittedAt int64  `json:"committedAt"` // Unix ms; -1 from a broker
	Metadata    string `json:"metadata"`
}

// GroupMember is a member of a group, as recorded or as a broker
// described it.
type GroupMember struct {
	MemberID   string             `json:"memberId"`
	InstanceID *string            `json:"instanceId"`
	ClientID   string             `json:"clientId"`
	ClientHost string             `json:"clientHost"`
	Assignment map[string][]int32 `json:"assignment"`
}

// StoredGroup is group g of groups.db, with the lag of each offset to
// the end of its partition: end says the end of a partition, and false
// when it has none (a partition that no longer exists). A negative
// committed offset lags by the whole partition.
func StoredGroup(g groupcoord.GroupInfo, end func(groupcoord.TopicPartition) (int64, bool)) Group {
	j := Group{Group: g.Group, ProtocolType: g.ProtocolType, State: g.State.String(), Generation: g.Generation,
		Members: []GroupMember{}, Offsets: []GroupOffset{}}
	for _, m := range g.Members {
		var inst *string
		if m.InstanceID != "" {
			inst = &m.InstanceID
		}
		j.Members = append(j.Members, groupMember(m.MemberID, inst, m.ClientID, m.ClientHost, g.ProtocolType, m.Assignment))
	}
	if !g.EmptySince.IsZero() {
		ms := g.EmptySince.UnixMilli()
		j.EmptySince = &ms
	}
	for _, off := range g.Offsets {
		oj := GroupOffset{Topic: off.Topic, Partition: off.Partition, Committed: off.Offset, LeaderEpoch: off.LeaderEpoch,
			CommittedAt: off.Committed.UnixMilli(), Metadata: off.Metadata}
		if e, ok := end(off.TopicPartition); ok {
			lag := max(e-off.Offset, 0)
			if off.Offset < 0 {
				lag = e
			}
			oj.End, oj.Lag = &e, &lag
			j.Lag += lag
		}
		j.Offsets = append(j.Offsets, oj)
	}
	return j
}

// AppendJSON appends the group's JSON object, its offsets only with
// detail, without a newline.
func (g Group) AppendJSON(dst []byte, detail bool) ([]byte, error) {
	if !detail {
		g.Offsets = nil
	}
	b, err := json.Marshal(g)
	return append(dst, b...), err
}

// AppendText appends the group's lines, each with its newline: the
// group's, then with detail one per member and one per committed
// offset.
func (g *Group) AppendText(dst []byte, detail bool) []byte {
	if g.fromBroker {
		dst = append(dst, "group="...)
		dst = strconv.AppendQuote(dst, g.Group)
		dst = append(dst, " state="+g.State+" protocolType="...)
		dst = strconv.AppendQuote(dst, g.ProtocolType)
		dst = append(dst, " members="+strconv.Itoa(len(g.Members))+"\n"...)
	} else {
		empty := "unknown"
		if g.EmptySince != nil {
			empty = strconv.FormatInt(*g.EmptySince, 10)
		}
		dst = append(dst, "group="...)
		dst = strconv.AppendQuote(dst, g.Group)
		dst = append(dst, " protocolType="...)
		dst = strconv.AppendQuote(dst, g.ProtocolType)
		dst = append(dst, " generation="+strconv.Itoa(int(g.Generation))+" state="+g.State+
			" members="+strconv.Itoa(len(g.Members))+" emptySince="+empty+
			" offsets="+strconv.Itoa(len(g.Offsets))+" lag="+strconv.FormatInt(g.Lag, 10)+"\n"...)
	}
	if !detail {
		return dst
	}
	for _, m := range g.Members {
		dst = m.appendText(dst, g.Group)
	}
	for _, o := range g.Offsets {
		dst = o.appendText(dst, g.Group)
	}
	return dst
}

// groupMember is a member with its assignment decoded by topic when the
// group's protocol type is "consumer" (empty otherwise, or when it does
// not decode).
func groupMember(id string, instanceID *string, clientID, host, protocolType string, assignment []byte) GroupMember {
	m := GroupMember{MemberID: id, InstanceID: instanceID, ClientID: clientID, ClientHost: host, Assignment: map[string][]int32{}}
	var a kmsg.ConsumerMemberAssignment
	if protocolType == "consumer" && len(assignment) > 0 && a.ReadFrom(assignment) == nil {
		for _, t := range a.Topics {
			m.Assignment[t.Topic] = append(m.Assignment[t.Topic], t.Partitions...)
			slices.Sort(m.Assignment[t.Topic])
		}
	}
	return m
}

func (m *GroupMember) appendText(dst []byte, group string) []byte {
	inst := "none"
	if m.InstanceID != nil {
		inst = strconv.Quote(*m.InstanceID)
	}
	var as []string
	for _, t := range slices.Sorted(maps.Keys(m.Assignment)) {
		ps := make([]string, len(m.Assignment[t]))
		for i, p := range m.Assignment[t] {
			ps[i] = strconv.Itoa(int(p))
		}
		as = append(as, t+":"+strings.Join(ps, ","))
	}
	return append(dst, "group="+strconv.Quote(group)+" member="+strconv.Quote(m.MemberID)+" instanceId="+inst+
		" clientId="+strconv.Quote(m.ClientID)+" host="+m.ClientHost+" assignment="+strings.Join(as, ";")+"\n"...)
}

func (o *GroupOffset) appendText(dst []byte, group string) []byte {
	end, lag := "unknown", "unknown"
	if o.End != nil {
		end, lag = strconv.FormatInt(*o.End, 10), strconv.FormatInt(*o.Lag, 10)
	}
	return append(dst, "group="+strconv.Quote(group)+" topic="+o.Topic+" partition="+strconv.Itoa(int(o.Partition))+
		" committed="+strconv.FormatInt(o.Committed, 10)+" end="+end+" lag="+lag+
		" leaderEpoch="+strconv.Itoa(int(o.LeaderEpoch))+" committedAt="+strconv.FormatInt(o.CommittedAt, 10)+
		" metadata="+strconv.Quote(o.Metadata)+"\n"...)
}
