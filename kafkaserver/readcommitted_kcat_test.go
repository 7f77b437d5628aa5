package kafkaserver

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkaclients"
)

// TestKcatReadCommitted: librdkafka (kcat), a client that is not Go,
// consumes a partition of committed and aborted transactions written
// through the store, over several segments and fetches of its own size:
// at isolation.level=read_committed every committed and plain record
// once, in order, and no aborted one; at read_uncommitted every record.
// It skips when kcat is not installed (.ci/run installs it).
func TestKcatReadCommitted(t *testing.T) {
	path, err := kafkaclients.Kcat()
	if err != nil {
		t.Skipf("%v (.ci/run installs it): skipping the read_committed kcat test", err)
	}
	ts := startServer(t, logstore.Options{SegmentBytes: 4096}, Config{})
	ts.createTopic("t", 1)
	l := ts.txnLog("t", 0)
	var committed, all []string
	for i := range 60 {
		pid := int64(1 + i%3)
		v := fmt.Sprintf("txn-%d", i)
		l.data(pid, v+"-a", v+"-b")
		all = append(all, v+"-a", v+"-b")
		p := fmt.Sprintf("plain-%d", i)
		l.plain(p)
		all = append(all, p)
		// The producers' transactions end in turn, each a batch and a
		// plain batch after it began, two in three committed.
		if i >= 2 {
			end := int64(1 + (i-2)%3)
			commit := (i-2)%3 != 0
			l.end(end, commit)
		}
	}
	l.end(int64(1+58%3), true)
	l.end(int64(1+59%3), true)
	for i := range 60 {
		committed = append(committed, fmt.Sprintf("plain-%d", i))
		if (i%3 != 0) || i >= 58 {
			committed = append(committed, fmt.Sprintf("txn-%d-a", i), fmt.Sprintf("txn-%d-b", i))
		}
	}
	if l.part.LastStableOffset() != l.part.DurableEnd() {
		t.Fatalf("a transaction is still open: LSO %d, HWM %d", l.part.LastStableOffset(), l.part.DurableEnd())
	}
	for _, tc := range []struct {
		level string
		want  []string
	}{{"read_committed", committed}, {"read_uncommitted", all}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, path, "-C", "-b", ts.addr, "-t", "t", "-p", "0", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+tc.level, "-X", "message.max.bytes=1000", "-X", "fetch.max.bytes=1000", "-X", "fetch.message.max.bytes=300", "-f", `%s\n`)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		cancel()
		if err != nil || strings.Contains(errb.String(), "ERROR") || strings.Contains(errb.String(), "failed") {
			t.Fatalf("kcat at %s: %v\n%s", tc.level, err, errb.String())
		}
		got := strings.Fields(out.String())
		// Plain records interleave with the transactions' in the log;
		// each group keeps its own order.
		want := slices.Clone(tc.want)
		for _, w := range []*[]string{&got, &want} {
			slices.SortStableFunc(*w, func(a, b string) int {
				return strings.Compare(strings.SplitN(a, "-", 2)[0], strings.SplitN(b, "-", 2)[0])
			})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kcat at %s read %d records, want %d:\n got %v\nwant %v", tc.level, len(got), len(want), got, want)
		}
	}
}
