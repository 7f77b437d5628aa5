package vfs

import (
	"io"
	"io/fs"
	"os"

	"github.com/logstore/logstore/internal/fileutil"
)

// FS is every file operation the store performs (see the package doc for
// what each must guarantee). OS is the real one; tests wrap it to inject
// faults or to simulate power loss, so no code above it touches the os
// package for these operations.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags and permissions.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename renames a file; the caller syncs the directory after.
	Rename(oldname, newname string) error
	// Remove deletes a file; the caller syncs the directory after.
	Remove(name string) error
	// ReadDir lists the names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm fs.FileMode) error
	// SyncDir makes the directory's entries (creations, renames,
	// removals) durable.
	SyncDir(dir string) error
	// Stat describes name, following a symbolic link.
	Stat(name string) (fs.FileInfo, error)
	// Lstat describes name itself, not following a symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// Readlink returns the target of the symbolic link name.
	Readlink(name string) (string, error)
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes the file's data durable (fdatasync where available).
	Sync() error
	Truncate(size int64) error
	// Size returns the file's current length.
	Size() (int64, error)
	Close() error
}

// OS is the FS of the operating system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) SyncDir(dir string) error               { return fileutil.SyncDir(dir) }
func (osFS) Stat(name string) (fs.FileInfo, error)  { return os.Stat(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (osFS) Readlink(name string) (string, error)   { return os.Readlink(name) }

type osFile struct{ f *os.File }

func (o osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osFile) Sync() error                              { return fileutil.Fdatasync(o.f) }
func (o osFile) Truncate(size int64) error                { return o.f.Truncate(size) }
func (o osFile) Close() error                             { return o.f.Close() }

func (o osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
