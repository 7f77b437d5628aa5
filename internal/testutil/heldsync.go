package testutil

import (
	"io/fs"
	"strings"
	"sync/atomic"

	"github.com/logstore/logstore/vfs"
)

// HeldSyncFS is a filesystem that counts the syncs of .log files and can
// hold one: while Hold is set, the next .log sync clears it, says so on
// Entered and waits for Release to be closed (or sent to) before it
// syncs. Tests use it to keep a group commit's fsync in progress.
type HeldSyncFS struct {
	vfs.FS
	Syncs   atomic.Int64
	Hold    atomic.Bool
	Entered chan struct{}
	Release chan struct{}
}

// NewHeldSyncFS returns a HeldSyncFS over fsys, holding nothing yet.
func NewHeldSyncFS(fsys vfs.FS) *HeldSyncFS {
	return &HeldSyncFS{FS: fsys, Entered: make(chan struct{}, 1), Release: make(chan struct{})}
}

// OpenFile opens name through the underlying filesystem; a .log file's
// Sync is counted and may be held.
func (h *HeldSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &heldSyncFile{File: f, fs: h}, nil
}

type heldSyncFile struct {
	vfs.File
	fs *HeldSyncFS
}

func (f *heldSyncFile) Sync() error {
	if f.fs.Hold.CompareAndSwap(true, false) {
		f.fs.Entered <- struct{}{}
		<-f.fs.Release
	}
	f.fs.Syncs.Add(1)
	return f.File.Sync()
}
