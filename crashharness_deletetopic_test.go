package logstore_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
)

// Store.DeleteTopic under simulated power loss after every filesystem
// operation: each partition directory is whole (every file, every byte)
// or gone from Partitions, and once the store opens on the image nothing
// is left of the deleted ones; the other topic is untouched.
func TestDeleteTopicCrash(t *testing.T) {
	root := t.TempDir()
	fsys := crashfs.New(root)
	files := map[string][]byte{}
	for _, pdir := range []string{"gone-0", "gone-1", "kept-0"} {
		if err := fsys.MkdirAll(filepath.Join(root, pdir), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"00000000000000000000.log", "00000000000000000000.index", "partition.metadata"} {
			path := filepath.Join(root, pdir, name)
			data := bytes.Repeat([]byte{byte(i + 1)}, 100*(i+1))
			if err := fsys.WriteFile(path, data); err != nil {
				t.Fatal(err)
			}
			files[path] = data
		}
	}
	if err := fsys.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	s, err := logstore.Open(root, logstore.Options{LockTimeout: -1}.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	type point struct {
		what string
		fs   *crashfs.FS
	}
	var points []point
	fsys.SetHook(func(op crashfs.Op) { points = append(points, point{op.String(), fsys.Clone()}) })
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(points) < 6 {
		t.Fatalf("only %d operations", len(points))
	}
	points = append([]point{{"before", points[0].fs}}, points...)
	for i, cp := range points {
		for _, mode := range crashfs.Modes {
			img := cp.fs.Crash(mode, crashtest.RNG(uint64(i), uint64(mode)))
			if err := checkDeleteImage(root, img, files); err != nil {
				t.Fatalf("point %d (after %s), crash %s: %v", i, cp.what, mode, err)
			}
		}
	}
}

func checkDeleteImage(root string, img *crashfs.FS, files map[string][]byte) error {
	names, err := img.ReadDir(root)
	if err != nil {
		return err
	}
	// Before Open: what a listing of partitions shows is whole.
	for _, name := range names {
		if !strings.HasPrefix(name, "gone-") && !strings.HasPrefix(name, "kept-") || strings.HasSuffix(name, "-delete") {
			continue
		}
		for path, want := range files {
			if filepath.Base(filepath.Dir(path)) != name {
				continue
			}
			got, err := img.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				return fmt.Errorf("%s is listed as a partition, but %s is %d bytes, %v (want %d)", name, filepath.Base(path), len(got), err, len(want))
			}
		}
	}
	s, err := logstore.Open(root, logstore.Options{LockTimeout: -1}.WithFS(img))
	if err != nil {
		return err
	}
	defer s.Close()
	ids, err := s.Partitions()
	if err != nil {
		return err
	}
	if !slices.Contains(ids, logstore.PartitionID{Topic: "kept", Partition: 0}) {
		return fmt.Errorf("kept-0 is gone: %v", ids)
	}
	after, err := img.ReadDir(root)
	if err != nil {
		return err
	}
	for _, name := range after {
		if strings.HasSuffix(name, "-delete") {
			return fmt.Errorf("Open left %s", name)
		}
	}
	return nil
}
