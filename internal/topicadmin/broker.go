package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/logstore/logstore/catalog"
)

// Broker is Admin over a running broker, through kadm.
type Broker struct {
	adm *kadm.Client
}

// NewBroker is the Admin of the broker adm talks to.
func NewBroker(adm *kadm.Client) *Broker { return &Broker{adm: adm} }

func brokerTopicID(id kadm.TopicID) string { return catalog.TopicID(id).String() }

// List is a Metadata request for every topic (internal ones left out).
func (b *Broker) List(ctx context.Context) ([]Topic, error) {
	td, err := b.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := make([]Topic, 0, len(td))
	for _, name := range td.Names() {
		t := td[name]
		if t.Err != nil {
			return nil, refusal("list topic", name, t.Err, "")
		}
		out = append(out, Topic{Topic: name, ID: brokerTopicID(t.ID), Partitions: int32(len(t.Partitions))})
	}
	return out, nil
}

// Describe is Metadata, ListOffsets (earliest and latest) and
// DescribeConfigs of the topics.
func (b *Broker) Describe(ctx context.Context, topics []string, all bool) ([]Description, error) {
	const op = "describe topic"
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	td, err := b.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	names := td.Names()
	for _, name := range names {
		if err := td[name].Err; err != nil {
			msg := ""
			if err == kerr.UnknownTopicOrPartition {
				msg = "The topic '" + name + "' does not exist."
			}
			return nil, refusal(op, name, err, msg)
		}
	}
	if len(names) == 0 {
		return []Description{}, nil
	}
	starts, err := b.adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: list offsets: %w", err)
	}
	ends, err := b.adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: list offsets: %w", err)
	}
	rcs, err := b.adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: describe configs: %w", err)
	}
	out := make([]Description, 0, len(names))
	for _, name := range names {
		t := td[name]
		d := Description{Topic: name, ID: brokerTopicID(t.ID), PartitionCount: int32(len(t.Partitions)), Configs: []Config{}}
		for _, p := range t.Partitions.Sorted() {
			d.ReplicationFactor = max(d.ReplicationFactor, len(p.Replicas))
			bp := Partition{Partition: p.Partition, Leader: p.Leader, Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), StartOffset: -1, EndOffset: -1}
			if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
				bp.StartOffset = o.Offset
			}
			if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
				bp.EndOffset = o.Offset
			}
			d.Partitions = append(d.Partitions, bp)
		}
		rc, err := rcs.On(name, nil)
		if err == nil && rc.Err != nil {
			err = refusal(op, name, rc.Err, rc.ErrMessage)
		}
		if err != nil {
			return nil, err
		}
		for _, c := range rc.Configs {
			d.Configs = append(d.Configs, Config{Name: c.Key, Value: c.Value, Source: c.Source.String()})
		}
		slices.SortFunc(d.Configs, func(a, b Config) int { return strings.Compare(a.Name, b.Name) })
		if !all {
			d.Configs = ownConfigs(d.Configs)
		}
		out = append(out, d)
	}
	return out, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// Create is CreateTopics with replication factor -1 (the broker's).
func (b *Broker) Create(ctx context.Context, name string, partitions int32, configs map[string]string) (Topic, error) {
	cs := make(map[string]*string, len(configs))
	for k, v := range configs {
		cs[k] = &v
	}
	r, err := b.adm.CreateTopic(ctx, partitions, -1, cs, name)
	if err != nil {
		return Topic{}, refusal("create topic", name, err, r.ErrMessage)
	}
	return Topic{Topic: name, ID: brokerTopicID(r.ID), Partitions: r.NumPartitions}, nil
}

// Delete is DeleteTopics.
func (b *Broker) Delete(ctx context.Context, name string) (Topic, error) {
	r, err := b.adm.DeleteTopic(ctx, name)
	if err != nil {
		return Topic{}, refusal("delete topic", name, err, r.ErrMessage)
	}
	return Topic{Topic: name, ID: brokerTopicID(r.ID)}, nil
}

// AlterConfigs is IncrementalAlterConfigs, then DescribeConfigs for the
// configs after it.
func (b *Broker) AlterConfigs(ctx context.Context, name string, ops []ConfigOp) ([]Config, error) {
	const op = "alter configs of topic"
	acs := make([]kadm.AlterConfig, len(ops))
	for i, o := range ops {
		acs[i] = kadm.AlterConfig{Op: kadm.SetConfig, Name: o.Name, Value: o.Value}
		if o.Value == nil {
			acs[i].Op = kadm.DeleteConfig
		}
	}
	rs, err := b.adm.AlterTopicConfigs(ctx, acs, name)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", op, name, err)
	}
	r, err := rs.On(name, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return nil, refusal(op, name, err, r.ErrMessage)
	}
	ds, err := b.Describe(ctx, []string{name}, false)
	if err != nil {
		return nil, err
	}
	return ds[0].Configs, nil
}

// AddPartitions is CreatePartitions to total.
func (b *Broker) AddPartitions(ctx context.Context, name string, total int32) error {
	const op = "add partitions to topic"
	rs, err := b.adm.UpdatePartitions(ctx, int(total), name)
	if err != nil {
		return fmt.Errorf("%s %q: %w", op, name, err)
	}
	r, err := rs.On(name, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return refusal(op, name, err, r.ErrMessage)
	}
	return nil
}

// DeleteRecords is DeleteRecords of one partition.
func (b *Broker) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	const op = "delete records of"
	where := topic + "-" + strconv.Itoa(int(partition))
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset})
	rs, err := b.adm.DeleteRecords(ctx, os)
	var se *kadm.ShardErrors
	var ke *kerr.Error
	if errors.As(err, &se) && len(se.Errs) == 1 && errors.As(se.Errs[0].Err, &ke) {
		// The client found no leader for the partition in the broker's
		// Metadata: the broker does not have it.
		return -1, refusal(op, where, ke, "")
	}
	if err != nil {
		return -1, fmt.Errorf("%s %q: %w", op, where, err)
	}
	r, err := rs.On(topic, partition, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return -1, refusal(op, where, err, "")
	}
	return r.LowWatermark, nil
}
