package inspect

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerGroups asks a broker, as kafka-consumer-groups.sh does, for its
// groups (ListGroups; only group when it is not empty), and describes
// them (DescribeGroups): their state and members, with the assignment
// decoded for groups of protocol type "consumer". With detail it adds
// each group's committed offsets (OffsetFetch) and their lag to the high
// watermarks (ListOffsets). Generation is -1, and so is each offset's
// CommittedAt: the protocol does not carry them. A group the broker does
// not know is described as Dead (v6's GROUP_ID_NOT_FOUND included).
func BrokerGroups(ctx context.Context, cl *kgo.Client, group string, detail bool) ([]Group, error) {
	var names []string
	if group != "" {
		names = []string{group}
	} else {
		lresp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("ListGroups: %w", err)
		}
		if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
			return nil, fmt.Errorf("ListGroups: %w", err)
		}
		for _, g := range lresp.Groups {
			names = append(names, g.Group)
		}
		slices.Sort(names)
	}
	if len(names) == 0 {
		return nil, nil
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = names
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("DescribeGroups: %w", err)
	}
	var groups []Group
	for _, d := range dresp.Groups {
		if d.ErrorCode == kerr.GroupIDNotFound.Code {
			// DescribeGroups v6 (KIP-1043) answers an unknown group so
			// where older versions answer it Dead.
			d.ErrorCode, d.State = 0, "Dead"
		}
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return nil, fmt.Errorf("DescribeGroups %q: %w", d.Group, err)
		}
		j := Group{Group: d.Group, ProtocolType: d.ProtocolType, State: d.State, Generation: -1,
			Offsets: []GroupOffset{}, Members: []GroupMember{}, fromBroker: true}
		for _, m := range d.Members {
			j.Members = append(j.Members, groupMember(m.MemberID, m.InstanceID, m.ClientID, m.ClientHost, d.ProtocolType, m.MemberAssignment))
		}
		if detail && (group == "" || d.State != "Dead") { // the caller refuses a Dead group it named
			if j.Offsets, err = wireOffsets(ctx, cl, d.Group); err != nil {
				return nil, err
			}
			for _, oj := range j.Offsets {
				if oj.Lag != nil {
					j.Lag += *oj.Lag
				}
			}
		}
		groups = append(groups, j)
	}
	return groups, nil
}

// wireOffsets asks for every committed offset of group and the high
// watermark of each of their partitions.
func wireOffsets(ctx context.Context, cl *kgo.Client, group string) ([]GroupOffset, error) {
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Group = group
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = group
	freq.Groups = append(freq.Groups, fg)
	fresp, err := freq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("OffsetFetch %q: %w", group, err)
	}
	var offs []GroupOffset
	add := func(topic string, p int32, off int64, epoch int32, md *string, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("OffsetFetch %q %s-%d: %w", group, topic, p, err)
		}
		oj := GroupOffset{Topic: topic, Partition: p, Committed: off, LeaderEpoch: epoch, CommittedAt: -1}
		if md != nil {
			oj.Metadata = *md
		}
		offs = append(offs, oj)
		return nil
	}
	for _, g := range fresp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, fmt.Errorf("OffsetFetch %q: %w", group, err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
	}
	// kgo copies a single group's answer into the top-level fields too:
	// those count only when there are no groups (a reply below v8).
	for _, t := range fresp.Topics {
		if len(fresp.Groups) > 0 {
			break
		}
		for _, p := range t.Partitions {
			if err := add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode); err != nil {
				return nil, err
			}
		}
	}
	if len(offs) == 0 {
		return offs, nil
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	byTopic := map[string]int{}
	for _, oj := range offs {
		i, ok := byTopic[oj.Topic]
		if !ok {
			i = len(lreq.Topics)
			byTopic[oj.Topic] = i
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = oj.Topic
			lreq.Topics = append(lreq.Topics, lt)
		}
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = oj.Partition, -1
		lreq.Topics[i].Partitions = append(lreq.Topics[i].Partitions, lp)
	}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("ListOffsets: %w", err)
	}
	ends := map[string]int64{}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				ends[t.Topic+"\x00"+strconv.Itoa(int(p.Partition))] = p.Offset
			}
		}
	}
	for i := range offs {
		if e, ok := ends[offs[i].Topic+"\x00"+strconv.Itoa(int(offs[i].Partition))]; ok {
			lag := max(e-max(offs[i].Committed, 0), 0)
			offs[i].End, offs[i].Lag = &e, &lag
		}
	}
	slices.SortFunc(offs, func(a, b GroupOffset) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return offs, nil
}
