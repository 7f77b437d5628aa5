package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
)

func openBoth(t *testing.T, dir string) (*logstore.Store, *Catalog) {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(s)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	return s, c
}

func closeBoth(t *testing.T, s *logstore.Store, c *Catalog) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// topicEntries lists the entries of dir that belong to topic: partition
// directories and their -delete renames.
func topicEntries(t *testing.T, dir, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A creation cut short after its "creating" entry (some directories made,
// one partition.metadata written) is undone by Open.
func TestOpenUndoesInterruptedCreate(t *testing.T) {
	dir := t.TempDir()
	s, c := openBoth(t, dir)
	id, err := c.newTopicID()
	if err != nil {
		t.Fatal(err)
	}
	tp := Topic{Name: "half", ID: id, Partitions: 3}
	if err := c.putTopic(tp, stateCreating, -1); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := os.Mkdir(c.partitionDir("half", p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := WritePartitionMetadata(s.FS(), c.partitionDir("half", 0), id); err != nil {
		t.Fatal(err)
	}
	closeBoth(t, s, c)

	s, c = openBoth(t, dir)
	defer closeBoth(t, s, c)
	if _, ok := c.Topic("half"); ok {
		t.Fatal("a half-created topic is there after Open")
	}
	if left := topicEntries(t, dir, "half"); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	// And it can be created for real.
	if _, err := c.CreateTopic("half", 1, nil, false); err != nil {
		t.Fatal(err)
	}
}

// A deletion cut short after its "deleting" entry and one rename is
// finished by Open.
func TestOpenFinishesInterruptedDelete(t *testing.T) {
	dir := t.TempDir()
	s, c := openBoth(t, dir)
	tp, err := c.CreateTopic("gone", 2, map[string]string{"retention.ms": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.putTopic(tp, stateDeleting, -1); err != nil {
		t.Fatal(err)
	}
	closeBoth(t, s, c)
	if err := os.Rename(filepath.Join(dir, "gone-0"), filepath.Join(dir, "gone-0.00112233445566778899aabbccddeeff-delete")); err != nil {
		t.Fatal(err)
	}

	s, c = openBoth(t, dir)
	defer closeBoth(t, s, c)
	if _, ok := c.Topic("gone"); ok {
		t.Fatal("a half-deleted topic is there after Open")
	}
	if left := topicEntries(t, dir, "gone"); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

// The allocator refuses cleanly at the end of the id space.
func TestProducerIDsExhausted(t *testing.T) {
	s, c := openBoth(t, t.TempDir())
	defer closeBoth(t, s, c)
	c.pidMu.Lock()
	c.nextPID, c.reserved = maxInt64-2, maxInt64-2
	c.pidMu.Unlock()
	for want := maxInt64 - 2; want < maxInt64; want++ {
		id, err := c.NewProducerID()
		if err != nil || id != want {
			t.Fatalf("NewProducerID = %d, %v; want %d", id, err, want)
		}
	}
	if id, err := c.NewProducerID(); err == nil {
		t.Fatalf("NewProducerID past the end = %d", id)
	}
}

const maxInt64 = int64(^uint64(0) >> 1)
