package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafkatest"
)

// FetchCommitted asks the server (OffsetFetch, through a kgo client) for
// the offsets group committed for topic's partitions; a partition with no
// commit is -1.
func (e *Env) FetchCommitted(ctx context.Context, group, topic string, partitions int32) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kafkatest.ClientOpts(e.Bootstrap...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = topic
	for p := range partitions {
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("offset fetch of group %s: %w", group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("offset fetch of group %s: %w", group, err)
	}
	got := map[int32]int64{}
	keep := func(topic string, partition int32, offset int64, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("offset fetch of group %s, %s-%d: %w", group, topic, partition, err)
		}
		got[partition] = offset
		return nil
	}
	// kgo answers in the form of the version it used: Groups from v8.
	for _, rg := range resp.Groups {
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return nil, fmt.Errorf("offset fetch of group %s: %w", group, err)
		}
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				if err := keep(rt.Topic, rp.Partition, rp.Offset, rp.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := keep(rt.Topic, rp.Partition, rp.Offset, rp.ErrorCode); err != nil {
				return nil, err
			}
		}
	}
	return got, nil
}

// CheckGroup checks a group's consumption of the records res produced:
// members holds what each member read. Every acknowledged record must
// have been read (by some member, at its acknowledged offset), nothing
// else; a record read twice (after a rebalance, before its offset was
// committed) is allowed and counted. The offsets the group committed,
// fetched back from the server, must be each partition's end. With two
// or more members, each must have read something.
func (e *Env) CheckGroup(ctx context.Context, group string, res *kafkatest.Result, members [][]kafkatest.Found) (string, error) {
	if err := allAcked(res); err != nil {
		return "", err
	}
	want := map[string]kafkatest.Ack{}
	for _, a := range res.Records {
		want[a.Value] = a
	}
	var problems []string
	add := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	seen := map[string]int{}
	var per []string
	twice := 0
	for m, found := range members {
		per = append(per, fmt.Sprint(len(found)))
		if len(members) > 1 && len(found) == 0 {
			add("member %d read nothing", m+1)
		}
		for _, f := range found {
			a, ok := want[f.Value]
			switch {
			case !ok:
				add("member %d read %q at partition %d offset %d, never produced", m+1, f.Value, f.Partition, f.Offset)
				continue
			case a.Partition != f.Partition || a.Offset != f.Offset:
				add("member %d read %q at partition %d offset %d, acknowledged at partition %d offset %d", m+1, f.Value, f.Partition, f.Offset, a.Partition, a.Offset)
			}
			if seen[f.Value]++; seen[f.Value] == 2 {
				twice++
			}
		}
	}
	for _, a := range res.Records {
		if seen[a.Value] == 0 {
			add("%q (partition %d offset %d) read by no member", a.Value, a.Partition, a.Offset)
		}
	}
	ends, err := kafkatest.ListOffsetsAt(ctx, e.Bootstrap, res.Topic, res.Partitions, 0)
	if err != nil {
		return "", err
	}
	committed, err := e.FetchCommitted(ctx, group, res.Topic, res.Partitions)
	if err != nil {
		return "", err
	}
	for p := range res.Partitions {
		if committed[p] != ends[p] {
			add("partition %d: committed offset %d fetched back, the partition ends at %d", p, committed[p], ends[p])
		}
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("group %s: %s", group, strings.Join(problems, "; "))
	}
	return fmt.Sprintf("%d records over %d partitions, %d members read %s, %d records read twice; the committed offsets fetched back are every partition's end",
		len(res.Records), res.Partitions, len(members), strings.Join(per, " + "), twice), nil
}
