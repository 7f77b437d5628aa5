// Package boltfile opens the bbolt files at a store's root one way:
// catalog.db, and a groups.db or transactions.db of the previous format,
// which groupcoord and txncoord read to convert to their record files
// (internal/metalog). A file bbolt finds damaged, or that makes it
// panic, is an error matching the caller's sentinel and naming the file,
// never a crash. A file it creates has its directory entry synced before
// it is used, so a crash cannot lose the file once something was
// committed to it.
package boltfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/internal/fileutil"
)

// Open opens the bbolt file at path with opts, creating it if absent
// (unless opts is read-only). A file bbolt cannot read as its own (not a
// bbolt file, a bad checksum, another version) or that makes it panic is
// an error matching damaged.
func Open(path string, opts *bolt.Options, damaged error) (db *bolt.DB, err error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist) && (opts == nil || !opts.ReadOnly)
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s: bbolt: %v", damaged, path, r)
		}
	}()
	db, err = bolt.Open(path, 0o644, opts)
	if err != nil {
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
			err = fmt.Errorf("%w: %s: %w", damaged, path, err)
		}
		return nil, err
	}
	if created {
		if err := fileutil.SyncDir(filepath.Dir(path)); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	return db, nil
}
