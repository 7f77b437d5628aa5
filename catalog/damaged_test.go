package catalog_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
)

// TestOpenDamagedCatalog: a catalog.db whose contents this build cannot
// read is refused by Open with an error that names the file and matches
// ErrDamaged, never a panic, and the store's partitions are left alone.
func TestOpenDamagedCatalog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bucket string
		key    string
		value  []byte
	}{
		{"format version", "meta", "version", []byte{9}},
		{"format version length", "meta", "version", []byte{1, 1}},
		{"producer id reservation length", "meta", "producer-ids-reserved", []byte{0, 1, 2}},
		{"negative producer id reservation", "meta", "producer-ids-reserved", binary.BigEndian.AppendUint64(nil, 1<<63)},
		{"topic record not JSON", "topics", "t", []byte("{not json")},
		{"topic id", "topics", "t", []byte(`{"id":"short","partitions":1,"state":"ready"}`)},
		{"topic name", "topics", "bad/name", []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1,"state":"ready"}`)},
		{"partitions", "topics", "t", []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":0,"state":"ready"}`)},
		{"state", "topics", "t", []byte(`{"id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1,"state":"gone"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			open(t, dir).close()
			path := filepath.Join(dir, catalog.FileName)
			db, err := bolt.Open(path, 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(tc.bucket)).Put([]byte(tc.key), tc.value)
			})
			if err := errors.Join(err, db.Close()); err != nil {
				t.Fatal(err)
			}
			err = openCatalogErr(t, dir)
			if err == nil {
				t.Fatal("catalog.Open took a damaged catalog.db")
			}
			if !errors.Is(err, catalog.ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("catalog.Open: %v; want an error naming %s that matches ErrDamaged", err, path)
			}
		})
	}
}

// TestOpenGarbageCatalog: a catalog.db of bytes that are no bbolt file
// is an error naming the file, not a panic.
func TestOpenGarbageCatalog(t *testing.T) {
	dir := t.TempDir()
	open(t, dir).close()
	path := filepath.Join(dir, catalog.FileName)
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	err := openCatalogErr(t, dir)
	if err == nil {
		t.Fatal("catalog.Open took a catalog.db of garbage")
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("catalog.Open: %v; want an error naming %s", err, path)
	}
}

// openCatalogErr opens the store in dir and its catalog, and returns the
// catalog's error (closing what opened).
func openCatalogErr(t *testing.T, dir string) error {
	t.Helper()
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := catalog.Open(s)
	if err == nil {
		c.Close()
	}
	return err
}
