package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/testutil"
)

// perf produce and consume with --bootstrap drive a running broker
// (franz-go's kfake stands in for logstore serve): every record is
// acknowledged and read back, and the report says it went over the wire.
func TestPerfWire(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]

	rep := perfProduceJSON(t, "--bootstrap", addr, "--topic", "wire", "--partition", "1", "--partitions", "2",
		"--records", "2000", "--record-size", "50", "--producers", "2", "--batch-bytes", "2048", "--linger", "1ms", "--compression", "zstd")
	if rep.Records != 2000 || rep.Producers != 2 || rep.Bootstrap != addr || rep.Acks != "all" || rep.BatchSize != 2048 ||
		rep.Compression != "zstd" || rep.LingerMs != 1 || rep.Batches < 2000*50/2048 || rep.LatencyMs.Max <= 0 || rep.Dir != "" {
		t.Errorf("report %+v", rep)
	}
	crep := perfConsumeJSON(t, "--bootstrap", addr, "--topic", "wire", "--partition", "1")
	if crep.Records != 2000 || crep.From != 0 || crep.End != 2000 || crep.Bootstrap != addr || crep.Batches < 1 {
		t.Errorf("consume report %+v", crep)
	}
	crep = perfConsumeJSON(t, "--bootstrap", addr, "--topic", "wire", "--partition", "1", "--from", "1990")
	if crep.Records != 10 || crep.From != 1990 {
		t.Errorf("consume from 1990: report %+v", crep)
	}

	out, errOut, code := perfRun(t, "perf", "produce", "--bootstrap", addr, "--topic", "wire", "--records", "100", "--record-size", "10", "--acks", "1")
	if code != exitOK || !strings.Contains(out, "not idempotent, acks=1") || !strings.Contains(out, "broker       "+addr) {
		t.Errorf("acks=1: exit %d\n%s%s", code, out, errOut)
	}
}

// The flags of the other mode are refused, by name, before anything runs.
func TestPerfWireFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "1", "--record-size", "1", "--sync", "never"}, "--sync is not for a run with --bootstrap"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "1", "--record-size", "1", "--dir", "x"}, "--dir is not for a run with --bootstrap"},
		{[]string{"produce", "--records", "1", "--record-size", "1", "--acks", "1"}, "--acks needs --bootstrap"},
		{[]string{"produce", "--records", "1", "--record-size", "1", "--linger", "1ms"}, "--linger needs --bootstrap"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "1", "--record-size", "1", "--acks", "2"}, `--acks "2"`},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "1", "--record-size", "1", "--batch-bytes", "100"}, "--batch-size 100: must be from 512"},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "1", "--record-size", "1000", "--batch-bytes", "600"}, "does not fit in a batch of --batch-size 600"},
		{[]string{"produce", "--bootstrap", "nocolon", "--records", "1", "--record-size", "1"}, `--bootstrap "nocolon"`},
		{[]string{"produce", "--bootstrap", "127.0.0.1:1", "--records", "0", "--record-size", "1"}, "--records 0"},
		{[]string{"consume", "--bootstrap", "127.0.0.1:1", "--shallow"}, "--shallow is not for a run with --bootstrap"},
		{[]string{"consume", "--timeout", "1s"}, "--timeout needs --bootstrap"},
		{[]string{"consume", "--bootstrap", "127.0.0.1:1", "--timeout", "0s"}, "--timeout 0s"},
	} {
		out, errOut, code := perfRun(t, append([]string{"perf"}, tc.args...)...)
		if code == exitOK || !strings.Contains(errOut, tc.want) {
			t.Errorf("perf %v: exit %d, want an error saying %q\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}

// TestPerfWireTLS: perf produce and consume with --tls-ca-file against
// serve's SSL listener.
func TestPerfWireTLS(t *testing.T) {
	ca := testutil.NewCA(t, "server-ca")
	cert, key := ca.Issue(t, "logstore", testutil.CertOpts{})
	srv := serveInProcess(t, "--dir", t.TempDir(), "--listener", "SSL://127.0.0.1:0", "--ssl-cert-file", cert, "--ssl-key-file", key)
	addr := readyListeners(t, srv.ready)["SSL"]
	rep := perfProduceJSON(t, "--bootstrap", addr, "--tls-ca-file", ca.File, "--topic", "tls", "--records", "500", "--record-size", "100")
	if rep.Records != 500 {
		t.Errorf("report %+v", rep)
	}
	if crep := perfConsumeJSON(t, "--bootstrap", addr, "--tls-ca-file", ca.File, "--topic", "tls"); crep.Records != 500 {
		t.Errorf("consume report %+v", crep)
	}
	other := testutil.NewCA(t, "other-ca")
	if _, errOut, code := perfRun(t, "perf", "consume", "--bootstrap", addr, "--tls-ca-file", other.File, "--topic", "tls", "--timeout", "2s"); code == exitOK {
		t.Errorf("a consume trusting another CA succeeded\n%s", errOut)
	}
}
