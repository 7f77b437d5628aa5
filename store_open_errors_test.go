package logstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
)

// A store directory that is a dangling symbolic link is named as such,
// not as "mkdir: file exists"; so is a dangling link among its parents.
func TestOpenDanglingSymlink(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "data")
	if err := os.Symlink(filepath.Join(root, "gone"), link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, dir := range []string{link, filepath.Join(link, "store")} {
		s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) through a dangling link succeeded", dir)
		}
		want := link + " is a symbolic link to " + filepath.Join(root, "gone") + ", which does not exist"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v\nwant it to say %q", dir, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// A refused name is named in the error: topic and partition.
func TestPartitionRefusalNamesThePartition(t *testing.T) {
	s, err := logstore.Open(t.TempDir(), logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		topic     string
		partition int32
	}{{"events", -1}, {"a/b", 3}, {"", 0}} {
		_, err := s.Partition(c.topic, c.partition)
		want := fmt.Sprintf("open partition (topic %q, partition %d) in store", c.topic, c.partition)
		if !errors.Is(err, logstore.ErrInvalidName) || !strings.Contains(err.Error(), want) {
			t.Errorf("Partition(%q, %d): %v; want ErrInvalidName and %q", c.topic, c.partition, err, want)
		}
	}
}
