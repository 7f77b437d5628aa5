package crashfs_test

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"

	"github.com/logstore/logstore/internal/crashfs"
)

// TestStat: Stat and Lstat describe files and directories as the os
// package does (crashfs has no symbolic links), and Readlink fails as
// os.Readlink does on a name that is not one.
func TestStat(t *testing.T) {
	f := crashfs.New(root)
	if err := f.MkdirAll(path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, create(t, f, "d/x"), []byte("hello"), 0)

	for _, stat := range []func(string) (fs.FileInfo, error){f.Stat, f.Lstat} {
		fi, err := stat(path("d"))
		if err != nil || !fi.IsDir() || fi.Name() != "d" || !fi.Mode().IsDir() {
			t.Fatalf("stat of a directory: %v, %v", fi, err)
		}
		fi, err = stat(path("d/x"))
		if err != nil || fi.IsDir() || !fi.Mode().IsRegular() || fi.Size() != 5 || fi.Name() != "x" {
			t.Fatalf("stat of a 5-byte file: %v, %v", fi, err)
		}
		if _, err := stat(path("d/missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat of a missing file: %v; want fs.ErrNotExist", err)
		}
		if fi, err := stat(root); err != nil || !fi.IsDir() {
			t.Fatalf("stat of the root: %v, %v", fi, err)
		}
	}
	if _, err := f.Readlink(path("d/x")); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Readlink of a file: %v; want EINVAL", err)
	}
	if _, err := f.Readlink(path("d/missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Readlink of a missing name: %v; want fs.ErrNotExist", err)
	}
}
