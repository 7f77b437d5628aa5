// Package crashfs is an in-memory vfs.FS that knows what is durable,
// so that tests can cut the power at any point of a workload and look at
// what a real disk could hold afterwards.
//
// Per file it keeps the current bytes and the bytes as of the last Sync;
// per directory the current entries, the entries as of the last SyncDir,
// and the changes (creations, renames, removals) made since, in order.
// Crash returns a new FS holding one state a power loss could leave,
// chosen by a Mode and a seeded random source:
//
//	DropUnsynced  only what was synced: file bytes as of their last Sync,
//	              directory entries as of their last SyncDir
//	TornWrite     synced bytes plus a prefix, cut at any byte, of each
//	              file's unsynced bytes; each directory keeps a random
//	              prefix of its unsynced changes
//	Reorder       synced bytes plus a random subset of the unsynced
//	              BlockSize blocks of each file; directories as TornWrite
//	ZeroFill      every file keeps its new length but its unsynced blocks
//	              read as they were on disk (zeros past the synced end);
//	              every directory change survives (a journal that commits
//	              metadata before data, as ext4 data=writeback does)
//	KeepAll       everything survives: the process died, the machine did
//	              not
//
// A directory change survives only as part of a prefix of that directory's
// changes since its last SyncDir, so a rename is atomic and changes are
// never reordered within a directory. Renames across directories are
// refused.
//
// The FS has a root: a directory that exists and is durable from the
// start (the directories above it exist too, and are not modelled). Paths
// are absolute or relative to the process's directory like real ones and
// must lie under the root, so a test can give the root the path of a real
// directory and use both side by side.
//
// Every operation that changes something is numbered (Op.Seq from 1). A
// fault function (SetFault) can fail any of them before it happens, and
// a hook (SetHook) is called after each one that succeeded: a test takes
// Clone there and crashes the clone later, for every operation of a
// workload. The FS is safe for concurrent use; hooks then run in no
// particular order.
package crashfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/logstore/logstore/vfs"
)

// BlockSize is the unit in which Reorder and ZeroFill lose unsynced data.
const BlockSize = 4096

// Mode is a kind of crash. See the package doc.
type Mode uint8

// The crash modes, from the harshest to the mildest.
const (
	DropUnsynced Mode = iota
	TornWrite
	Reorder
	ZeroFill
	KeepAll
)

// Modes lists every Mode.
var Modes = []Mode{DropUnsynced, TornWrite, Reorder, ZeroFill, KeepAll}

var modeNames = [...]string{"drop-unsynced", "torn-write", "reorder", "zero-fill", "keep-all"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode is the inverse of Mode.String.
func ParseMode(s string) (Mode, bool) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), true
		}
	}
	return 0, false
}

// OpKind is what an operation does.
type OpKind uint8

// The operations that change an FS.
const (
	OpCreate   OpKind = iota + 1 // OpenFile created the file
	OpTruncate                   // Truncate, or OpenFile with O_TRUNC (Off is the new size)
	OpWrite                      // WriteAt of Len bytes at Off
	OpSync                       // File.Sync
	OpRename                     // Rename of Path to To
	OpRemove                     // Remove
	OpMkdir                      // MkdirAll created the directory Path
	OpSyncDir                    // SyncDir
)

var opNames = [...]string{"", "create", "truncate", "write", "sync", "rename", "remove", "mkdir", "syncdir"}

func (k OpKind) String() string {
	if int(k) < len(opNames) && k > 0 {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// Op is one operation that changes the FS.
type Op struct {
	Seq  int // 1 for the FS's first operation
	Kind OpKind
	Path string
	To   string // OpRename: the new name
	Off  int64  // OpWrite: position; OpTruncate: new size
	Len  int    // OpWrite: bytes
}

func (o Op) String() string {
	switch o.Kind {
	case OpWrite:
		return fmt.Sprintf("#%d write %s [%d,%d)", o.Seq, filepath.Base(o.Path), o.Off, o.Off+int64(o.Len))
	case OpTruncate:
		return fmt.Sprintf("#%d truncate %s to %d", o.Seq, filepath.Base(o.Path), o.Off)
	case OpRename:
		return fmt.Sprintf("#%d rename %s to %s", o.Seq, filepath.Base(o.Path), filepath.Base(o.To))
	}
	return fmt.Sprintf("#%d %s %s", o.Seq, o.Kind, filepath.Base(o.Path))
}

// node is a file or a directory.
type node struct {
	dir bool
	// A file's bytes now and as of its last Sync. They never share memory.
	data, synced []byte
	// A directory's entries now and as of its last SyncDir, and the
	// changes made since, oldest first.
	entries, durable map[string]*node
	pending          []dirOp
}

// dirOp is one change to a directory: name now names n (nil: removed),
// and when from is set, from was removed in the same step (a rename).
type dirOp struct {
	name string
	n    *node
	from string
}

func newDir() *node {
	return &node{dir: true, entries: map[string]*node{}, durable: map[string]*node{}}
}

// FS is the in-memory filesystem. The zero value is not usable: see New.
type FS struct {
	mu    sync.Mutex
	root  string
	top   *node
	seq   int
	hook  func(Op)
	fault func(Op) error
}

var _ vfs.FS = (*FS)(nil)

// New returns an empty FS whose root directory is root.
func New(root string) *FS {
	return &FS{root: absPath(root), top: newDir()}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// Root returns the root directory.
func (f *FS) Root() string { return f.root }

// Ops returns how many operations were numbered so far (including those
// a fault failed).
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seq
}

// SetHook makes fn be called after every operation that changed the FS,
// without the FS's lock held (fn may call Clone or Crash). nil removes it.
func (f *FS) SetHook(fn func(Op)) {
	f.mu.Lock()
	f.hook = fn
	f.mu.Unlock()
}

// SetFault makes fn be called before every operation that would change
// the FS, with the FS's lock held (fn must not call the FS). When it
// returns an error the operation fails with that error (wrapped in an
// *fs.PathError or *os.LinkError) and changes nothing, except a failed
// OpWrite, which leaves the first half of its bytes written, as a short
// write before the error would. A failed Sync makes nothing durable.
// nil removes it.
func (f *FS) SetFault(fn func(Op) error) {
	f.mu.Lock()
	f.fault = fn
	f.mu.Unlock()
}

// begin numbers op and asks the fault function about it. Called with
// f.mu held.
func (f *FS) begin(op *Op) error {
	f.seq++
	op.Seq = f.seq
	if f.fault != nil {
		return f.fault(*op)
	}
	return nil
}

// done calls the hook for op. Called without f.mu.
func (f *FS) done(op Op) {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(op)
	}
}

// rel splits name into its components below the root. above is true
// when name is the root's parent or further up.
func (f *FS) rel(name string) (parts []string, above bool, err error) {
	p := absPath(name)
	if p == f.root {
		return nil, false, nil
	}
	r, err := filepath.Rel(f.root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		if strings.HasPrefix(f.root, p+string(filepath.Separator)) || p == string(filepath.Separator) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%s is outside the crashfs root %s", name, f.root)
	}
	return strings.Split(r, string(filepath.Separator)), false, nil
}

// walk returns the node at parts.
func (f *FS) walk(parts []string) (*node, error) {
	n := f.top
	for _, c := range parts {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		n = n.entries[c]
		if n == nil {
			return nil, fs.ErrNotExist
		}
	}
	return n, nil
}

// lookup returns the node called name.
func (f *FS) lookup(op, name string) (*node, error) {
	parts, above, err := f.rel(name)
	if err == nil && above {
		err = syscall.EINVAL // directories above the root are not modelled
	}
	var n *node
	if err == nil {
		n, err = f.walk(parts)
	}
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return n, nil
}

// parent returns the directory that holds name, and name's last part.
func (f *FS) parent(op, name string) (*node, string, error) {
	parts, above, err := f.rel(name)
	if err == nil && (above || len(parts) == 0) {
		err = syscall.EINVAL // the root and above cannot be changed
	}
	var d *node
	if err == nil {
		d, err = f.walk(parts[:len(parts)-1])
	}
	if err == nil && !d.dir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	return d, parts[len(parts)-1], nil
}

// link records a change of directory d.
func (d *node) link(name string, n *node, from string) {
	if n == nil {
		delete(d.entries, name)
	} else {
		d.entries[name] = n
	}
	if from != "" {
		delete(d.entries, from)
	}
	d.pending = append(d.pending, dirOp{name: name, n: n, from: from})
}

// OpenFile opens name. O_CREATE, O_EXCL and O_TRUNC work as in os;
// O_APPEND and O_SYNC are not modelled. perm is ignored.
func (f *FS) OpenFile(name string, flag int, _ fs.FileMode) (vfs.File, error) {
	f.mu.Lock()
	d, base, err := f.parent("open", name)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	writable := acc != os.O_RDONLY
	n := d.entries[base]
	var op *Op
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		err = fs.ErrNotExist
	case n == nil:
		op = &Op{Kind: OpCreate, Path: name}
		if err = f.begin(op); err == nil {
			n = &node{}
			d.link(base, n, "")
		}
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		err = fs.ErrExist
	case n.dir:
		err = syscall.EISDIR
	case flag&os.O_TRUNC != 0 && writable:
		op = &Op{Kind: OpTruncate, Path: name}
		if err = f.begin(op); err == nil {
			n.data = nil
		}
	}
	f.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if op != nil {
		f.done(*op)
	}
	return &file{fs: f, n: n, name: name, read: acc != os.O_WRONLY, write: writable}, nil
}

// Rename renames oldname to newname, in the same directory, replacing a
// file called newname. The change is one step of the directory: a crash
// keeps it whole or not at all.
func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	op := Op{Kind: OpRename, Path: oldname, To: newname}
	err := f.rename(&op)
	f.mu.Unlock()
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	f.done(op)
	return nil
}

func (f *FS) rename(op *Op) error {
	d, ob, err := f.parent("rename", op.Path)
	if err != nil {
		return err
	}
	d2, nb, err := f.parent("rename", op.To)
	if err != nil {
		return err
	}
	if d != d2 {
		return syscall.EXDEV
	}
	n := d.entries[ob]
	if n == nil {
		return fs.ErrNotExist
	}
	if t := d.entries[nb]; t != nil && t.dir {
		return syscall.EISDIR
	}
	if err := f.begin(op); err != nil {
		return err
	}
	if ob != nb {
		d.link(nb, n, ob)
	}
	return nil
}

// Remove removes a file or an empty directory.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	d, base, err := f.parent("remove", name)
	var op Op
	if err == nil {
		n := d.entries[base]
		switch {
		case n == nil:
			err = &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
		case n.dir && len(n.entries) > 0:
			err = &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
		default:
			op = Op{Kind: OpRemove, Path: name}
			if err = f.begin(&op); err != nil {
				err = &fs.PathError{Op: "remove", Path: name, Err: err}
			} else {
				d.link(base, nil, "")
			}
		}
	}
	f.mu.Unlock()
	if err == nil {
		f.done(op)
	}
	return err
}

// ReadDir returns the names in dir, sorted.
func (f *FS) ReadDir(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("readdir", dir)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: syscall.ENOTDIR}
	}
	names := make([]string, 0, len(n.entries))
	for name := range n.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll creates dir and its missing parents, one OpMkdir each.
func (f *FS) MkdirAll(dir string, _ fs.FileMode) error {
	parts, above, err := f.rel(dir)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	if above {
		return nil
	}
	for i := range parts {
		if err := f.mkdir(dir, parts[:i+1]); err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) mkdir(dir string, parts []string) error {
	name := filepath.Join(append([]string{f.root}, parts...)...)
	f.mu.Lock()
	d, err := f.walk(parts[:len(parts)-1])
	if err == nil && !d.dir {
		err = syscall.ENOTDIR
	}
	base := parts[len(parts)-1]
	var op Op
	if err == nil {
		if n := d.entries[base]; n != nil {
			if !n.dir {
				err = syscall.ENOTDIR
			}
			f.mu.Unlock()
			if err != nil {
				return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
			}
			return nil
		}
		op = Op{Kind: OpMkdir, Path: name}
		if err = f.begin(&op); err == nil {
			d.link(base, newDir(), "")
		}
	}
	f.mu.Unlock()
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	f.done(op)
	return nil
}

// SyncDir makes dir's entries durable. The root's parents are not
// modelled: syncing them does nothing.
func (f *FS) SyncDir(dir string) error {
	f.mu.Lock()
	parts, above, err := f.rel(dir)
	if err == nil && above {
		f.mu.Unlock()
		return nil
	}
	var n *node
	if err == nil {
		n, err = f.walk(parts)
	}
	if err == nil && !n.dir {
		err = syscall.ENOTDIR
	}
	op := Op{Kind: OpSyncDir, Path: dir}
	if err == nil {
		if err = f.begin(&op); err == nil {
			n.durable = maps(n.entries)
			n.pending = nil
		}
	}
	f.mu.Unlock()
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	f.done(op)
	return nil
}

func maps(m map[string]*node) map[string]*node {
	out := make(map[string]*node, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// file is an open file.
type file struct {
	fs          *FS
	n           *node
	name        string
	read, write bool
	closed      bool // guarded by fs.mu
}

func (h *file) check(op string, write bool) error {
	switch {
	case h.closed:
		return &fs.PathError{Op: op, Path: h.name, Err: fs.ErrClosed}
	case write && !h.write, !write && !h.read:
		return &fs.PathError{Op: op, Path: h.name, Err: syscall.EBADF}
	}
	return nil
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: h.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(h.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *file) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	if err := h.check("write", true); err != nil {
		h.fs.mu.Unlock()
		return 0, err
	}
	if off < 0 {
		h.fs.mu.Unlock()
		return 0, &fs.PathError{Op: "write", Path: h.name, Err: syscall.EINVAL}
	}
	op := Op{Kind: OpWrite, Path: h.name, Off: off, Len: len(p)}
	if err := h.fs.begin(&op); err != nil {
		half := p[:len(p)/2]
		h.n.data = writeAt(h.n.data, half, off)
		h.fs.mu.Unlock()
		return len(half), &fs.PathError{Op: "write", Path: h.name, Err: err}
	}
	h.n.data = writeAt(h.n.data, p, off)
	h.fs.mu.Unlock()
	h.fs.done(op)
	return len(p), nil
}

// writeAt writes p into data at off, growing data (with zeros before off
// when off is past its end).
func writeAt(data, p []byte, off int64) []byte {
	if end := off + int64(len(p)); end > int64(len(data)) {
		data = resize(data, end)
	}
	copy(data[off:], p)
	return data
}

// resize returns data cut or zero-extended to size.
func resize(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size]
	}
	if size <= int64(cap(data)) {
		old := len(data)
		data = data[:size]
		clear(data[old:])
		return data
	}
	out := make([]byte, size, max(size, 2*int64(cap(data))))
	copy(out, data)
	return out
}

func (h *file) Sync() error {
	h.fs.mu.Lock()
	if err := h.check("sync", false); err != nil {
		h.fs.mu.Unlock()
		return err
	}
	op := Op{Kind: OpSync, Path: h.name}
	if err := h.fs.begin(&op); err != nil {
		h.fs.mu.Unlock()
		return &fs.PathError{Op: "sync", Path: h.name, Err: err}
	}
	h.n.synced = bytes.Clone(h.n.data)
	h.fs.mu.Unlock()
	h.fs.done(op)
	return nil
}

func (h *file) Truncate(size int64) error {
	h.fs.mu.Lock()
	if err := h.check("truncate", true); err != nil {
		h.fs.mu.Unlock()
		return err
	}
	if size < 0 {
		h.fs.mu.Unlock()
		return &fs.PathError{Op: "truncate", Path: h.name, Err: syscall.EINVAL}
	}
	op := Op{Kind: OpTruncate, Path: h.name, Off: size}
	if err := h.fs.begin(&op); err != nil {
		h.fs.mu.Unlock()
		return &fs.PathError{Op: "truncate", Path: h.name, Err: err}
	}
	h.n.data = resize(h.n.data, size)
	h.fs.mu.Unlock()
	h.fs.done(op)
	return nil
}

func (h *file) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return 0, &fs.PathError{Op: "stat", Path: h.name, Err: fs.ErrClosed}
	}
	return int64(len(h.n.data)), nil
}

func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return &fs.PathError{Op: "close", Path: h.name, Err: fs.ErrClosed}
	}
	h.closed = true
	return nil
}
