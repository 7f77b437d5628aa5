package logstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/snapshot"
)

// TestCheckEmptySnapshotDB: a 0-byte producer-snapshots.db (created, never
// initialised) is one SNAPSHOT problem, and its log and the other
// partitions are still checked.
func TestCheckEmptySnapshotDB(t *testing.T) {
	dir := chkStore(t)
	if err := os.Truncate(filepath.Join(dir, "alpha-0", snapshot.FileName), 0); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	if stats.Problems != 1 || got[0].Kind != logstore.ProblemSnapshot || got[0].File != "alpha-0/"+snapshot.FileName ||
		!strings.Contains(got[0].Detail, "empty (0 bytes") || stats.Partitions != 2 || stats.Batches != 65 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckSnapshotDBNotAFile: a snapshot db that is a directory cannot
// be opened: one SNAPSHOT problem, and the check goes on.
func TestCheckSnapshotDBNotAFile(t *testing.T) {
	dir := chkStore(t)
	db := filepath.Join(dir, "alpha-0", snapshot.FileName)
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	if stats.Problems != 1 || got[0].Kind != logstore.ProblemSnapshot || !strings.Contains(got[0].Detail, "cannot be opened") ||
		stats.Partitions != 2 || stats.Batches != 65 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckEntriesThatAreNotPartitions: an entry named as a partition
// that is a regular file, a dangling symbolic link or a loop of links is
// a PARTITION problem each, in partition order, and the real partitions
// are checked; a link to a partition directory is followed, as the
// store follows it.
func TestCheckEntriesThatAreNotPartitions(t *testing.T) {
	dir := chkStore(t)
	if err := os.WriteFile(filepath.Join(dir, "alpha-1"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"gamma-0", "alpha-2"}, // dangling
		{"loop-b", "alpha-3"},  // alpha-3 -> loop-b -> alpha-3
		{"alpha-3", "loop-b"},
		{"beta-0", "beta-1"}, // a link to a partition directory
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	got, stats := chkRun(t, dir)
	want := []string{
		"PARTITION alpha-1: named as a partition, but a regular file, not a directory: the store cannot open this partition",
		"PARTITION alpha-2: named as a partition, but a symbolic link to gamma-0, which does not exist: the store cannot open this partition",
		"PARTITION alpha-3: named as a partition, but a symbolic link to loop-b that loops back on itself: the store cannot open this partition",
	}
	if text := chkText(got); text != "  "+strings.Join(want, "\n  ")+"\n" || stats.Problems != 3 || stats.Partitions != 3 {
		t.Fatalf("stats %+v\n%s\nwant:\n  %s", stats, text, strings.Join(want, "\n  "))
	}
	if got[0].Kind != logstore.ProblemPartition || got[0].Pos != -1 || got[0].Snapshot != -1 {
		t.Fatalf("%+v", got[0])
	}
}
