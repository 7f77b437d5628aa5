package main

// sarama's ClusterAdmin at 2.8 and newest: the admin rows of sarama.
// ClusterAdmin has every admin call; its DescribeCluster sends
// DescribeCluster (API 60) at Version 2.8 and up (Metadata below) and
// returns no cluster id.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/IBM/sarama"
)

func init() {
	cellSets = append(cellSets, saramaAdminCells)
}

func saramaAdminCells() []Cell {
	var cells []Cell
	for _, v := range saramaVersions() {
		if v.name != "2.8" && v.name != "newest" {
			continue
		}
		cells = append(cells, adminCells(saramaClient, v.name, saramaClientID, saramaAdminOps(v), nil)...)
	}
	return cells
}

// withSaramaAdmin runs fn with a ClusterAdmin at the version; sarama's
// calls take no context: fn runs in a goroutine and the wait for it
// ends with ctx (the admin is closed then, which ends its calls).
func withSaramaAdmin(ctx context.Context, e *Env, v saramaVersion, fn func(sarama.ClusterAdmin) error) error {
	cfg := v.config()
	cfg.Admin.Timeout = adminTimeout
	adm, err := sarama.NewClusterAdmin(e.Bootstrap, cfg)
	if err != nil {
		return fmt.Errorf("sarama cluster admin: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- fn(adm) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if cerr := adm.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	return err
}

func saramaAdminOps(v saramaVersion) adminOps {
	return adminOps{
		CreateTopic: func(ctx context.Context, e *Env, topic string, partitions int32) error {
			return withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				return adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
			})
		},
		DeleteTopic: func(ctx context.Context, e *Env, topic string) error {
			return withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error { return adm.DeleteTopic(topic) })
		},
		DescribeConfigs: func(ctx context.Context, e *Env, topic string, names []string) (map[string]string, error) {
			out := map[string]string{}
			err := withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				rs, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic, ConfigNames: names}}, sarama.DescribeConfigsOptions{})
				if err != nil {
					return err
				}
				for _, r := range rs {
					if r.ErrorCode != sarama.ErrNoError {
						return fmt.Errorf("%s: %w: %s", r.Name, r.ErrorCode, r.ErrorMsg)
					}
					for _, c := range r.Configs {
						out[c.Name] = c.Value
					}
				}
				return nil
			})
			return out, err
		},
		AlterConfigs: func(ctx context.Context, e *Env, topic string, configs map[string]string) error {
			entries := map[string]*string{}
			for k, val := range configs {
				entries[k] = &val
			}
			return withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				return adm.AlterConfig(sarama.TopicResource, topic, entries, false)
			})
		},
		IncrementalAlter: func(ctx context.Context, e *Env, topic string, set map[string]string) error {
			entries := map[string]sarama.IncrementalAlterConfigsEntry{}
			for k, val := range set {
				entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &val}
			}
			return withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				return adm.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false)
			})
		},
		CreatePartitions: func(ctx context.Context, e *Env, topic string, total int32) error {
			return withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				return adm.CreatePartitions(topic, total, nil, false)
			})
		},
		DeleteRecords: func(ctx context.Context, e *Env, topic string, partition int32, before int64) (int64, error) {
			// sarama's DeleteRecords does not return the low watermark.
			return -1, withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				return adm.DeleteRecords(topic, map[int32]int64{partition: before})
			})
		},
		DescribeCluster: func(ctx context.Context, e *Env) (clusterInfo, error) {
			ci := clusterInfo{}
			err := withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				brokers, controller, err := adm.DescribeCluster()
				if err != nil {
					return err
				}
				ci.Controller = controller
				for _, b := range brokers {
					host, port, err := net.SplitHostPort(b.Addr())
					if err != nil {
						return err
					}
					p, _ := strconv.Atoi(port)
					ci.Brokers = append(ci.Brokers, clusterBroker{ID: b.ID(), Host: host, Port: int32(p)})
				}
				return nil
			})
			return ci, err
		},
		DescribeLogDirs: func(ctx context.Context, e *Env, topic string) (map[int32]int64, error) {
			sizes := map[int32]int64{}
			err := withSaramaAdmin(ctx, e, v, func(adm sarama.ClusterAdmin) error {
				brokers, _, err := adm.DescribeCluster()
				if err != nil {
					return err
				}
				var ids []int32
				for _, b := range brokers {
					ids = append(ids, b.ID())
				}
				all, err := adm.DescribeLogDirs(ids)
				if err != nil {
					return err
				}
				var errs []error
				for b, dirs := range all {
					for _, d := range dirs {
						if d.ErrorCode != sarama.ErrNoError {
							errs = append(errs, fmt.Errorf("broker %d dir %s: %w", b, d.Path, d.ErrorCode))
						}
						for _, t := range d.Topics {
							if t.Topic != topic {
								continue
							}
							for _, p := range t.Partitions {
								sizes[p.PartitionID] += p.Size
							}
						}
					}
				}
				return errors.Join(errs...)
			})
			return sizes, err
		},
		Via: map[string]string{FeatureDescribeCluster: "ClusterAdmin.DescribeCluster sends DescribeCluster at Version 2.8 and up, Metadata below, and returns no cluster id"},
	}
}
