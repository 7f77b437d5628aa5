package fileutil

import (
	"os"
	"path/filepath"
)

// WriteFileDurably replaces path with data, so that a crash at any
// point leaves the old file or the new one, never a part: data goes to
// path.tmp, which is fsynced, renamed over path, and the directory is
// fsynced. A failed write removes path.tmp.
func WriteFileDurably(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}
