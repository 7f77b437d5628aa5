package catalog_test

// The catalog when a topic's creation or deletion fails part way (an I/O
// error, not a crash): the catalog must keep agreeing with catalog.db, so
// a half-deleted topic is never adopted back into a new one, and a retry
// or the next Open finishes the job.

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
)

var errCatalogFault = errors.New("injected I/O error")

type faultCatalog struct {
	t    *testing.T
	root string
	fs   *crashfs.FS
	s    *logstore.Store
	c    *catalog.Catalog
}

func openFaultCatalog(t *testing.T) *faultCatalog {
	t.Helper()
	root := t.TempDir()
	f := &faultCatalog{t: t, root: root, fs: crashfs.New(root)}
	f.open()
	t.Cleanup(func() {
		if f.c != nil {
			f.c.Close()
			f.s.Close()
		}
	})
	return f
}

func (f *faultCatalog) open() {
	f.t.Helper()
	s, err := logstore.Open(f.root, crashtest.WithFS(logstore.Options{LockTimeout: -1}, f.fs))
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := catalog.Open(s)
	if err != nil {
		s.Close()
		f.t.Fatal(err)
	}
	f.s, f.c = s, c
}

func (f *faultCatalog) reopen() {
	f.t.Helper()
	if err := errors.Join(f.c.Close(), f.s.Close()); err != nil {
		f.t.Fatal(err)
	}
	f.c, f.s = nil, nil
	f.open()
}

// dirs returns the entries of the store directory that start with
// topic + "-" (partition directories, and any -delete leftovers).
func (f *faultCatalog) dirs(topic string) []string {
	f.t.Helper()
	names, err := f.fs.ReadDir(f.root)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, topic+"-") {
			out = append(out, n)
		}
	}
	return out
}

// failNth makes the n-th operation of kind on a path under a directory
// of topic fail (n from 1), and every later one when sticky.
func failNth(kind crashfs.OpKind, topic string, n int, sticky bool) func(crashfs.Op) error {
	seen := 0
	return func(op crashfs.Op) error {
		if op.Kind != kind {
			return nil
		}
		if !strings.Contains(op.Path, string(filepath.Separator)+topic+"-") {
			return nil
		}
		seen++
		if seen == n || (sticky && seen > n) {
			return errCatalogFault
		}
		return nil
	}
}

func (f *faultCatalog) mustCreate(name string, partitions int32) catalog.Topic {
	f.t.Helper()
	tp, err := f.c.CreateTopic(name, partitions, nil, false)
	if err != nil {
		f.t.Fatal(err)
	}
	return tp
}

// failDelete creates topic "t" with 3 partitions and deletes it with the
// second operation of kind failing: with OpRename one directory is
// renamed away and the others are still there; with OpRemove every
// directory is renamed, and the removal stops in the first one.
func failDelete(f *faultCatalog, kind crashfs.OpKind) catalog.Topic {
	f.t.Helper()
	old := f.mustCreate("t", 3)
	f.fs.SetFault(failNth(kind, "t", 2, false))
	if _, err := f.c.DeleteTopic("t"); !errors.Is(err, errCatalogFault) {
		f.t.Fatalf("DeleteTopic with a failing rename: %v, want the injected error", err)
	}
	f.fs.SetFault(nil)
	if len(f.dirs("t")) == 0 {
		f.t.Fatal("the failed deletion removed every directory: the fault missed")
	}
	return old
}

// checkGone checks that topic name is not listed and that no directory
// of it is left; with renamedOK, a directory renamed to a -delete name
// by an earlier failed attempt may be (logstore.Store.DeleteTopic
// removes only those it renamed itself; the store's Open removes the
// rest). Such a directory is no partition: nothing lists or adopts it.
func (f *faultCatalog) checkGone(name string, renamedOK bool) {
	f.t.Helper()
	if _, ok := f.c.Topic(name); ok {
		f.t.Errorf("Topic(%q) is there", name)
	}
	for _, tp := range f.c.Topics() {
		if tp.Name == name {
			f.t.Errorf("Topics lists %q", name)
		}
	}
	var left []string
	for _, d := range f.dirs(name) {
		if !renamedOK || !strings.HasSuffix(d, "-delete") {
			left = append(left, d)
		}
	}
	if len(left) != 0 {
		f.t.Errorf("directories of %q left: %v", name, left)
	}
}

func TestCatalogDeleteTopicFailureStaysMarked(t *testing.T) {
	for _, kind := range []crashfs.OpKind{crashfs.OpRename, crashfs.OpRemove} {
		t.Run(kind.String(), func(t *testing.T) { testDeleteTopicFailureStaysMarked(t, kind) })
	}
}

func testDeleteTopicFailureStaysMarked(t *testing.T, kind crashfs.OpKind) {
	f := openFaultCatalog(t)
	old := failDelete(f, kind)

	// Clients see it gone...
	if _, ok := f.c.Topic("t"); ok {
		t.Error("Topic lists a topic whose deletion failed")
	}
	if len(f.c.Topics()) != 0 {
		t.Errorf("Topics = %v, want none", f.c.Topics())
	}
	// ...but it cannot be created again: its directories are still there.
	for _, validateOnly := range []bool{true, false} {
		_, err := f.c.CreateTopic("t", 3, nil, validateOnly)
		if !errors.Is(err, catalog.ErrTopicExists) || !errors.Is(err, catalog.ErrTopicMarkedForDeletion) {
			t.Fatalf("CreateTopic (validateOnly %v) of a topic marked for deletion: %v, want ErrTopicMarkedForDeletion and ErrTopicExists", validateOnly, err)
		}
	}
	if _, ok := f.c.Topic("t"); ok {
		t.Fatal("the refused CreateTopic adopted the old directories")
	}
	// Its leftover directories still name the old id, not a new one.
	for _, d := range f.dirs("t") {
		if strings.HasSuffix(d, "-delete") {
			continue
		}
		id, err := catalog.ReadPartitionMetadata(f.fs, filepath.Join(f.root, d))
		if err != nil {
			t.Fatal(err)
		}
		if id != old.ID {
			t.Errorf("%s names topic id %v, want the old %v", d, id, old.ID)
		}
	}
	// Other topics are not held up.
	f.mustCreate("u", 1)

	// A retried DeleteTopic finishes the deletion, as Kafka accepts a
	// second deletion of a topic marked for deletion.
	got, err := f.c.DeleteTopic("t")
	if err != nil {
		t.Fatalf("retried DeleteTopic: %v", err)
	}
	if got.ID != old.ID {
		t.Errorf("retried DeleteTopic returned id %v, want %v", got.ID, old.ID)
	}
	f.checkGone("t", true)
	if _, err := f.c.DeleteTopic("t"); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Errorf("DeleteTopic after the deletion finished: %v, want ErrUnknownTopic", err)
	}
	f.reopen()
	f.checkGone("t", false)
	nt := f.mustCreate("t", 3)
	if nt.ID == old.ID {
		t.Error("the new topic has the old id")
	}
	if d := f.dirs("t"); len(d) != 3 {
		t.Errorf("directories of the new topic: %v", d)
	}
}

func TestCatalogDeleteTopicFailureFinishedByOpen(t *testing.T) {
	f := openFaultCatalog(t)
	failDelete(f, crashfs.OpRename)
	f.reopen()
	f.checkGone("t", false)
	if _, err := f.c.DeleteTopic("t"); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Errorf("DeleteTopic after Open finished the deletion: %v, want ErrUnknownTopic", err)
	}
	f.mustCreate("t", 2)
	if d := f.dirs("t"); len(d) != 2 {
		t.Errorf("directories of the new topic: %v", d)
	}
}

// failCreate creates topic "t" with 3 partitions with the third
// partition.metadata rename failing, and every directory rename after it
// too, so the undo (deleting the directories) fails as well.
func failCreate(f *faultCatalog) {
	f.t.Helper()
	f.fs.SetFault(func(op crashfs.Op) error {
		if op.Kind == crashfs.OpRename && strings.Contains(op.Path, string(filepath.Separator)+"t-2") {
			return errCatalogFault
		}
		if op.Kind == crashfs.OpRename && strings.HasPrefix(filepath.Base(op.Path), "t-") {
			return errCatalogFault
		}
		return nil
	})
	if _, err := f.c.CreateTopic("t", 3, nil, false); !errors.Is(err, errCatalogFault) {
		f.t.Fatalf("CreateTopic with failing renames: %v, want the injected error", err)
	}
	f.fs.SetFault(nil)
	if _, ok := f.c.Topic("t"); ok {
		f.t.Fatal("a failed CreateTopic left the topic listed")
	}
	if len(f.dirs("t")) == 0 {
		f.t.Fatal("the undo removed the directories: the fault missed")
	}
}

func TestCatalogCreateTopicFailureRetry(t *testing.T) {
	f := openFaultCatalog(t)
	failCreate(f)
	if _, err := f.c.DeleteTopic("t"); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Errorf("DeleteTopic of a topic whose creation failed: %v, want ErrUnknownTopic", err)
	}
	// A retry makes the topic afresh: every partition.metadata names the
	// id it returns, none is adopted from the failed attempt.
	tp, err := f.c.CreateTopic("t", 3, nil, false)
	if err != nil {
		t.Fatalf("retried CreateTopic: %v", err)
	}
	check := func() {
		t.Helper()
		got, ok := f.c.Topic("t")
		if !ok || got.ID != tp.ID || got.Partitions != 3 {
			t.Fatalf("Topic(t) = %+v, %v; want id %v, 3 partitions", got, ok, tp.ID)
		}
		d := f.dirs("t")
		if len(d) != 3 {
			t.Fatalf("directories: %v", d)
		}
		for _, name := range d {
			id, err := catalog.ReadPartitionMetadata(f.fs, filepath.Join(f.root, name))
			if err != nil || id != tp.ID {
				t.Errorf("%s: id %v, %v; want %v", name, id, err, tp.ID)
			}
		}
	}
	check()
	f.reopen()
	check()
}

func TestCatalogCreateTopicFailureUndoneByOpen(t *testing.T) {
	f := openFaultCatalog(t)
	failCreate(f)
	f.reopen()
	f.checkGone("t", false)
	f.mustCreate("t", 1)
}

// A name that collides with a topic marked for deletion ('.' as '_') is
// refused as it would be while the topic was there.
func TestCatalogDeleteTopicFailureCollision(t *testing.T) {
	f := openFaultCatalog(t)
	f.mustCreate("a.b", 1)
	f.fs.SetFault(failNth(crashfs.OpRename, "a.b", 1, false))
	if _, err := f.c.DeleteTopic("a.b"); !errors.Is(err, errCatalogFault) {
		t.Fatalf("DeleteTopic with a failing rename: %v, want the injected error", err)
	}
	f.fs.SetFault(nil)
	if _, err := f.c.CreateTopic("a_b", 1, nil, false); !errors.Is(err, catalog.ErrInvalidTopic) {
		t.Fatalf("CreateTopic colliding with a topic marked for deletion: %v, want ErrInvalidTopic", err)
	}
	if _, err := f.c.DeleteTopic("a.b"); err != nil {
		t.Fatalf("retried DeleteTopic: %v", err)
	}
	f.mustCreate("a_b", 1)
}
