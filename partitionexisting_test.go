package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore"
)

// TestExistingPartition: ExistingPartition opens a partition whose
// directory exists (the same *Partition as Partition), and refuses one
// whose directory is missing with ErrNoPartition without making it,
// also right after DeleteTopic removed it.
func TestExistingPartition(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	if _, err := s.ExistingPartition("t", 0); !errors.Is(err, logstore.ErrNoPartition) {
		t.Fatalf("missing partition: %v, want ErrNoPartition", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ExistingPartition made the directory: %v", err)
	}
	p := openPartition(t, s, "t", 0)
	if _, err := p.Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ExistingPartition("t", 0); err != nil || got != p {
		t.Fatalf("existing partition: %p, %v; want %p", got, err, p)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExistingPartition("t", 0); !errors.Is(err, logstore.ErrNoPartition) {
		t.Fatalf("deleted partition: %v, want ErrNoPartition", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ExistingPartition made the deleted directory again: %v", err)
	}
	// A directory made by someone else (the catalog) opens, closed
	// partitions reopen.
	if err := os.Mkdir(filepath.Join(dir, "u-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExistingPartition("u", 3); err != nil {
		t.Fatalf("made directory: %v", err)
	}
	if _, err := s.ExistingPartition("bad/name", 0); !errors.Is(err, logstore.ErrInvalidName) {
		t.Fatalf("bad name: %v, want ErrInvalidName", err)
	}
}
