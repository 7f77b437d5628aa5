package crashfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
)

// Crash returns the FS a power loss at this moment could leave, by mode
// (see the package doc), with rng choosing where it tears. Everything in
// the result is durable; it has no hook and no fault function. f itself
// is not changed and can go on. rng may be nil for DropUnsynced, ZeroFill
// and KeepAll, which choose nothing.
func (f *FS) Crash(mode Mode, rng *rand.Rand) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := crasher{mode: mode, rng: rng, memo: map[*node]*node{}}
	return &FS{root: f.root, top: c.node(f.top)}
}

type crasher struct {
	mode Mode
	rng  *rand.Rand
	memo map[*node]*node
}

func (c *crasher) node(n *node) *node {
	if m, ok := c.memo[n]; ok {
		return m
	}
	if !n.dir {
		data := c.file(n.data, n.synced)
		m := &node{data: data, synced: bytes.Clone(data)}
		c.memo[n] = m
		return m
	}
	m := newDir()
	c.memo[n] = m
	ents := c.entries(n)
	for _, name := range sortedNames(ents) {
		child := c.node(ents[name])
		m.entries[name] = child
		m.durable[name] = child
	}
	return m
}

// entries returns the entries of directory n that survive: the durable
// ones with a prefix of the changes since applied.
func (c *crasher) entries(n *node) map[string]*node {
	k := 0
	switch c.mode {
	case KeepAll, ZeroFill:
		return n.entries
	case TornWrite, Reorder:
		k = c.rng.IntN(len(n.pending) + 1)
	}
	ents := maps(n.durable)
	for _, op := range n.pending[:k] {
		if op.n == nil {
			delete(ents, op.name)
		} else {
			ents[op.name] = op.n
		}
		if op.from != "" {
			delete(ents, op.from)
		}
	}
	return ents
}

// file returns the bytes a file whose contents are data, and were synced
// when they were synced, holds after the crash.
func (c *crasher) file(data, synced []byte) []byte {
	if bytes.Equal(data, synced) {
		return bytes.Clone(synced)
	}
	switch c.mode {
	case DropUnsynced:
		return bytes.Clone(synced)
	case KeepAll:
		return bytes.Clone(data)
	case ZeroFill:
		// The new length, with what the disk held: the synced bytes, and
		// zeros past them.
		return resize(bytes.Clone(synced), int64(len(data)))
	case TornWrite:
		return tear(data, synced, c.rng)
	default:
		return reorder(data, synced, c.rng)
	}
}

// tear keeps the writes since the last sync up to a random byte: the
// bytes before the cut are the new ones, those after it the old ones.
func tear(data, synced []byte, rng *rand.Rand) []byte {
	d := 0 // the first byte that differs
	for d < len(data) && d < len(synced) && data[d] == synced[d] {
		d++
	}
	if d >= len(data) {
		// data is a prefix of synced: the file was cut; the cut happened
		// or not.
		if rng.IntN(2) == 0 {
			return bytes.Clone(data)
		}
		return bytes.Clone(synced)
	}
	cut := d + rng.IntN(len(data)-d+1)
	if cut == len(data) {
		return bytes.Clone(data)
	}
	out := bytes.Clone(data[:cut])
	if cut < len(synced) {
		out = append(out, synced[cut:]...)
	}
	return out
}

// reorder keeps a random subset of the BlockSize blocks written since the
// last sync. A block kept past the synced end extends the file, with
// zeros where the blocks before it were lost; a cut of the file is kept
// or lost as a whole.
func reorder(data, synced []byte, rng *rand.Rand) []byte {
	out := bytes.Clone(synced)
	if len(data) < len(synced) && rng.IntN(2) == 0 {
		out = out[:len(data)]
	}
	for lo := 0; lo < len(data); lo += BlockSize {
		hi := min(lo+BlockSize, len(data))
		if lo < len(synced) && bytes.Equal(data[lo:hi], synced[lo:min(hi, len(synced))]) && hi <= len(synced) {
			continue // unchanged
		}
		if rng.IntN(2) == 0 {
			continue // lost
		}
		if len(out) < hi {
			out = resize(out, int64(hi))
		}
		copy(out[lo:hi], data[lo:hi])
	}
	return out
}

func sortedNames(m map[string]*node) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Clone returns an exact copy of f, unsynced data and directory changes
// included, without its hook and fault function. Crash the copy later to
// see what a crash at this moment could leave.
func (f *FS) Clone() *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	memo := map[*node]*node{}
	return &FS{root: f.root, top: cloneNode(f.top, memo), seq: f.seq}
}

func cloneNode(n *node, memo map[*node]*node) *node {
	if n == nil {
		return nil
	}
	if m, ok := memo[n]; ok {
		return m
	}
	if !n.dir {
		m := &node{data: bytes.Clone(n.data), synced: bytes.Clone(n.synced)}
		memo[n] = m
		return m
	}
	m := &node{dir: true, entries: map[string]*node{}, durable: map[string]*node{}}
	memo[n] = m
	for k, v := range n.entries {
		m.entries[k] = cloneNode(v, memo)
	}
	for k, v := range n.durable {
		m.durable[k] = cloneNode(v, memo)
	}
	for _, op := range n.pending {
		m.pending = append(m.pending, dirOp{name: op.name, n: cloneNode(op.n, memo), from: op.from})
	}
	return m
}

// ReadFile returns the current contents of the file name.
func (f *FS) ReadFile(name string) ([]byte, error) {
	return f.fileBytes(name, func(n *node) []byte { return n.data })
}

// SyncedFile returns the contents of the file name as of its last Sync
// (whether or not its directory entry is durable).
func (f *FS) SyncedFile(name string) ([]byte, error) {
	return f.fileBytes(name, func(n *node) []byte { return n.synced })
}

// fileBytes returns a copy of which of the file name's contents.
func (f *FS) fileBytes(name string, which func(*node) []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return bytes.Clone(which(n)), nil
}

// WriteFile replaces the contents of the file name, creating it in an
// existing directory if needed, durably and without numbering an
// operation: it is a test's hand between two runs (to damage a file), not
// something the code under test did.
func (f *FS) WriteFile(name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, base, err := f.parent("write", name)
	if err != nil {
		return err
	}
	n := d.entries[base]
	if n == nil {
		n = &node{}
		d.entries[base] = n
		d.durable[base] = n
	}
	if n.dir {
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrInvalid}
	}
	n.data, n.synced = bytes.Clone(data), bytes.Clone(data)
	return nil
}

// RemoveFile removes the file name durably, without numbering an
// operation (see WriteFile).
func (f *FS) RemoveFile(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, base, err := f.parent("remove", name)
	if err != nil {
		return err
	}
	if d.entries[base] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d.entries, base)
	delete(d.durable, base)
	return nil
}

// Files returns the path of every file, sorted, with its current
// contents.
func (f *FS) Files() map[string][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]byte{}
	var walk func(dir string, n *node)
	walk = func(dir string, n *node) {
		for name, c := range n.entries {
			p := filepath.Join(dir, name)
			if c.dir {
				walk(p, c)
			} else {
				out[p] = bytes.Clone(c.data)
			}
		}
	}
	walk(f.root, f.top)
	return out
}

// Digest is a hash of the current tree: every directory and file path and
// every file's contents. Two FSs with equal digests look the same to a
// reader; synced state and pending changes are not included.
func (f *FS) Digest() [sha256.Size]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := sha256.New()
	var walk func(prefix string, n *node)
	walk = func(prefix string, n *node) {
		for _, name := range sortedNames(n.entries) {
			c := n.entries[name]
			p := prefix + "/" + name
			if c.dir {
				fmt.Fprintf(h, "d %s\n", p)
				walk(p, c)
				continue
			}
			fmt.Fprintf(h, "f %s ", p)
			_ = binary.Write(h, binary.BigEndian, int64(len(c.data)))
			h.Write(c.data)
		}
	}
	walk("", f.top)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
