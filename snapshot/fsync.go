package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// syncDir makes dir's entries (a created or renamed file) durable. bbolt
// syncs its file on every commit but never the directory that holds it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	// Some filesystems cannot sync a directory; there is nothing more we
	// could do for durability there.
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
