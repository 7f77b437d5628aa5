package testseam_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testseam"
	"github.com/logstore/logstore/vfs"
)

// countFS counts the files opened through it.
type countFS struct {
	vfs.FS
	opened int
}

func (f *countFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f.opened++
	return f.FS.OpenFile(name, flag, perm)
}

// TestWithFS: the filesystem set through the seam is the one the store
// uses.
func TestWithFS(t *testing.T) {
	fs := &countFS{FS: vfs.OS}
	s, err := logstore.Open(filepath.Join(t.TempDir(), "store"), testseam.WithFS(logstore.Options{}, fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Partition("t", 0); err != nil {
		t.Fatal(err)
	}
	if fs.opened == 0 {
		t.Fatal("the store opened no file through the filesystem it was given")
	}
}

// TestWrongType: the setters are logstore.Options's; any other type
// panics.
func TestWrongType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("WithClock of a type logstore did not register did not panic")
		}
	}()
	testseam.WithClock(struct{}{}, time.Now)
}
