package kafkaserver

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// TestKcat: librdkafka, through kcat, produces idempotently (a topic it
// auto-creates) and consumes the partition back: every line once, in
// order, at offsets 0, 1, 2, ... Skipped when kcat is not installed.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	ts := startServer(t, logstore.Options{}, Config{AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line-%03d", i))
	}
	produce := exec.CommandContext(ctx, kcat, "-b", ts.addr, "-t", "kcat", "-P", "-X", "enable.idempotence=true")
	produce.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s\nserver log:\n%s", err, out, ts.logs.String())
	}
	consume := exec.CommandContext(ctx, kcat, "-b", ts.addr, "-t", "kcat", "-C", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
	out, err := consume.Output()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s\nserver log:\n%s", err, out, ts.logs.String())
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(lines) {
		t.Fatalf("consumed %d lines, produced %d:\n%s", len(got), len(lines), out)
	}
	for i, l := range got {
		if want := fmt.Sprintf("%d %s", i, lines[i]); l != want {
			t.Fatalf("line %d: %q, want %q", i, l, want)
		}
	}
	p, err := ts.store.Partition("kcat", 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pid := recordbatch.Batch(data).ProducerID(); pid < 0 {
		t.Fatalf("kcat's batch has producer id %d: not idempotent", pid)
	}
}
