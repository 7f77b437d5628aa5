// Package fileutil holds the pieces of file durability that more than
// one package needs and that have no better home: syncing a directory,
// fdatasync, and the flock that keeps a store and its metadata files to
// one opener.
package fileutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is wrapped by Flock's error when another open file held the
// lock for the whole timeout.
var ErrLocked = errors.New("locked by another open file")

// SyncDir makes dir's entries (files created, renamed or removed in it)
// durable. Some filesystems cannot sync a directory (EINVAL); there is
// nothing more to do for durability there, so that is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: filepath.Clean(dir), Err: err}
	}
	return nil
}
