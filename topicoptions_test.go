package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
)

// logFiles counts the .log files of a partition directory.
func logFiles(t testing.TB, pdir string) int {
	t.Helper()
	names, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

func TestTopicOptionsApplyToLaterOpens(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	small := int64(200)
	if err := s.SetTopicOptions("small", logstore.TopicOptions{SegmentBytes: &small}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"small", "big"} {
		p := openPartition(t, s, topic, 0)
		for i := range 10 {
			if _, err := p.Append(batchOf(strings.Repeat("v", 50), string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := logFiles(t, filepath.Join(dir, "small-0")); n < 5 {
		t.Errorf("small-0 has %d segments, want one per batch or so (segment.bytes 200)", n)
	}
	if n := logFiles(t, filepath.Join(dir, "big-0")); n != 1 {
		t.Errorf("big-0 has %d segments, want 1", n)
	}
}

func TestTopicOptionsMaxMessageBytes(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	max := 100
	if err := s.SetTopicOptions("t", logstore.TopicOptions{MaxMessageBytes: &max}); err != nil {
		t.Fatal(err)
	}
	p := openPartition(t, s, "t", 0)
	_, err := p.Append(batchOf(strings.Repeat("x", 200)))
	var r *logstore.RefusedError
	if !errors.As(err, &r) || r.Kind != logstore.RefusedTooLarge {
		t.Fatalf("a batch over the topic's max.message.bytes: %v, want RefusedTooLarge", err)
	}
	// Another topic keeps the store's limit.
	if _, err := openPartition(t, s, "u", 0).Append(batchOf(strings.Repeat("x", 200))); err != nil {
		t.Fatal(err)
	}
}

// An unset override is nil; a negative retention (Kafka's -1, keep
// forever) is a value that overrides the store's.
func TestTopicOptionsRetentionForeverOverridesStore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{SegmentBytes: 200, RetentionBytes: 300})
	forever := int64(-1)
	if err := s.SetTopicOptions("keep", logstore.TopicOptions{RetentionBytes: &forever}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"keep", "trim"} {
		p := openPartition(t, s, topic, 0)
		for i := range 10 {
			if _, err := p.Append(batchOf(strings.Repeat("v", 50), string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flushed(); err != nil {
			t.Fatal(err)
		}
	}
	if got := openPartition(t, s, "keep", 0).StartOffset(); got != 0 {
		t.Errorf("keep-0 starts at %d, want 0 (retention -1)", got)
	}
	if got := openPartition(t, s, "trim", 0).StartOffset(); got == 0 {
		t.Errorf("trim-0 starts at 0, want the store's retention.bytes to have deleted segments")
	}
}

func TestTopicOptionsRefused(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	zero := time.Duration(0)
	tiny := int64(10)
	small := 60
	for _, o := range []logstore.TopicOptions{{SegmentTime: &zero}, {SegmentBytes: &tiny}, {MaxMessageBytes: &small}} {
		if err := s.SetTopicOptions("t", o); err == nil {
			t.Errorf("SetTopicOptions(%+v) = nil, want an error", o)
		}
	}
	if err := s.SetTopicOptions("bad/name", logstore.TopicOptions{}); !errors.Is(err, logstore.ErrInvalidName) {
		t.Errorf("SetTopicOptions of a bad name: %v, want ErrInvalidName", err)
	}
}
