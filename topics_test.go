package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
)

func TestDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	var held *logstore.Partition
	for _, id := range []logstore.PartitionID{{Topic: "gone", Partition: 0}, {Topic: "gone", Partition: 1}, {Topic: "kept", Partition: 0}, {Topic: "gone.x", Partition: 0}} {
		p := openPartition(t, s, id.Topic, id.Partition)
		if _, err := p.Append(batchOf("a", "b")); err != nil {
			t.Fatal(err)
		}
		if id.Topic == "gone" {
			held = p
		}
	}
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := held.Append(batchOf("c")); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("append to a partition of a deleted topic: %v, want ErrClosed", err)
	}
	want := []logstore.PartitionID{{Topic: "gone.x", Partition: 0}, {Topic: "kept", Partition: 0}}
	ids, err := s.Partitions()
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("Partitions = %v, %v; want %v", ids, err, want)
	}
	if got := listDir(t, dir); slices.ContainsFunc(got, func(n string) bool { return n == "gone-0" || n == "gone-1" }) {
		t.Fatalf("store directory still holds %v", got)
	}
	// Deleting a topic without directories is no error; a bad name is.
	if err := s.DeleteTopic("never"); err != nil {
		t.Errorf("DeleteTopic of an absent topic: %v", err)
	}
	if err := s.DeleteTopic("../x"); !errors.Is(err, logstore.ErrInvalidName) {
		t.Errorf("DeleteTopic(../x): %v, want ErrInvalidName", err)
	}
	// The topic can be made again, empty.
	p := openPartition(t, s, "gone", 0)
	if p.EndOffset() != 0 {
		t.Errorf("a recreated partition ends at %d, want 0", p.EndOffset())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, logstore.Options{})
	ids, err = s.Partitions()
	if err != nil || len(ids) != 3 {
		t.Fatalf("after reopen Partitions = %v, %v", ids, err)
	}
}

// A deletion a crash interrupted after the renames leaves -delete
// directories; Open removes them, and Partitions never lists them.
func TestOpenRemovesDeleteLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	if _, err := openPartition(t, s, "t", 0).Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	left := "t-0.0123456789abcdef0123456789abcdef-delete"
	if err := os.Rename(filepath.Join(dir, "t-0"), filepath.Join(dir, left)); err != nil {
		t.Fatal(err)
	}
	// Names that only look like it stay.
	for _, name := range []string{"t-0.0123-delete", "x-delete", "t-1"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s = openStore(t, dir, logstore.Options{})
	got := listDir(t, dir)
	if slices.Contains(got, left) {
		t.Fatalf("Open left %s: %v", left, got)
	}
	for _, name := range []string{"t-0.0123-delete", "x-delete", "t-1"} {
		if !slices.Contains(got, name) {
			t.Errorf("Open removed %s: %v", name, got)
		}
	}
	ids, _ := s.Partitions()
	if !slices.Equal(ids, []logstore.PartitionID{{Topic: "t", Partition: 1}}) {
		t.Errorf("Partitions = %v", ids)
	}
}

// TestDeleteTopicRetryRemovesLeftovers: a DeleteTopic that failed after
// its renames leaves -delete directories; deleting the topic again
// removes them without waiting for the next Open, and leaves those of
// other topics alone.
func TestDeleteTopicRetryRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	if _, err := openPartition(t, s, "t", 1).Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	left := []string{"t-0.0123456789abcdef0123456789abcdef-delete", "t-7.fedcba9876543210fedcba9876543210-delete"}
	other := "tt-0.0123456789abcdef0123456789abcdef-delete"
	for _, name := range append(left, other) {
		if err := os.MkdirAll(filepath.Join(dir, name, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	got := listDir(t, dir)
	for _, name := range append(left, "t-1") {
		if slices.Contains(got, name) {
			t.Errorf("DeleteTopic left %s: %v", name, got)
		}
	}
	if !slices.Contains(got, other) {
		t.Errorf("DeleteTopic(t) removed topic tt's %s: %v", other, got)
	}
	// With no partition directory left, a retry still removes them.
	if err := os.Mkdir(filepath.Join(dir, left[0]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); slices.Contains(got, left[0]) {
		t.Errorf("a retried DeleteTopic left %s: %v", left[0], got)
	}
}

// A topic of 249 characters still gets a -delete name of at most 255.
func TestDeleteTopicLongName(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	topic := string(slices.Repeat([]byte{'a'}, 249))
	openPartition(t, s, topic, 99999)
	if err := s.DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); slices.ContainsFunc(got, func(n string) bool { return len(n) > 200 }) {
		t.Fatalf("left %v", got)
	}
}

// Appenders racing a deletion get their batch in, or ErrClosed, or
// ErrTopicDeleting; nothing else, and no data race (go test -race).
func TestDeleteTopicWhileAppending(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	openPartition(t, s, "busy", 0)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				p, err := s.Partition("busy", 0)
				if err == nil {
					_, err = p.Append(batchOf("v"))
				}
				if err != nil && !errors.Is(err, logstore.ErrClosed) && !errors.Is(err, logstore.ErrTopicDeleting) {
					errs <- err
					return
				}
			}
		}()
	}
	for range 5 {
		if err := s.DeleteTopic("busy"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

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

// TestTopicOptionsApplyToOpenPartitions: SetTopicOptions reaches a
// partition already open: a smaller segment.bytes rolls at the next
// append, a smaller max.message.bytes refuses the next batch past it,
// and a retention set afterwards deletes the flushed segments it lets go
// before SetTopicOptions returns.
func TestTopicOptionsApplyToOpenPartitions(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "t", 0)
	for i := range 5 {
		if _, err := p.Append(batchOf(strings.Repeat("v", 50), string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if n := logFiles(t, filepath.Join(dir, "t-0")); n != 1 {
		t.Fatalf("t-0 has %d segments before, want 1", n)
	}
	small := int64(200)
	if err := s.SetTopicOptions("t", logstore.TopicOptions{SegmentBytes: &small}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := p.Append(batchOf(strings.Repeat("v", 50), string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	if n := logFiles(t, filepath.Join(dir, "t-0")); n < 5 {
		t.Fatalf("t-0 has %d segments after segment.bytes 200, want about one per batch", n)
	}
	if p.StartOffset() != 0 {
		t.Fatalf("start %d with no retention", p.StartOffset())
	}

	max := 100
	if err := s.SetTopicOptions("t", logstore.TopicOptions{SegmentBytes: &small, MaxMessageBytes: &max}); err != nil {
		t.Fatal(err)
	}
	end := p.EndOffset()
	_, err := p.Append(batchOf(strings.Repeat("x", 200)))
	var r *logstore.RefusedError
	if !errors.As(err, &r) || r.Kind != logstore.RefusedTooLarge || r.Expected != 100 {
		t.Fatalf("a batch over the new max.message.bytes: %v, want RefusedTooLarge against 100", err)
	}
	if p.EndOffset() != end {
		t.Fatalf("end %d after a refused batch, want %d", p.EndOffset(), end)
	}

	keep := int64(300)
	if err := s.SetTopicOptions("t", logstore.TopicOptions{SegmentBytes: &small, RetentionBytes: &keep}); err != nil {
		t.Fatal(err)
	}
	start := p.StartOffset()
	if start == 0 {
		t.Fatalf("start 0 right after setting retention.bytes 300 on flushed segments, want them deleted by SetTopicOptions' pass")
	}
	if segs := logFiles(t, filepath.Join(dir, "t-0")); segs > 3 {
		t.Fatalf("%d segments kept with retention.bytes 300 and 200-byte segments", segs)
	}
	if _, err := p.Append(batchOf(strings.Repeat("v", 100))); err != nil {
		t.Fatal(err)
	}
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() < start {
		t.Fatalf("start went back from %d to %d", start, p.StartOffset())
	}
	// Removing the overrides goes back to the store's options on the
	// open partition too: the store's limit, 1 MiB, takes the batch.
	if err := s.SetTopicOptions("t", logstore.TopicOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batchOf(strings.Repeat("x", 200))); err != nil {
		t.Fatal(err)
	}
}

// TestTopicOptionsWhileAppending: SetTopicOptions beside appends (for the
// race detector): each append is accepted or refused as too large, never
// anything else, and the log holds exactly the accepted ones.
func TestTopicOptionsWhileAppending(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "t", 0)
	done := make(chan struct{})
	setErr := make(chan error, 1)
	go func() {
		small, big := int64(300), int64(1<<20)
		tiny, keep := 100, int64(2000)
		opts := []logstore.TopicOptions{{SegmentBytes: &small}, {MaxMessageBytes: &tiny}, {SegmentBytes: &big, RetentionBytes: &keep}, {}}
		for i := 0; ; i++ {
			select {
			case <-done:
				setErr <- nil
				return
			default:
			}
			if err := s.SetTopicOptions("t", opts[i%len(opts)]); err != nil {
				setErr <- err
				return
			}
		}
	}()
	accepted := 0
	for i := range 300 {
		_, err := p.Append(batchOf(strings.Repeat("v", 150), string(rune('a'+i%26))))
		var r *logstore.RefusedError
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &r) && r.Kind == logstore.RefusedTooLarge:
		default:
			t.Fatalf("append %d: %v", i, err)
		}
	}
	close(done)
	if err := <-setErr; err != nil {
		t.Fatal(err)
	}
	if got := p.EndOffset(); got != 2*int64(accepted) {
		t.Fatalf("end offset %d, %d batches of 2 records accepted", got, accepted)
	}
}
