package crashfs

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// Stat describes name. crashfs has no symbolic links, so Stat and Lstat
// are the same; directories above the root are not modelled.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.stat("stat", name) }

// Lstat describes name; see Stat.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.stat("lstat", name) }

func (f *FS) stat(op, name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	fi := fileInfo{name: filepath.Base(name), dir: n.dir}
	if !n.dir {
		fi.size = int64(len(n.data))
	}
	return fi, nil
}

// Readlink fails as os.Readlink does on a name that is not a symbolic
// link: crashfs has none.
func (f *FS) Readlink(name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.lookup("readlink", name); err != nil {
		return "", err
	}
	return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EINVAL}
}

// fileInfo is the fs.FileInfo of a node.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }

func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
