package main

// The admin calls of the drivers in compat/clients: each call is one
// run of the driver's admin mode with {"op": ..., its arguments}, which
// prints one line {"result": ...}; a failed call exits non-zero, its
// error on stderr (runDriver's error carries it).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// adminRunner runs one admin call of a driver and returns its result.
type adminRunner func(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error)

// adminResult is the one result line of a driver run.
func adminResult(run *driverRun) (json.RawMessage, error) {
	for _, l := range run.Lines {
		if l.Result != nil {
			return l.Result, nil
		}
	}
	return nil, errors.New("the driver printed no result line")
}

// driverAdminOps are the admin calls of a driver that has the ops in
// has (by feature); the rest are nil, n/a for the reasons in na.
func driverAdminOps(run adminRunner, has map[string]bool, na, via map[string]string) adminOps {
	call := func(ctx context.Context, e *Env, args map[string]any, into any) error {
		res, err := run(ctx, e, args)
		if err != nil {
			return err
		}
		if into == nil {
			return nil
		}
		if err := json.Unmarshal(res, into); err != nil {
			return fmt.Errorf("the driver's result %s: %w", tail(string(res), 300), err)
		}
		return nil
	}
	ops := adminOps{NA: na, Via: via}
	if has[FeatureCreateTopics] {
		ops.CreateTopic = func(ctx context.Context, e *Env, topic string, partitions int32) error {
			return call(ctx, e, map[string]any{"op": "create_topic", "topic": topic, "partitions": partitions}, nil)
		}
	}
	if has[FeatureDeleteTopics] {
		ops.DeleteTopic = func(ctx context.Context, e *Env, topic string) error {
			return call(ctx, e, map[string]any{"op": "delete_topic", "topic": topic}, nil)
		}
	}
	if has[FeatureDescribeConfigs] {
		ops.DescribeConfigs = func(ctx context.Context, e *Env, topic string, names []string) (map[string]string, error) {
			var r struct {
				Configs map[string]*string `json:"configs"`
			}
			err := call(ctx, e, map[string]any{"op": "describe_configs", "topic": topic, "names": names}, &r)
			out := map[string]string{}
			for k, v := range r.Configs {
				out[k] = derefOr(v, "")
			}
			return out, err
		}
	}
	if has[FeatureAlterConfigs] {
		ops.AlterConfigs = func(ctx context.Context, e *Env, topic string, configs map[string]string) error {
			return call(ctx, e, map[string]any{"op": "alter_configs", "topic": topic, "configs": configs}, nil)
		}
	}
	if has[FeatureIncrementalAlter] {
		ops.IncrementalAlter = func(ctx context.Context, e *Env, topic string, set map[string]string) error {
			return call(ctx, e, map[string]any{"op": "incremental_alter_configs", "topic": topic, "configs": set}, nil)
		}
	}
	if has[FeatureCreatePartitions] {
		ops.CreatePartitions = func(ctx context.Context, e *Env, topic string, total int32) error {
			return call(ctx, e, map[string]any{"op": "create_partitions", "topic": topic, "total": total}, nil)
		}
	}
	if has[FeatureDeleteRecords] {
		ops.DeleteRecords = func(ctx context.Context, e *Env, topic string, partition int32, before int64) (int64, error) {
			r := struct {
				Low *int64 `json:"low"`
			}{}
			err := call(ctx, e, map[string]any{"op": "delete_records", "topic": topic, "partition": partition, "before": before}, &r)
			if r.Low == nil {
				return -1, err
			}
			return *r.Low, err
		}
	}
	if has[FeatureDescribeCluster] {
		ops.DescribeCluster = func(ctx context.Context, e *Env) (clusterInfo, error) {
			ci := clusterInfo{Controller: -1}
			err := call(ctx, e, map[string]any{"op": "describe_cluster"}, &ci)
			return ci, err
		}
	}
	if has[FeatureDescribeLogDirs] {
		ops.DescribeLogDirs = func(ctx context.Context, e *Env, topic string) (map[int32]int64, error) {
			var r struct {
				Sizes map[string]int64 `json:"sizes"`
			}
			err := call(ctx, e, map[string]any{"op": "describe_log_dirs", "topic": topic}, &r)
			out := map[int32]int64{}
			for k, v := range r.Sizes {
				p, perr := strconv.ParseInt(k, 10, 32)
				if perr != nil {
					return nil, fmt.Errorf("the driver's sizes: partition %q: %w", k, perr)
				}
				out[int32(p)] = v
			}
			return out, err
		}
	}
	return ops
}

// features is a set of features, for driverAdminOps.
func featureSet(fs ...string) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		m[f] = true
	}
	return m
}
