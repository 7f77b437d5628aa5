package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestReportGolden renders a report of every kind of cell (pass, FAIL
// with a long and a multi-line detail and a "|" in it, n/a, not
// installed, a feature outside the standard columns, a version row that
// lacks a feature, admin cells, a client with admin cells only) and compares it with testdata/report.golden.md.
func TestReportGolden(t *testing.T) {
	r := &report{
		Date:     time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC),
		Took:     187 * time.Second,
		Commit:   "0123456789abcdef0123456789abcdef01234567",
		Go:       "go1.26.8",
		Platform: "linux/amd64",
		Clients: []ClientInfo{
			{Name: "franz-go (kgo)", Version: "github.com/twmb/franz-go v1.22.3", Source: "Go module proxy", Note: "MaxVersions"},
			{Name: "kcat", Version: "not installed", Source: "Debian package kcat", Note: "default: ApiVersions | negotiated"},
		},
		Outcomes: []outcome{
			{Cell: Cell{Client: "franz-go (kgo)", Version: "0.11", Feature: FeatureProduce}, Result: pass("200 records"), Took: 500 * time.Millisecond, Wire: "Produce v3, Fetch v5"},
			{Cell: Cell{Client: "franz-go (kgo)", Version: "0.11", Feature: FeatureZstd}, Result: notSupported("zstd needs Produce v7 (Kafka 2.1)"), Took: time.Millisecond},
			{Cell: Cell{Client: "franz-go (kgo)", Version: "newest", Feature: FeatureProduce}, Result: fail("consumed: %s", "a | b and a detail long enough to be cut short in the table, so that the table stays readable; the details keep all of it"), Took: 2 * time.Second},
			{Cell: Cell{Client: "franz-go (kgo)", Version: "newest", Feature: FeatureZstd}, Result: fail("the server exited with exit status 1; its stderr:\nline one\nline two"), Took: 3 * time.Second},
			{Cell: Cell{Client: "kcat", Version: "default", Feature: FeatureGroups}, Result: unavailable("kcat is not on PATH"), Took: 0},
			{Cell: Cell{Client: "kcat", Version: "default", Feature: "metadata"}, Result: pass("one broker"), Took: 100 * time.Millisecond},
			{Cell: Cell{Client: "franz-go (kgo)", Version: "newest", Feature: FeatureCreateTopics}, Result: pass("created"), Took: 300 * time.Millisecond, Wire: "CreateTopics v7"},
			{Cell: Cell{Client: "franz-go (kgo)", Version: "newest", Feature: FeatureDeleteRecords}, Result: fail("kgo's ListOffsets earliest: partition 0 0 (want 6)"), Took: 400 * time.Millisecond},
			{Cell: Cell{Client: "admin-only", Version: "default", Feature: FeatureDescribeLogDirs}, Result: notSupported("no such call"), Took: 0},
		},
		Partial: true,
	}
	var buf bytes.Buffer
	if err := r.write(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./compat -run TestReportGolden -update writes it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("the report differs from %s (-update rewrites it); got:\n%s", golden, buf.Bytes())
	}
}
