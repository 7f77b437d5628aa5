package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/vfs"
)

// TestReadFile: a file at the limit is read whole, one past it is
// refused with ErrTooLarge before anything is read, a missing one is
// fs.ErrNotExist.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := vfs.ReadFile(vfs.OS, name, 10); err != nil || string(data) != "0123456789" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	if _, err := vfs.ReadFile(vfs.OS, name, 9); !errors.Is(err, vfs.ErrTooLarge) {
		t.Fatalf("past the limit: %v, want ErrTooLarge", err)
	}
	if _, err := vfs.ReadFile(vfs.OS, filepath.Join(dir, "none"), 9); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v, want fs.ErrNotExist", err)
	}
}
