package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
)

// TestServeSIGTERM runs `logstore serve` as a child process: it prints
// its ready line, takes an idempotent kgo producer's records, and on
// SIGTERM stops cleanly with exit status 0; the next open finds a clean
// store holding every acknowledged record.
func TestServeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the CLI with: %v", err)
	}
	cli := filepath.Join(t.TempDir(), "logstore")
	if msg, err := exec.Command(goBin, "build", "-o", cli, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	dir := t.TempDir()
	cmd := exec.Command(cli, "serve", "--dir", dir, "--listen", "127.0.0.1:0", "--sync", "never", "--default-partitions", "2")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ready, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v; stderr:\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`^logstore serve: listening on (\S+), store (.+), sync never\n$`).FindStringSubmatch(ready)
	if m == nil || m[2] != dir {
		t.Fatalf("ready line %q", ready)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.DefaultProduceTopic("served"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.StopProducerOnDataLossDetected(), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v\nstderr:\n%s", i, err, stderr.String())
		}
	}
	cl.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopping") {
		t.Errorf("no stop line on stderr:\n%s", stderr.String())
	}

	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	total := int64(0)
	for p := int32(0); p < 2; p++ {
		part, err := s.Partition("served", p)
		if err != nil {
			t.Fatal(err)
		}
		// A partition nobody wrote was never opened: no clean mark.
		if rec := part.Recovery(); !rec.Clean && part.EndOffset() > 0 {
			t.Errorf("partition %d was not closed cleanly: %+v", p, rec)
		}
		total += part.EndOffset()
	}
	if total != n {
		t.Fatalf("%d records in the store, %d acknowledged", total, n)
	}
}
