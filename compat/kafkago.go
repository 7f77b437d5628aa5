package main

// segmentio/kafka-go's Client (github.com/segmentio/kafka-go, through
// the Go module proxy, imported by compat/ only): admin cells only. Its
// Transport picks each request's version from the server's ApiVersions
// answer: one row, "default". Its Client has no DeleteRecords and no
// DescribeLogDirs (nor does its protocol package have the messages),
// nor DescribeCluster: the cluster is described by its Metadata call.

import (
	"context"
	"errors"
	"fmt"

	kafka "github.com/segmentio/kafka-go"
)

const (
	kafkaGoClient   = "segmentio/kafka-go"
	kafkaGoClientID = "compat-kafka-go"
)

func init() {
	clientInfos = append(clientInfos, ClientInfo{
		Name:    kafkaGoClient,
		Version: "github.com/segmentio/kafka-go " + moduleVersion("github.com/segmentio/kafka-go"),
		Source:  "Go module proxy (compat/go.mod only, as the client under test)",
		Note:    "admin cells only (kafka.Client); versions column: default, its Transport picks each request's version from the server's ApiVersions answer",
	})
	cellSets = append(cellSets, kafkaGoCells)
}

// kafkaGoAdmin is a kafka-go Client of the cell's server, with its
// client id.
func kafkaGoAdmin(e *Env) *kafka.Client {
	return &kafka.Client{
		Addr:      kafka.TCP(e.Bootstrap[0]),
		Timeout:   adminTimeout,
		Transport: &kafka.Transport{ClientID: kafkaGoClientID},
	}
}

// firstErr is the first error of a kafka-go answer's map of errors
// (nil entries are successes).
func firstErr[K comparable](what string, errs map[K]error) error {
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("%s %v: %w", what, k, err)
		}
	}
	return nil
}

func kafkaGoCells() []Cell {
	ops := adminOps{
		CreateTopic: func(ctx context.Context, e *Env, topic string, partitions int32) error {
			resp, err := kafkaGoAdmin(e).CreateTopics(ctx, &kafka.CreateTopicsRequest{
				Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: int(partitions), ReplicationFactor: 1}},
			})
			if err != nil {
				return err
			}
			return firstErr("topic", resp.Errors)
		},
		DeleteTopic: func(ctx context.Context, e *Env, topic string) error {
			resp, err := kafkaGoAdmin(e).DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
			if err != nil {
				return err
			}
			return firstErr("topic", resp.Errors)
		},
		DescribeConfigs: func(ctx context.Context, e *Env, topic string, names []string) (map[string]string, error) {
			resp, err := kafkaGoAdmin(e).DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
				Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: names}},
			})
			if err != nil {
				return nil, err
			}
			out := map[string]string{}
			for _, r := range resp.Resources {
				if r.Error != nil {
					return nil, fmt.Errorf("%s: %w", r.ResourceName, r.Error)
				}
				for _, c := range r.ConfigEntries {
					out[c.ConfigName] = c.ConfigValue
				}
			}
			return out, nil
		},
		AlterConfigs: func(ctx context.Context, e *Env, topic string, configs map[string]string) error {
			var cs []kafka.AlterConfigRequestConfig
			for k, v := range configs {
				cs = append(cs, kafka.AlterConfigRequestConfig{Name: k, Value: v})
			}
			resp, err := kafkaGoAdmin(e).AlterConfigs(ctx, &kafka.AlterConfigsRequest{
				Resources: []kafka.AlterConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: cs}},
			})
			if err != nil {
				return err
			}
			return firstErr("resource", resp.Errors)
		},
		IncrementalAlter: func(ctx context.Context, e *Env, topic string, set map[string]string) error {
			var cs []kafka.IncrementalAlterConfigsRequestConfig
			for k, v := range set {
				cs = append(cs, kafka.IncrementalAlterConfigsRequestConfig{Name: k, Value: v, ConfigOperation: kafka.ConfigOperationSet})
			}
			resp, err := kafkaGoAdmin(e).IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{
				Resources: []kafka.IncrementalAlterConfigsRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: cs}},
			})
			if err != nil {
				return err
			}
			var errs []error
			for _, r := range resp.Resources {
				if r.Error != nil {
					errs = append(errs, fmt.Errorf("%s: %w", r.ResourceName, r.Error))
				}
			}
			if len(resp.Resources) == 0 {
				errs = append(errs, errors.New("no resource answered"))
			}
			return errors.Join(errs...)
		},
		CreatePartitions: func(ctx context.Context, e *Env, topic string, total int32) error {
			resp, err := kafkaGoAdmin(e).CreatePartitions(ctx, &kafka.CreatePartitionsRequest{
				Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: total}},
			})
			if err != nil {
				return err
			}
			return firstErr("topic", resp.Errors)
		},
		DescribeCluster: func(ctx context.Context, e *Env) (clusterInfo, error) {
			resp, err := kafkaGoAdmin(e).Metadata(ctx, &kafka.MetadataRequest{})
			if err != nil {
				return clusterInfo{}, err
			}
			ci := clusterInfo{ClusterID: resp.ClusterID, Controller: int32(resp.Controller.ID)}
			for _, b := range resp.Brokers {
				ci.Brokers = append(ci.Brokers, clusterBroker{ID: int32(b.ID), Host: b.Host, Port: int32(b.Port)})
			}
			return ci, nil
		},
		NA: map[string]string{
			FeatureDeleteRecords:   "kafka-go's Client has no DeleteRecords (its protocol package has no DeleteRecords message)",
			FeatureDescribeLogDirs: "kafka-go's Client has no DescribeLogDirs (its protocol package has no DescribeLogDirs message)",
		},
		Via: map[string]string{FeatureDescribeCluster: "kafka-go's Client has no DescribeCluster: its Metadata call"},
	}
	return adminCells(kafkaGoClient, "default", kafkaGoClientID, ops, nil)
}
