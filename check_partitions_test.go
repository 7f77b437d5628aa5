package logstore_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logstore/logstore"
)

// TestCheckChecksWhatPartitionsLists: Check and Store.Partitions agree on
// what is a partition: the entries Check reports as PARTITION problems
// are the ones Partitions leaves out, and Check reads the others (a link
// to a partition directory among them), in the order Partitions lists
// them.
func TestCheckChecksWhatPartitionsLists(t *testing.T) {
	dir := chkStore(t)
	if err := os.WriteFile(filepath.Join(dir, "alpha-1"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "x-01"), 0o755); err != nil { // not a partition's name
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"gamma-0", "alpha-2"}, // dangling
		{"beta-0", "beta-1"},   // a link to a partition directory
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	var checked, bad []string
	c := logstore.Checker{
		Report: func(p logstore.Problem) {
			if p.Kind == logstore.ProblemPartition {
				bad = append(bad, p.File)
			}
		},
		Progress: func(p logstore.CheckProgress) {
			if n := p.Partition.String(); len(checked) == 0 || checked[len(checked)-1] != n {
				checked = append(checked, n)
			}
		},
	}
	if _, err := c.Check(dir); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, logstore.Options{})
	ids, err := s.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, id := range ids {
		listed = append(listed, id.String())
	}
	if want := []string{"alpha-0", "beta-0", "beta-1"}; !slices.Equal(listed, want) || !slices.Equal(checked, want) {
		t.Fatalf("Partitions lists %v, Check checked %v; want %v both", listed, checked, want)
	}
	if want := []string{"alpha-1", "alpha-2"}; !slices.Equal(bad, want) {
		t.Fatalf("Check reported %v as not partitions, want %v", bad, want)
	}
}
