package catalog_test

// The catalog under simulated power loss: a workload of topic creations,
// deletions and producer ids runs against a store on a crashfs.FS (the
// catalog's partition.metadata files and the deletions' renames and
// removals go through it; catalog.db, bbolt, is on the real OS). A crash
// point is recorded after every filesystem operation and after every
// catalog.db commit; each is crashed in every mode, and the store and
// catalog opened on the image must show every topic wholly there or
// wholly gone, as the workload's answers allow, and hand out no producer
// id again.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/crashtest"
)

// catalogExpect is what may be found of a topic after a crash.
type catalogExpect struct {
	present bool // it must be there, with id
	absent  bool // it must not be there
	id      catalog.TopicID
	// parts are the partition counts it may have when present (nil:
	// any): the old count or the new one while a growth runs.
	parts []int32
}

// catalogPoint is one crash point of the catalog workload.
type catalogPoint struct {
	what   string
	fs     *crashfs.FS
	db     []byte // catalog.db as last committed
	expect map[string]catalogExpect
	maxPID int64 // the highest producer id handed out, -1 for none
}

type catalogCrashRun struct {
	t      *testing.T
	root   string
	fs     *crashfs.FS
	what   string
	expect map[string]catalogExpect
	maxPID int64
	points []catalogPoint
	lastDB []byte
	err    error
}

func (r *catalogCrashRun) dbPath() string { return filepath.Join(r.root, catalog.FileName) }

func (r *catalogCrashRun) readDB() []byte {
	data, err := os.ReadFile(r.dbPath())
	if err != nil && r.err == nil && !errors.Is(err, os.ErrNotExist) {
		r.err = err
	}
	return data
}

// point records the moment now: fs as it is, the db as committed. A
// catalog.db commit since the last point is a point of its own first
// (the previous filesystem, the new db).
func (r *catalogCrashRun) point(fs *crashfs.FS, what string) {
	db := r.readDB()
	if !bytes.Equal(db, r.lastDB) && len(r.points) > 0 {
		prev := r.points[len(r.points)-1]
		prev.db, prev.what = db, prev.what+", then a catalog.db commit"
		prev.expect, prev.maxPID = maps.Clone(r.expect), r.maxPID
		r.points = append(r.points, prev)
	}
	r.lastDB = db
	r.points = append(r.points, catalogPoint{what: what, fs: fs, db: db, expect: maps.Clone(r.expect), maxPID: r.maxPID})
}

func (r *catalogCrashRun) hook(op crashfs.Op) {
	r.point(r.fs.Clone(), fmt.Sprintf("%s: after %s", r.what, op))
}

func TestCatalogCrashRecovery(t *testing.T) {
	r := &catalogCrashRun{t: t, root: t.TempDir(), expect: map[string]catalogExpect{}, maxPID: -1}
	r.fs = crashfs.New(r.root)
	r.fs.SetHook(r.hook)
	opts := crashtest.WithFS(logstore.Options{LockTimeout: -1}, r.fs)
	s, err := logstore.Open(r.root, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	pids := func(n int) {
		for range n {
			id, err := c.NewProducerID()
			if err != nil {
				t.Fatal(err)
			}
			if id <= r.maxPID {
				t.Fatalf("producer id %d after %d", id, r.maxPID)
			}
			r.maxPID = id
		}
	}
	create := func(name string, parts int32) {
		r.what = "create " + name
		r.expect[name] = catalogExpect{} // either, while it runs
		tp, err := c.CreateTopic(name, parts, map[string]string{"retention.ms": "-1"}, false)
		if err != nil {
			t.Fatal(err)
		}
		r.expect[name] = catalogExpect{present: true, id: tp.ID, parts: []int32{parts}}
	}
	grow := func(name string, total int32) {
		r.what = "grow " + name
		ex := r.expect[name]
		ex.parts = append(slices.Clone(ex.parts[:1]), total)
		r.expect[name] = ex
		tp, err := c.CreatePartitions(name, total, false)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Partitions != total {
			t.Fatalf("CreatePartitions(%s, %d): %d partitions", name, total, tp.Partitions)
		}
		ex.parts = []int32{total}
		r.expect[name] = ex
	}
	del := func(name string) {
		r.what = "delete " + name
		r.expect[name] = catalogExpect{}
		if _, err := c.DeleteTopic(name); err != nil {
			t.Fatal(err)
		}
		r.expect[name] = catalogExpect{absent: true}
	}
	pids(3)
	create("a", 2)
	pids(catalog.ProducerIDBlock)
	create("b.x", 1)
	del("a")
	create("c", 3)
	grow("c", 5)
	pids(5)
	del("b.x")
	create("a", 1) // the name again, a new id
	grow("a", 2)
	r.what = "close"
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r.point(r.fs.Clone(), "the end")
	r.fs.SetHook(nil)
	if r.err != nil {
		t.Fatal(r.err)
	}

	checked := 0
	for i, cp := range r.points {
		for _, mode := range crashfs.Modes {
			img := cp.fs.Crash(mode, crashtest.RNG(uint64(i), uint64(mode)))
			if err := r.check(img, cp); err != nil {
				t.Fatalf("point %d (%s), crash %s: %v", i, cp.what, mode, err)
			}
			checked++
		}
	}
	t.Logf("%d crash points, %d images checked", len(r.points), checked)
}

// check opens the store and the catalog on img with cp's catalog.db and
// checks them against cp's expectations, then closes and opens them again
// and checks that the same topics are there.
func (r *catalogCrashRun) check(img *crashfs.FS, cp catalogPoint) error {
	os.Remove(r.dbPath())
	if cp.db != nil {
		if err := os.WriteFile(r.dbPath(), cp.db, 0o644); err != nil {
			return err
		}
	}
	opts := crashtest.WithFS(logstore.Options{LockTimeout: -1}, img)
	s, err := logstore.Open(r.root, opts)
	if err != nil {
		return fmt.Errorf("open the store: %w", err)
	}
	defer s.Close()
	// Before the catalog adopts anything: every partition directory
	// belongs to a topic with an entry in catalog.db.
	entries, err := catalogEntries(r.dbPath())
	if err != nil {
		return err
	}
	ids, err := s.Partitions()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !entries[id.Topic] {
			return fmt.Errorf("partition directory %s has no catalog entry (entries %v)", id, entries)
		}
	}
	c, err := catalog.Open(s)
	if err != nil {
		return fmt.Errorf("open the catalog: %w", err)
	}
	topics, err := checkCatalogImage(img, r.root, s, c, cp)
	if err != nil {
		c.Close()
		return err
	}
	if err := errors.Join(c.Close(), s.Close()); err != nil {
		return err
	}
	// Open again: the repairs are done, nothing changes.
	s, err = logstore.Open(r.root, opts)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer s.Close()
	c, err = catalog.Open(s)
	if err != nil {
		return fmt.Errorf("reopen the catalog: %w", err)
	}
	defer c.Close()
	again, err := checkCatalogImage(img, r.root, s, c, cp)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	if !slices.EqualFunc(topics, again, func(a, b catalog.Topic) bool {
		return a.Name == b.Name && a.ID == b.ID && a.Partitions == b.Partitions
	}) {
		return fmt.Errorf("reopen: topics %v, were %v", again, topics)
	}
	// A growth after the crash works, and leaves the topic whole.
	for _, tp := range again {
		grown, err := c.CreatePartitions(tp.Name, tp.Partitions+1, false)
		if err != nil {
			return fmt.Errorf("grow %s after the crash: %w", tp.Name, err)
		}
		if grown.Partitions != tp.Partitions+1 || grown.ID != tp.ID {
			return fmt.Errorf("grow %s after the crash: %+v, was %+v", tp.Name, grown, tp)
		}
		data, err := img.ReadFile(filepath.Join(r.root, logstore.PartitionID{Topic: tp.Name, Partition: tp.Partitions}.String(), catalog.MetadataFileName))
		if err != nil || !bytes.Equal(data, catalog.EncodePartitionMetadata(tp.ID)) {
			return fmt.Errorf("grow %s after the crash: the new partition.metadata %q, %v", tp.Name, data, err)
		}
	}
	return nil
}

// checkCatalogImage checks an opened catalog: the topics cp expects,
// each whole (its directories, each with a partition.metadata naming its
// id, and no other), no directory of a topic the catalog lacks, nothing
// left of a deletion, and a producer id above every one handed out.
func checkCatalogImage(img *crashfs.FS, root string, s *logstore.Store, c *catalog.Catalog, cp catalogPoint) ([]catalog.Topic, error) {
	topics := c.Topics()
	byName := map[string]catalog.Topic{}
	for _, tp := range topics {
		byName[tp.Name] = tp
	}
	for name, ex := range cp.expect {
		tp, there := byName[name]
		switch {
		case ex.present && !there:
			return nil, fmt.Errorf("topic %s was created, and is gone", name)
		case ex.present && tp.ID != ex.id:
			return nil, fmt.Errorf("topic %s has id %s, was created with %s", name, tp.ID, ex.id)
		case ex.absent && there:
			return nil, fmt.Errorf("topic %s was deleted, and is there", name)
		case there && ex.parts != nil && !slices.Contains(ex.parts, tp.Partitions):
			return nil, fmt.Errorf("topic %s has %d partitions, want one of %v", name, tp.Partitions, ex.parts)
		}
	}
	for name := range byName {
		if _, ok := cp.expect[name]; !ok {
			return nil, fmt.Errorf("topic %s is there, but was never created", name)
		}
	}
	names, err := img.ReadDir(root)
	if err != nil {
		return nil, err
	}
	count := map[string]int32{}
	for _, name := range names {
		if strings.HasSuffix(name, "-delete") {
			return nil, fmt.Errorf("%s left of a deletion", name)
		}
		i := strings.LastIndexByte(name, '-')
		if i < 0 {
			continue
		}
		tp, ok := byName[name[:i]]
		if !ok {
			return nil, fmt.Errorf("directory %s of no topic", name)
		}
		count[tp.Name]++
		data, err := img.ReadFile(filepath.Join(root, name, catalog.MetadataFileName))
		if err != nil || !bytes.Equal(data, catalog.EncodePartitionMetadata(tp.ID)) {
			return nil, fmt.Errorf("%s/partition.metadata: %q, %v; want topic id %s", name, data, err, tp.ID)
		}
	}
	for _, tp := range topics {
		if count[tp.Name] != tp.Partitions {
			return nil, fmt.Errorf("topic %s: %d directories, %d partitions", tp.Name, count[tp.Name], tp.Partitions)
		}
	}
	id, err := c.NewProducerID()
	if err != nil {
		return nil, err
	}
	if id <= cp.maxPID {
		return nil, fmt.Errorf("producer id %d handed out again (%d were before the crash)", id, cp.maxPID)
	}
	return topics, nil
}

// catalogEntries returns the topic names catalog.db at path holds, in any
// state.
func catalogEntries(path string) (map[string]bool, error) {
	out := map[string]bool{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("topics"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error { out[string(k)] = true; return nil })
	})
	return out, err
}
