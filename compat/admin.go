package main

// The admin features: one cell per client (and version) per admin call.
// Each cell sets up what the call needs with kgo (the checker), lets the
// client under test make the call, and checks the outcome with kgo
// again: Metadata, DescribeConfigs, ListOffsets, and for the configs a
// restart of the server too; the client's own answer is checked where
// it says something (values, low watermark, sizes, brokers).

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafkatest"
)

// The admin features, the columns of the report's admin table.
const (
	FeatureCreateTopics     = "create topics"
	FeatureDeleteTopics     = "delete topics"
	FeatureDescribeConfigs  = "describe configs"
	FeatureAlterConfigs     = "alter configs"
	FeatureIncrementalAlter = "incremental alter configs"
	FeatureCreatePartitions = "create partitions"
	FeatureDeleteRecords    = "delete records"
	FeatureDescribeCluster  = "describe cluster"
	FeatureDescribeLogDirs  = "describe log dirs"
)

// adminFeatures is the order of the admin table's columns; a cell of
// one of these features goes into that table, not its client's.
var adminFeatures = []string{
	FeatureCreateTopics, FeatureDeleteTopics, FeatureDescribeConfigs, FeatureAlterConfigs, FeatureIncrementalAlter,
	FeatureCreatePartitions, FeatureDeleteRecords, FeatureDescribeCluster, FeatureDescribeLogDirs,
}

func isAdmin(feature string) bool { return slices.Contains(adminFeatures, feature) }

// clusterInfo is what a client says of the cluster.
type clusterInfo struct {
	ClusterID  string          `json:"cluster_id"` // "" when the client does not say
	Controller int32           `json:"controller"` // -1 when the client does not say
	Brokers    []clusterBroker `json:"brokers"`
}

type clusterBroker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// adminOps are a client's admin calls; a nil one is "n/a" with the
// reason in NA. Every call is bounded by ctx.
type adminOps struct {
	// CreateTopic creates topic with partitions, replication factor 1.
	CreateTopic func(ctx context.Context, e *Env, topic string, partitions int32) error
	DeleteTopic func(ctx context.Context, e *Env, topic string) error
	// DescribeConfigs returns the topic's configs of those names.
	DescribeConfigs func(ctx context.Context, e *Env, topic string, names []string) (map[string]string, error)
	// AlterConfigs sets the topic's configs to exactly these
	// (AlterConfigs, not incremental).
	AlterConfigs func(ctx context.Context, e *Env, topic string, configs map[string]string) error
	// IncrementalAlter sets these configs (SET), leaving the others.
	IncrementalAlter func(ctx context.Context, e *Env, topic string, set map[string]string) error
	// CreatePartitions grows topic to total partitions.
	CreatePartitions func(ctx context.Context, e *Env, topic string, total int32) error
	// DeleteRecords deletes the records of topic's partition below
	// before; low is the low watermark the client reports, -1 if none.
	DeleteRecords   func(ctx context.Context, e *Env, topic string, partition int32, before int64) (low int64, err error)
	DescribeCluster func(ctx context.Context, e *Env) (clusterInfo, error)
	// DescribeLogDirs returns the size of each of topic's partitions in
	// the broker's log directories.
	DescribeLogDirs func(ctx context.Context, e *Env, topic string) (map[int32]int64, error)
	// NA says why a nil call is missing, by feature.
	NA map[string]string
	// Via notes, by feature, how the client does it where that is not
	// the feature's own request (e.g. describe cluster through
	// Metadata); added to the cell's detail.
	Via map[string]string
}

// adminCells are the admin cells of one client row. wrap, when not nil,
// runs before each cell (an external client's "not installed" check).
func adminCells(client, version, clientID string, ops adminOps, wrap func(context.Context, *Env) *Result) []Cell {
	type feat struct {
		name string
		have bool
		run  func(context.Context, *Env, adminOps) Result
	}
	fs := []feat{
		{FeatureCreateTopics, ops.CreateTopic != nil, adminCreateTopics},
		{FeatureDeleteTopics, ops.DeleteTopic != nil, adminDeleteTopics},
		{FeatureDescribeConfigs, ops.DescribeConfigs != nil, adminDescribeConfigs},
		{FeatureAlterConfigs, ops.AlterConfigs != nil, adminAlterConfigs},
		{FeatureIncrementalAlter, ops.IncrementalAlter != nil, adminIncrementalAlter},
		{FeatureCreatePartitions, ops.CreatePartitions != nil, adminCreatePartitions},
		{FeatureDeleteRecords, ops.DeleteRecords != nil, adminDeleteRecords},
		{FeatureDescribeCluster, ops.DescribeCluster != nil, adminDescribeCluster},
		{FeatureDescribeLogDirs, ops.DescribeLogDirs != nil, adminDescribeLogDirs},
	}
	var cells []Cell
	for _, f := range fs {
		c := Cell{Client: client, Version: version, Feature: f.name, ClientID: clientID}
		if !f.have {
			why := ops.NA[f.name]
			if why == "" {
				why = "the client has no such call"
			}
			c.ClientID = ""
			c.Run = func(context.Context, *Env) Result { return notSupported("%s", why) }
		} else {
			c.Run = func(ctx context.Context, e *Env) Result {
				if wrap != nil {
					if r := wrap(ctx, e); r != nil {
						return *r
					}
				}
				r := f.run(ctx, e, ops)
				if via := ops.Via[f.name]; via != "" && r.Status == Pass {
					r.Detail += " (" + via + ")"
				}
				return r
			}
		}
		cells = append(cells, c)
	}
	return cells
}

// checker is a kgo client of the cell's checks (kgo's default client
// id, so the client under test's request versions stay its own).
func (e *Env) checker() (*kgo.Client, error) {
	return kgo.NewClient(kafkatest.ClientOpts(e.Bootstrap...)...)
}

// topicMeta is what kgo's Metadata says of topic: its partitions, or
// the topic's error (UNKNOWN_TOPIC_OR_PARTITION when it is not there).
func (e *Env) topicMeta(ctx context.Context, topic string) (partitions []int32, err error) {
	cl, err := e.checker()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kgo metadata: %w", err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, err
		}
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kgo metadata: %s-%d: %w", topic, p.Partition, err)
			}
			partitions = append(partitions, p.Partition)
		}
		slices.Sort(partitions)
		return partitions, nil
	}
	return nil, fmt.Errorf("kgo metadata: no answer for topic %s", topic)
}

// topicConfigs are the topic's configs as kgo's DescribeConfigs reads
// them: value and source by name.
func (e *Env) topicConfigs(ctx context.Context, topic string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, error) {
	cl, err := e.checker()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeTopic
	r.ResourceName = topic
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kgo describe configs: %w", err)
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("kgo describe configs: %d resources answered", len(resp.Resources))
	}
	rr := resp.Resources[0]
	if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
		return nil, fmt.Errorf("kgo describe configs of %s: %w", topic, err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range rr.Configs {
		out[c.Name] = c
	}
	return out, nil
}

// configValue is a config's value ("" for null).
func configValue(c kmsg.DescribeConfigsResponseResourceConfig) string {
	if c.Value == nil {
		return ""
	}
	return *c.Value
}

// produceTo writes n records with kgo to one partition of topic.
func (e *Env) produceTo(ctx context.Context, topic string, partition int32, n int) error {
	cl, err := kgo.NewClient(append(kafkatest.ClientOpts(e.Bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "adm-%d-%04d", partition, i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("kgo produce to %s-%d: %w", topic, partition, err)
		}
	}
	return nil
}

// adminCreateTopics: the client creates a topic of 3 partitions; kgo's
// Metadata must show it with partitions 0, 1 and 2.
func adminCreateTopics(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-new"
	if err := ops.CreateTopic(ctx, e, topic, 3); err != nil {
		return fail("create: %v", err)
	}
	ps, err := e.topicMeta(ctx, topic)
	if err != nil {
		return fail("after the create: %v", err)
	}
	if !slices.Equal(ps, []int32{0, 1, 2}) {
		return fail("created with 3 partitions, kgo's Metadata shows partitions %v", ps)
	}
	return pass("created %s with 3 partitions; kgo's Metadata shows partitions 0, 1, 2", topic)
}

// adminDeleteTopics: kgo creates a topic of 2 partitions and writes to
// it; the client deletes it; kgo's Metadata must answer
// UNKNOWN_TOPIC_OR_PARTITION, and once the server stopped no partition
// directory of it is left in the store.
func adminDeleteTopics(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-doomed"
	if err := e.CreateTopic(ctx, topic, 2); err != nil {
		return fail("%v", err)
	}
	if err := e.produceTo(ctx, topic, 0, 5); err != nil {
		return fail("%v", err)
	}
	if err := ops.DeleteTopic(ctx, e, topic); err != nil {
		return fail("delete: %v", err)
	}
	_, err := e.topicMeta(ctx, topic)
	if err != kerr.UnknownTopicOrPartition {
		return fail("after the delete kgo's Metadata says %v, not UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if err := e.Stop(); err != nil {
		return fail("%v", err)
	}
	for p := range 2 {
		if _, err := os.Stat(filepath.Join(e.Dir, fmt.Sprintf("%s-%d", topic, p))); err == nil {
			return fail("the store still has %s-%d after the delete", topic, p)
		}
	}
	return pass("deleted %s (2 partitions, 5 records); kgo's Metadata answers UNKNOWN_TOPIC_OR_PARTITION, and the stopped store has no directory of it", topic)
}

// Configs the config cells set. logstore serves each.
var (
	cfgCreated = map[string]string{"retention.ms": "3600000", "max.message.bytes": "500000"}
	cfgNames   = []string{"retention.ms", "max.message.bytes", "segment.bytes", "cleanup.policy"}
)

// adminDescribeConfigs: kgo creates a topic with retention.ms and
// max.message.bytes set; the client describes it and must read those
// values, and the values kgo reads of segment.bytes and cleanup.policy.
func adminDescribeConfigs(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-cfg"
	if err := kafkatest.CreateTopic(ctx, e.Bootstrap, topic, 1, cfgCreated); err != nil {
		return fail("%v", err)
	}
	want, err := e.topicConfigs(ctx, topic)
	if err != nil {
		return fail("%v", err)
	}
	got, err := ops.DescribeConfigs(ctx, e, topic, cfgNames)
	if err != nil {
		return fail("describe: %v", err)
	}
	var parts []string
	for _, n := range cfgNames {
		w, ok := want[n]
		if !ok {
			return fail("kgo's DescribeConfigs has no %s", n)
		}
		if v, ok := cfgCreated[n]; ok && configValue(w) != v {
			return fail("kgo reads %s=%q, the topic was created with %q", n, configValue(w), v)
		}
		g, ok := got[n]
		if !ok {
			return fail("the client's answer has no %s (it has %s)", n, strings.Join(slices.Sorted(maps.Keys(got)), ", "))
		}
		if g != configValue(w) {
			return fail("the client reads %s=%q, kgo reads %q", n, g, configValue(w))
		}
		parts = append(parts, n+"="+g)
	}
	return pass("the client reads %s, as kgo does (the first two set at creation)", strings.Join(parts, ", "))
}

// checkConfigs reads the topic's configs with kgo, now and after a
// restart of the server, and checks that they have want's values and
// that the configs in unset are back at their defaults (source
// DEFAULT_CONFIG, or not dynamic).
func checkConfigs(ctx context.Context, e *Env, topic string, want map[string]string, unset []string) error {
	for _, when := range []string{"", " after a restart"} {
		if when != "" {
			if err := e.Restart(); err != nil {
				return err
			}
		}
		got, err := e.topicConfigs(ctx, topic)
		if err != nil {
			return fmt.Errorf("%w%s", err, when)
		}
		for n, v := range want {
			if c := got[n]; configValue(c) != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				return fmt.Errorf("kgo reads %s=%q (source %s)%s, want %q (DYNAMIC_TOPIC_CONFIG)", n, configValue(c), c.Source, when, v)
			}
		}
		for _, n := range unset {
			if c := got[n]; c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				return fmt.Errorf("kgo reads %s=%q (DYNAMIC_TOPIC_CONFIG)%s: AlterConfigs sets the whole set of a topic's configs, so %s should be back at its default", n, configValue(c), when, n)
			}
		}
	}
	return nil
}

// adminAlterConfigs: kgo creates a topic with retention.ms and
// max.message.bytes; the client's AlterConfigs (the whole set) sets
// retention.ms alone; kgo must read the new retention.ms, and
// max.message.bytes back at its default, before and after a restart.
func adminAlterConfigs(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-alter"
	if err := kafkatest.CreateTopic(ctx, e.Bootstrap, topic, 1, cfgCreated); err != nil {
		return fail("%v", err)
	}
	want := map[string]string{"retention.ms": "7200000"}
	if err := ops.AlterConfigs(ctx, e, topic, want); err != nil {
		return fail("alter: %v", err)
	}
	if err := checkConfigs(ctx, e, topic, want, []string{"max.message.bytes"}); err != nil {
		return fail("%v", err)
	}
	return pass("AlterConfigs retention.ms=7200000 (the whole set): kgo reads it, and max.message.bytes (set at creation) back at its default, before and after a server restart")
}

// adminIncrementalAlter: like adminAlterConfigs, but the client's
// IncrementalAlterConfigs SETs retention.ms: max.message.bytes must
// keep the value it was created with.
func adminIncrementalAlter(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-incr"
	if err := kafkatest.CreateTopic(ctx, e.Bootstrap, topic, 1, cfgCreated); err != nil {
		return fail("%v", err)
	}
	if err := ops.IncrementalAlter(ctx, e, topic, map[string]string{"retention.ms": "5400000"}); err != nil {
		return fail("incremental alter: %v", err)
	}
	want := map[string]string{"retention.ms": "5400000", "max.message.bytes": cfgCreated["max.message.bytes"]}
	if err := checkConfigs(ctx, e, topic, want, nil); err != nil {
		return fail("%v", err)
	}
	return pass("SET retention.ms=5400000: kgo reads it, and max.message.bytes=500000 (set at creation) kept, before and after a server restart")
}

// adminCreatePartitions: kgo creates a topic of 2 partitions; the
// client grows it to 5; kgo's Metadata must show 0..4, and kgo must
// write to partition 4.
func adminCreatePartitions(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-grow"
	if err := e.CreateTopic(ctx, topic, 2); err != nil {
		return fail("%v", err)
	}
	if err := ops.CreatePartitions(ctx, e, topic, 5); err != nil {
		return fail("create partitions: %v", err)
	}
	ps, err := e.topicMeta(ctx, topic)
	if err != nil {
		return fail("after the create: %v", err)
	}
	if !slices.Equal(ps, []int32{0, 1, 2, 3, 4}) {
		return fail("grown to 5 partitions, kgo's Metadata shows partitions %v", ps)
	}
	if err := e.produceTo(ctx, topic, 4, 1); err != nil {
		return fail("%v", err)
	}
	return pass("grew %s from 2 to 5 partitions; kgo's Metadata shows partitions 0-4, and kgo writes to partition 4", topic)
}

// adminDeleteRecords: kgo writes 10 records to each of 2 partitions;
// the client deletes partition 0's records below offset 6; kgo's
// ListOffsets (earliest) must say 6 for partition 0 and 0 for
// partition 1, before and after a restart, and the client's low
// watermark, where it reports one, 6.
func adminDeleteRecords(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-trim"
	if err := e.CreateTopic(ctx, topic, 2); err != nil {
		return fail("%v", err)
	}
	for p := range int32(2) {
		if err := e.produceTo(ctx, topic, p, 10); err != nil {
			return fail("%v", err)
		}
	}
	low, err := ops.DeleteRecords(ctx, e, topic, 0, 6)
	if err != nil {
		return fail("delete records: %v", err)
	}
	if low != -1 && low != 6 {
		return fail("deleted below offset 6, the client reports low watermark %d", low)
	}
	for _, when := range []string{"", " after a restart"} {
		if when != "" {
			if err := e.Restart(); err != nil {
				return fail("%v", err)
			}
		}
		earliest, err := e.earliest(ctx, topic, 2)
		if err != nil {
			return fail("%v", err)
		}
		if earliest[0] != 6 || earliest[1] != 0 {
			return fail("kgo's ListOffsets earliest%s: partition 0 %d (want 6), partition 1 %d (want 0)", when, earliest[0], earliest[1])
		}
	}
	lw := "it reports no low watermark"
	if low == 6 {
		lw = "it reports low watermark 6"
	}
	return pass("deleted %s-0 below offset 6 of 10 (%s); kgo's ListOffsets earliest is 6 there and 0 in partition 1, before and after a server restart", topic, lw)
}

// earliest is each partition's log start offset (ListOffsets, timestamp
// -2), by kgo.
func (e *Env) earliest(ctx context.Context, topic string, partitions int32) (map[int32]int64, error) {
	cl, err := e.checker()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -2
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kgo list offsets: %w", err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kgo list offsets %s-%d: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// adminDescribeCluster: the client must see one broker, at the address
// the server advertises (the proxy's), with the node id and cluster id
// kgo's Metadata says, and that broker as the controller (where the
// client says them).
func adminDescribeCluster(ctx context.Context, e *Env, ops adminOps) Result {
	cl, err := e.checker()
	if err != nil {
		return fail("%v", err)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	cl.Close()
	if err != nil {
		return fail("kgo metadata: %v", err)
	}
	if len(meta.Brokers) != 1 {
		return fail("kgo's Metadata has %d brokers", len(meta.Brokers))
	}
	kb := meta.Brokers[0]
	got, err := ops.DescribeCluster(ctx, e)
	if err != nil {
		return fail("describe cluster: %v", err)
	}
	if len(got.Brokers) != 1 {
		return fail("the client sees %d brokers: %v", len(got.Brokers), got.Brokers)
	}
	b := got.Brokers[0]
	addr := fmt.Sprintf("%s:%d", b.Host, b.Port)
	if b.ID != kb.NodeID || addr != e.Bootstrap[0] {
		return fail("the client sees broker %d at %s; kgo's Metadata says broker %d, and the server advertises %s", b.ID, addr, kb.NodeID, e.Bootstrap[0])
	}
	var said []string
	if got.ClusterID != "" {
		if meta.ClusterID == nil || *meta.ClusterID != got.ClusterID {
			return fail("the client sees cluster id %q, kgo's Metadata %v", got.ClusterID, kmsg.StringPtr(derefOr(meta.ClusterID, "null")))
		}
		said = append(said, "cluster id "+got.ClusterID)
	}
	if got.Controller != -1 {
		if got.Controller != kb.NodeID {
			return fail("the client sees controller %d, the broker is %d", got.Controller, kb.NodeID)
		}
		said = append(said, "controller "+strconv.Itoa(int(got.Controller)))
	}
	if len(said) == 0 {
		said = append(said, "the client says neither cluster id nor controller")
	}
	return pass("one broker, %d at %s (the advertised address); %s, as kgo's Metadata says", b.ID, addr, strings.Join(said, ", "))
}

func derefOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

// adminDescribeLogDirs: kgo writes 20 records to partition 0 of a
// topic of 2 partitions; the client's sizes must be > 0 for partition
// 0 and 0 for partition 1, and partition 0's the size of its segment
// files once the server has stopped.
func adminDescribeLogDirs(ctx context.Context, e *Env, ops adminOps) Result {
	const topic = "adm-dirs"
	if err := e.CreateTopic(ctx, topic, 2); err != nil {
		return fail("%v", err)
	}
	if err := e.produceTo(ctx, topic, 0, 20); err != nil {
		return fail("%v", err)
	}
	sizes, err := ops.DescribeLogDirs(ctx, e, topic)
	if err != nil {
		return fail("describe log dirs: %v", err)
	}
	s0, ok0 := sizes[0]
	s1, ok1 := sizes[1]
	if !ok0 || !ok1 || s0 <= 0 || s1 != 0 {
		return fail("the client's sizes %v: want partition 0 > 0 (20 records) and partition 1 0 (empty)", sizes)
	}
	if err := e.Stop(); err != nil {
		return fail("%v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(e.Dir, topic+"-0", "*.log"))
	var onDisk int64
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			return fail("%v", err)
		}
		onDisk += fi.Size()
	}
	if onDisk != s0 {
		return fail("the client says partition 0 is %d bytes, its segment files are %d bytes", s0, onDisk)
	}
	return pass("partition 0 (20 records) %d bytes, the size of its segment files; partition 1 (empty) 0", s0)
}

// adminTimeout bounds one admin call of a Go client.
const adminTimeout = 10 * time.Second
