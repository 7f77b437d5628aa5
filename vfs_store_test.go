package logstore_test

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
)

// TestStoreDirThroughFS creates a store's directory, and its missing
// parents, through the store's filesystem: after a power loss that keeps
// only what was synced, the directory is still there, and Check, reading
// through the same filesystem, finds the partition and its batch.
func TestStoreDirThroughFS(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	// The lock file and bbolt's snapshot db are on the real OS: give them
	// their directories there. crashfs has none of them yet.
	if err := os.MkdirAll(filepath.Join(dir, "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsys := crashfs.New(root)
	s := openStore(t, dir, logstore.Options{}.WithFS(fsys))
	p := openPartition(t, s, "t", 0)
	if _, err := p.Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	img := fsys.Crash(crashfs.DropUnsynced, rand.New(rand.NewPCG(1, 2)))
	for _, d := range []string{filepath.Join(root, "a"), dir} {
		if fi, err := img.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("after the crash, Stat(%s) = %v, %v; want a directory", d, fi, err)
		}
	}
	var problems []logstore.Problem
	c := logstore.Checker{FS: img, Report: func(p logstore.Problem) { problems = append(problems, p) }}
	stats, err := c.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 1 || stats.Batches != 1 || stats.Problems != 0 {
		t.Fatalf("Check through the crashed image: %+v, %v; want 1 partition, 1 batch, no problems", stats, problems)
	}
}

// TestCheckMissingDirThroughFS: Check stats the store directory through
// its filesystem, so a directory only the real OS has is missing there.
func TestCheckMissingDirThroughFS(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := logstore.Checker{FS: crashfs.New(root)}
	if _, err := c.Check(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check(%s) through an empty crashfs: %v; want it missing", dir, err)
	}
}
