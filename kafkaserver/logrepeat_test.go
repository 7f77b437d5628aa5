package kafkaserver

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
)

// TestRepeatHandler: one cause repeated within the interval is written
// once, and the next line after the interval carries the count of those
// held back; another cause, or another message, is written at once;
// info lines always pass; flush writes what is still held.
func TestRepeatHandler(t *testing.T) {
	var buf bytes.Buffer
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	h := newRepeatHandler(slog.NewTextHandler(&buf, nil), 10*time.Second, clock.Now)
	log := slog.New(h).With("server", "s1")
	emfile := func(p int) error {
		return errors.New("open data/t-" + string(rune('0'+p%10)) + "/00000000000000000000.log: too many open files")
	}
	for i := range 1000 {
		log.Error("kafka produce failed", "partition", i, "err", emfile(i).Error())
	}
	log.Error("kafka produce failed", "err", "write: no space left on device")
	log.Error("kafka fetch failed", "err", emfile(1).Error())
	for range 3 {
		log.Info("kafka topic created")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "partition=0 ") || strings.Contains(lines[0], "repeated") || !strings.Contains(lines[0], "server=s1") {
		t.Fatalf("first line: %s", lines[0])
	}
	buf.Reset()
	clock.Advance(11 * time.Second)
	log.Error("kafka produce failed", "partition", 1001, "err", emfile(1001).Error())
	if got := buf.String(); !strings.Contains(got, "partition=1001") || !strings.Contains(got, "repeated=999") {
		t.Fatalf("after the interval: %s", got)
	}
	buf.Reset()
	log.Error("kafka produce failed", "partition", 1002, "err", emfile(1002).Error())
	if buf.Len() != 0 {
		t.Fatalf("held again within the interval: %s", buf.String())
	}
	h.flush()
	if got := buf.String(); !strings.Contains(got, "partition=1002") || !strings.Contains(got, "repeated=1") || !strings.Contains(got, "server=s1") {
		t.Fatalf("flush: %s", got)
	}
	buf.Reset()
	h.flush()
	if buf.Len() != 0 {
		t.Fatalf("a second flush wrote: %s", buf.String())
	}
}
