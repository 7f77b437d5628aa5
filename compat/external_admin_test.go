package main

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// TestDriverAdminOps: the result lines of a driver's admin calls become
// what the admin cells check (configs with a null value as "", a
// missing low watermark and controller as -1, sizes by partition), and
// a driver that printed no result line, or a malformed one, is an error.
func TestDriverAdminOps(t *testing.T) {
	var out string
	run := func(_ context.Context, _ *Env, args map[string]any) (json.RawMessage, error) {
		lines, err := parseDriverLines([]byte(out))
		if err != nil {
			return nil, err
		}
		return adminResult(&driverRun{Lines: lines})
	}
	ops := driverAdminOps(run, featureSet(adminFeatures...), nil, nil)
	ctx := context.Background()

	out = `{"result": {"configs": {"retention.ms": "3600000", "cleanup.policy": null}}}`
	cfg, err := ops.DescribeConfigs(ctx, nil, "t", nil)
	if err != nil || !maps.Equal(cfg, map[string]string{"retention.ms": "3600000", "cleanup.policy": ""}) {
		t.Fatalf("configs %v, %v", cfg, err)
	}
	out = `{"result": {}}`
	if low, err := ops.DeleteRecords(ctx, nil, "t", 0, 6); err != nil || low != -1 {
		t.Fatalf("low %d, %v: want -1 when the driver reports none", low, err)
	}
	out = `{"result": {"low": 6}}`
	if low, err := ops.DeleteRecords(ctx, nil, "t", 0, 6); err != nil || low != 6 {
		t.Fatalf("low %d, %v", low, err)
	}
	out = `{"result": {"cluster_id": "c", "brokers": [{"id": 0, "host": "127.0.0.1", "port": 9092}]}}`
	ci, err := ops.DescribeCluster(ctx, nil)
	if err != nil || ci.ClusterID != "c" || ci.Controller != -1 || len(ci.Brokers) != 1 || ci.Brokers[0].Port != 9092 {
		t.Fatalf("cluster %+v, %v", ci, err)
	}
	out = `{"result": {"sizes": {"0": 1560, "1": 0}}}`
	sizes, err := ops.DescribeLogDirs(ctx, nil, "t")
	if err != nil || !maps.Equal(sizes, map[int32]int64{0: 1560, 1: 0}) {
		t.Fatalf("sizes %v, %v", sizes, err)
	}
	for _, bad := range []struct{ out, want string }{
		{`{"value": "v", "partition": 0, "offset": 0}`, "no result line"},
		{`{"result": {"sizes": {"x": 1}}}`, `partition "x"`},
		{`{"result": {"sizes": [1]}}`, "the driver's result"},
	} {
		out = bad.out
		if _, err := ops.DescribeLogDirs(ctx, nil, "t"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error with %q", bad.out, err, bad.want)
		}
	}
}

// TestAdminCellsNA: a client without a call gets an n/a cell with its
// reason, which runs no server work, and no client id (no requests line).
func TestAdminCellsNA(t *testing.T) {
	ops := adminOps{NA: map[string]string{FeatureDeleteRecords: "no delete_records"}}
	cells := adminCells("c", "default", "compat-c", ops, nil)
	if len(cells) != len(adminFeatures) {
		t.Fatalf("%d cells, want %d", len(cells), len(adminFeatures))
	}
	for i, c := range cells {
		if c.Feature != adminFeatures[i] || c.ClientID != "" {
			t.Fatalf("cell %d: %+v", i, c)
		}
		r := c.Run(context.Background(), nil)
		if r.Status != NotSupported {
			t.Fatalf("%s: %v", c.Feature, r)
		}
		if c.Feature == FeatureDeleteRecords && r.Detail != "no delete_records" {
			t.Fatalf("delete records: %q", r.Detail)
		}
	}
}
