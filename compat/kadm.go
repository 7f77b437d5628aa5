package main

// kgo's admin client, kadm (github.com/twmb/franz-go/pkg/kadm, over a
// kgo client at the version's MaxVersions): the admin rows of kgo.
// kadm has no DescribeCluster call: that cell sends kmsg's
// DescribeClusterRequest (API 60) through the same kgo client.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	cellSets = append(cellSets, kadmCells)
}

func kadmCells() []Cell {
	var cells []Cell
	for _, v := range kgoVersions() {
		if v.name != "2.8" && v.name != "newest" {
			continue
		}
		cells = append(cells, adminCells(kgoClient, v.name, kgoClientID, kadmOps(v), nil)...)
	}
	return cells
}

// withKadm runs fn with a kadm client over a kgo client at the version.
func withKadm(ctx context.Context, e *Env, v kgoVersion, fn func(context.Context, *kadm.Client) error) error {
	return withKgo(ctx, e, v, func(ctx context.Context, cl *kgo.Client) error { return fn(ctx, kadm.NewClient(cl)) })
}

// withKgo runs fn with a kgo client at the version, bounded by
// adminTimeout.
func withKgo(ctx context.Context, e *Env, v kgoVersion, fn func(context.Context, *kgo.Client) error) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Bootstrap...)}, v.opts()...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	return fn(ctx, cl)
}

func kadmOps(v kgoVersion) adminOps {
	return adminOps{
		CreateTopic: func(ctx context.Context, e *Env, topic string, partitions int32) error {
			return withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				r, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
				if err != nil {
					return err
				}
				return r.Err
			})
		},
		DeleteTopic: func(ctx context.Context, e *Env, topic string) error {
			return withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				r, err := adm.DeleteTopic(ctx, topic)
				if err != nil {
					return err
				}
				return r.Err
			})
		},
		DescribeConfigs: func(ctx context.Context, e *Env, topic string, names []string) (map[string]string, error) {
			out := map[string]string{}
			err := withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				rs, err := adm.DescribeTopicConfigs(ctx, topic)
				if err != nil {
					return err
				}
				r, err := rs.On(topic, nil)
				if err != nil {
					return err
				}
				if r.Err != nil {
					return r.Err
				}
				for _, c := range r.Configs {
					out[c.Key] = derefOr(c.Value, "")
				}
				return nil
			})
			return out, err
		},
		AlterConfigs: func(ctx context.Context, e *Env, topic string, configs map[string]string) error {
			return withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				return alterErr(adm.AlterTopicConfigsState(ctx, kadmConfigs(configs, kadm.SetConfig), topic))
			})
		},
		IncrementalAlter: func(ctx context.Context, e *Env, topic string, set map[string]string) error {
			return withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				return alterErr(adm.AlterTopicConfigs(ctx, kadmConfigs(set, kadm.SetConfig), topic))
			})
		},
		CreatePartitions: func(ctx context.Context, e *Env, topic string, total int32) error {
			return withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				rs, err := adm.UpdatePartitions(ctx, int(total), topic)
				if err != nil {
					return err
				}
				r, ok := rs[topic]
				if !ok {
					return fmt.Errorf("no answer for %s", topic)
				}
				return r.Err
			})
		},
		DeleteRecords: func(ctx context.Context, e *Env, topic string, partition int32, before int64) (int64, error) {
			low := int64(-1)
			err := withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				var os kadm.Offsets
				os.Add(kadm.Offset{Topic: topic, Partition: partition, At: before})
				rs, err := adm.DeleteRecords(ctx, os)
				if err != nil {
					return err
				}
				r, ok := rs.Lookup(topic, partition)
				if !ok {
					return fmt.Errorf("no answer for %s-%d", topic, partition)
				}
				low = r.LowWatermark
				return r.Err
			})
			return low, err
		},
		DescribeCluster: func(ctx context.Context, e *Env) (clusterInfo, error) {
			var ci clusterInfo
			err := withKgo(ctx, e, v, func(ctx context.Context, cl *kgo.Client) error {
				resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
				if err != nil {
					return err
				}
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					return fmt.Errorf("%w: %s", err, derefOr(resp.ErrorMessage, ""))
				}
				ci.ClusterID, ci.Controller = resp.ClusterID, resp.ControllerID
				for _, b := range resp.Brokers {
					ci.Brokers = append(ci.Brokers, clusterBroker{ID: b.NodeID, Host: b.Host, Port: b.Port})
				}
				return nil
			})
			return ci, err
		},
		DescribeLogDirs: func(ctx context.Context, e *Env, topic string) (map[int32]int64, error) {
			sizes := map[int32]int64{}
			err := withKadm(ctx, e, v, func(ctx context.Context, adm *kadm.Client) error {
				all, err := adm.DescribeAllLogDirs(ctx, nil)
				if err != nil {
					return err
				}
				var errs []error
				for _, d := range all.Sorted() {
					if d.Err != nil {
						errs = append(errs, fmt.Errorf("broker %d dir %s: %w", d.Broker, d.Dir, d.Err))
					}
					for p, dp := range d.Topics[topic] {
						sizes[p] += dp.Size
					}
				}
				return errors.Join(errs...)
			})
			return sizes, err
		},
		Via: map[string]string{FeatureDescribeCluster: "kadm has no DescribeCluster call: kmsg.DescribeClusterRequest through the same kgo client"},
	}
}

// kadmConfigs are configs as kadm's AlterConfig list.
func kadmConfigs(configs map[string]string, op kadm.IncrementalOp) []kadm.AlterConfig {
	var out []kadm.AlterConfig
	for k, v := range configs {
		out = append(out, kadm.AlterConfig{Op: op, Name: k, Value: kmsg.StringPtr(v)})
	}
	return out
}

// alterErr is the first error of a kadm alter.
func alterErr(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return errors.New("no answer")
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
