package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupMemberJSON is one member of a group described by a running
// server.
type groupMemberJSON struct {
	MemberID   string             `json:"memberId"`
	InstanceID *string            `json:"instanceId"`
	ClientID   string             `json:"clientId"`
	ClientHost string             `json:"clientHost"`
	Assignment map[string][]int32 `json:"assignment"`
}

// runGroupsWire is groups --bootstrap: the groups of a running server
// (ListGroups, DescribeGroups), with their members and assignments, and
// their committed offsets (OffsetFetch) and lag against the high
// watermarks (ListOffsets), as kafka-consumer-groups.sh asks a broker.
func runGroupsWire(ctx context.Context, o *groupsOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	var names []string
	if o.group != "" {
		names = []string{o.group}
	} else {
		lresp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("ListGroups: %w", err)
		}
		if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
			return fmt.Errorf("ListGroups: %w", err)
		}
		for _, g := range lresp.Groups {
			names = append(names, g.Group)
		}
		slices.Sort(names)
	}
	if len(names) == 0 {
		return nil
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups = names
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("DescribeGroups: %w", err)
	}
	detail := o.describe || o.group != ""
	out := bufio.NewWriter(o.stdout)
	for _, d := range dresp.Groups {
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return fmt.Errorf("DescribeGroups %q: %w", d.Group, err)
		}
		if o.group != "" && d.State == "Dead" {
			return fmt.Errorf("the server at %s has no group %q", o.bootstrap, o.group)
		}
		j := groupJSON{Group: d.Group, ProtocolType: d.ProtocolType, State: d.State, Generation: -1, Offsets: []groupOffsetJSON{}, Members: []groupMemberJSON{}}
		for _, m := range d.Members {
			mj := groupMemberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assignment: map[string][]int32{}}
			var a kmsg.ConsumerMemberAssignment
			if d.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 && a.ReadFrom(m.MemberAssignment) == nil {
				for _, t := range a.Topics {
					mj.Assignment[t.Topic] = append(mj.Assignment[t.Topic], t.Partitions...)
					slices.Sort(mj.Assignment[t.Topic])
				}
			}
			j.Members = append(j.Members, mj)
		}
		if detail {
			if j.Offsets, err = wireOffsets(ctx, cl, d.Group); err != nil {
				return err
			}
			for _, oj := range j.Offsets {
				if oj.Lag != nil {
					j.Lag += *oj.Lag
				}
			}
		}
		if o.json {
			if err := writeGroupJSON(out, j, detail); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "group=%s state=%s protocolType=%s members=%d\n", strconv.Quote(d.Group), d.State, strconv.Quote(d.ProtocolType), len(d.Members))
		if !detail {
			continue
		}
		for _, m := range j.Members {
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
			fmt.Fprintf(out, "group=%s member=%s instanceId=%s clientId=%s host=%s assignment=%s\n",
				strconv.Quote(d.Group), strconv.Quote(m.MemberID), inst, strconv.Quote(m.ClientID), m.ClientHost, strings.Join(as, ";"))
		}
		for _, oj := range j.Offsets {
			writeOffsetLine(out, d.Group, oj)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the groups: %w", err)
	}
	return nil
}

// wireOffsets asks for every committed offset of group and the high
// watermark of each of their partitions.
func wireOffsets(ctx context.Context, cl *kgo.Client, group string) ([]groupOffsetJSON, error) {
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Group = group
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group = group
	freq.Groups = append(freq.Groups, fg)
	fresp, err := freq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("OffsetFetch %q: %w", group, err)
	}
	var offs []groupOffsetJSON
	add := func(topic string, p int32, off int64, epoch int32, md *string, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("OffsetFetch %q %s-%d: %w", group, topic, p, err)
		}
		oj := groupOffsetJSON{Topic: topic, Partition: p, Committed: off, LeaderEpoch: epoch, CommittedAt: -1}
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
	slices.SortFunc(offs, func(a, b groupOffsetJSON) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return offs, nil
}

// defaultGroupsRequestTimeout bounds groups --bootstrap's requests.
const defaultGroupsRequestTimeout = 30 * time.Second
