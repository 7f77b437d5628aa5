// Package testutil holds helpers shared by logstore's tests: finding the
// shared test data that sits beside the repository, and reading segments
// into batches.
package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedDir returns the shared/ folder that sits beside the repository
// (or the folder $LOGSTORE_SHARED names), and skips the test with a clear
// message when it is absent.
func SharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LOGSTORE_SHARED"); d != "" {
		return d
	}
	root, err := moduleRoot()
	if err != nil {
		t.Skipf("cannot find the repository root: %v", err)
	}
	d := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(filepath.Join(d, "testdata")); err != nil {
		t.Skipf("shared test data not found at %s (it sits beside the repository; set LOGSTORE_SHARED to point elsewhere): %v", d, err)
	}
	return d
}

// SharedDirIfPresent returns the shared/ folder and true when it exists,
// for callers that can do without it (fuzz seeds, for one).
func SharedDirIfPresent() (string, bool) {
	if d := os.Getenv("LOGSTORE_SHARED"); d != "" {
		return d, true
	}
	root, err := moduleRoot()
	if err != nil {
		return "", false
	}
	d := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(filepath.Join(d, "testdata")); err != nil {
		return "", false
	}
	return d, true
}

// SharedFile returns the path of a file under shared/testdata, skipping
// the test when it is absent.
func SharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(SharedDir(t), "testdata", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test file absent: %v", err)
	}
	return p
}

// RepoDir returns the repository root (the folder holding go.mod).
func RepoDir(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("cannot find the repository root: %v", err)
	}
	return root
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
