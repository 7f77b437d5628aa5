package main

// kafka-python's KafkaAdminClient (Debian's python3-kafka 2.0.2, a
// pure-Python client, for /usr/bin/python3), driven by
// compat/clients/kafka_python.py: admin cells only. It picks each
// request's version from the server's ApiVersions answer, capped at the
// versions it implements: one row, "default".

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/logstore/logstore/internal/kafkaclients"
)

//go:embed clients/kafka_python.py
var kafkaPythonDriver string

const (
	kafkaPythonClient   = "kafka-python"
	kafkaPythonClientID = "compat-kafka-python"
)

// kafkaPython returns a python3 that imports kafka (kafka-python), and
// its version: Debian's python3-kafka installs it for /usr/bin/python3,
// which is tried first.
var kafkaPython = sync.OnceValues(func() (string, error) {
	var tried []string
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		tried = append(tried, path)
		if exec.Command(path, "-c", "import kafka.admin").Run() == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: no python3 imports kafka (kafka-python; tried %s; Debian package python3-kafka)", kafkaclients.ErrMissing, strings.Join(tried, ", "))
})

func init() {
	info := ClientInfo{Name: kafkaPythonClient, Version: "not installed", Source: "Debian package python3-kafka",
		Note: "admin cells only (KafkaAdminClient); versions column: default, it picks each request's version from the server's ApiVersions answer, up to the versions it implements"}
	if py, err := kafkaPython(); err == nil {
		if out, err := exec.Command(py, "-c", "import kafka; print(kafka.__version__)").Output(); err == nil {
			info.Version = "kafka-python " + strings.TrimSpace(string(out))
		}
	}
	clientInfos = append(clientInfos, info)
	cellSets = append(cellSets, kafkaPythonCells)
}

func kafkaPythonCells() []Cell {
	run := func(ctx context.Context, e *Env, args map[string]any) (json.RawMessage, error) {
		py, err := kafkaPython()
		if err != nil {
			return nil, err
		}
		args["bootstrap"] = e.Bootstrap[0]
		args["client"] = kafkaPythonClientID
		args["seconds"] = driverSeconds(ctx)
		js, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		r, err := runDriver(ctx, "kafka_python.py "+fmt.Sprint(args["op"]), e.Tmp, nil, "", py, "-c", kafkaPythonDriver, "admin", string(js))
		if err != nil {
			return nil, err
		}
		return adminResult(r)
	}
	ops := driverAdminOps(run,
		featureSet(FeatureCreateTopics, FeatureDeleteTopics, FeatureDescribeConfigs, FeatureAlterConfigs, FeatureCreatePartitions, FeatureDescribeCluster),
		map[string]string{
			FeatureIncrementalAlter: "KafkaAdminClient of kafka-python 2.0.2 has no incremental alter (alter_configs sends AlterConfigs)",
			FeatureDeleteRecords:    "KafkaAdminClient of kafka-python 2.0.2 has no delete_records",
			FeatureDescribeLogDirs:  "KafkaAdminClient of kafka-python 2.0.2 has no call that describes log dirs",
		},
		map[string]string{FeatureDescribeCluster: "KafkaAdminClient.describe_cluster sends Metadata"})
	return adminCells(kafkaPythonClient, "default", kafkaPythonClientID, ops, func(context.Context, *Env) *Result {
		if _, err := kafkaPython(); err != nil {
			r := unavailable("%v", err)
			return &r
		}
		return nil
	})
}
