package crashfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/vfs"
)

const root = "/crashfs-test"

func path(name string) string { return filepath.Join(root, name) }

func create(t *testing.T, f *crashfs.FS, name string) vfs.File {
	t.Helper()
	h, err := f.OpenFile(path(name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func write(t *testing.T, h vfs.File, p []byte, off int64) {
	t.Helper()
	if n, err := h.WriteAt(p, off); err != nil || n != len(p) {
		t.Fatalf("WriteAt: %d, %v", n, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// pattern returns n bytes none of which is zero, different for each tag.
func pattern(n int, tag byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(1 + (i*7+int(tag)*13)%251)
	}
	return p
}

func read(t *testing.T, f *crashfs.FS, name string) ([]byte, bool) {
	t.Helper()
	data, err := f.ReadFile(path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return data, true
}

func names(t *testing.T, f *crashfs.FS, dir string) []string {
	t.Helper()
	n, err := f.ReadDir(path(dir))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// appended is a file "log" in a synced directory: synced holds its
// first bytes, and more were appended without a sync.
func appended(t *testing.T, synced, unsynced int) (*crashfs.FS, []byte) {
	t.Helper()
	f := crashfs.New(root)
	h := create(t, f, "log")
	must(t, f.SyncDir(root))
	all := pattern(synced+unsynced, 1)
	write(t, h, all[:synced], 0)
	must(t, h.Sync())
	write(t, h, all[synced:], int64(synced))
	return f, all
}

func TestDropUnsynced(t *testing.T) {
	f, all := appended(t, 5000, 3000)
	// A file whose entry is durable but whose data never was.
	h := create(t, f, "empty-synced-entry")
	write(t, h, []byte("lost"), 0)
	must(t, f.SyncDir(root))
	// A rename and a removal without a directory sync.
	h3 := create(t, f, "a.tmp")
	write(t, h3, []byte("renamed"), 0)
	must(t, h3.Sync())
	r := create(t, f, "removed")
	write(t, r, []byte("still here"), 0)
	must(t, r.Sync())
	must(t, f.SyncDir(root))
	must(t, f.Rename(path("a.tmp"), path("a")))
	must(t, f.Remove(path("removed")))
	// A file synced, but its entry never was.
	h2 := create(t, f, "unsynced-entry")
	write(t, h2, []byte("data"), 0)
	must(t, h2.Sync())

	c := f.Crash(crashfs.DropUnsynced, nil)
	if got, _ := read(t, c, "log"); !bytes.Equal(got, all[:5000]) {
		t.Errorf("log: %d bytes, want the 5000 synced", len(got))
	}
	if got, ok := read(t, c, "empty-synced-entry"); !ok || len(got) != 0 {
		t.Errorf("file with a synced entry and unsynced data: %q, %v; want empty", got, ok)
	}
	want := []string{"a.tmp", "empty-synced-entry", "log", "removed"}
	if got := names(t, c, ""); !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	if got, _ := read(t, c, "removed"); string(got) != "still here" {
		t.Errorf("removed file without a directory sync: %q", got)
	}
	// The original goes on, unchanged by the crash.
	if got, _ := read(t, f, "log"); !bytes.Equal(got, all) {
		t.Errorf("the crash changed the original")
	}
	if got := names(t, f, ""); !slices.Equal(got, []string{"a", "empty-synced-entry", "log", "unsynced-entry"}) {
		t.Errorf("original entries %v", got)
	}
	// After the directory sync the rename and removal are durable.
	must(t, f.SyncDir(root))
	if got := names(t, f.Crash(crashfs.DropUnsynced, nil), ""); !slices.Equal(got, []string{"a", "empty-synced-entry", "log", "unsynced-entry"}) {
		t.Errorf("after SyncDir: %v", got)
	}
}

func TestTornWrite(t *testing.T) {
	const synced, unsynced = 3000, 40
	f, all := appended(t, synced, unsynced)
	seen := map[int]bool{}
	for seed := range uint64(1000) {
		got, _ := read(t, f.Crash(crashfs.TornWrite, rng(seed)), "log")
		if len(got) < synced || len(got) > synced+unsynced || !bytes.Equal(got, all[:len(got)]) {
			t.Fatalf("seed %d: %d bytes, not the synced bytes plus a prefix of the rest", seed, len(got))
		}
		seen[len(got)] = true
	}
	if len(seen) != unsynced+1 {
		t.Errorf("cuts seen: %d distinct, nothing kept %t, all kept %t", len(seen), seen[synced], seen[synced+unsynced])
	}
}

// TestTornWriteOverwrite: an overwrite inside synced bytes tears into new
// bytes before the cut and old ones after it.
func TestTornWriteOverwrite(t *testing.T) {
	f := crashfs.New(root)
	h := create(t, f, "x")
	must(t, f.SyncDir(root))
	old := pattern(100, 1)
	write(t, h, old, 0)
	must(t, h.Sync())
	neu := pattern(60, 2)
	write(t, h, neu, 20)
	for seed := range uint64(100) {
		got, _ := read(t, f.Crash(crashfs.TornWrite, rng(seed)), "x")
		if len(got) != 100 {
			t.Fatalf("seed %d: length %d", seed, len(got))
		}
		cur := append(append(slices.Clone(old[:20]), neu...), old[80:]...)
		cut := 0
		for cut < 100 && got[cut] == cur[cut] {
			cut++
		}
		if !bytes.Equal(got[cut:], old[cut:]) {
			t.Fatalf("seed %d: not new bytes up to a cut and old ones after", seed)
		}
	}
}

func TestReorder(t *testing.T) {
	const bs = crashfs.BlockSize
	f, all := appended(t, bs+100, 4*bs)
	end := len(all)
	kept := map[int]map[bool]bool{}
	for seed := range uint64(200) {
		got, _ := read(t, f.Crash(crashfs.Reorder, rng(seed)), "log")
		if len(got) < bs+100 || len(got) > end {
			t.Fatalf("seed %d: length %d", seed, len(got))
		}
		if !bytes.Equal(got[:bs+100], all[:bs+100]) {
			t.Fatalf("seed %d: synced bytes changed", seed)
		}
		if len(got)%bs != 0 && len(got) != end && len(got) != bs+100 {
			t.Fatalf("seed %d: length %d is not at a block boundary", seed, len(got))
		}
		for lo := bs; lo < end; lo += bs {
			if kept[lo] == nil {
				kept[lo] = map[bool]bool{}
			}
			if lo >= len(got) {
				kept[lo][false] = true // lost, and the file ends before it
				continue
			}
			blk := got[lo:min(lo+bs, len(got))]
			isNew := bytes.Equal(blk, all[lo:lo+len(blk)])
			// A block not kept reads as it was: the synced bytes, zeros
			// past them.
			old := make([]byte, len(blk))
			if lo < bs+100 {
				copy(old, all[lo:bs+100])
			}
			if !isNew && !bytes.Equal(blk, old) {
				t.Fatalf("seed %d: block at %d is neither new nor old", seed, lo)
			}
			kept[lo][isNew] = true
		}
	}
	for lo := bs; lo < end; lo += bs {
		if !kept[lo][true] || !kept[lo][false] {
			t.Errorf("block at %d: kept %t, lost %t; want both across seeds", lo, kept[lo][true], kept[lo][false])
		}
	}
}

func TestZeroFill(t *testing.T) {
	f, all := appended(t, 5000, 3000)
	h := create(t, f, "new") // entry and data unsynced
	write(t, h, []byte("abc"), 0)
	c := f.Crash(crashfs.ZeroFill, nil)
	got, _ := read(t, c, "log")
	if len(got) != len(all) || !bytes.Equal(got[:5000], all[:5000]) || !bytes.Equal(got[5000:], make([]byte, 3000)) {
		t.Errorf("log: %d bytes; want the synced 5000 then 3000 zeros", len(got))
	}
	if got, ok := read(t, c, "new"); !ok || !bytes.Equal(got, []byte{0, 0, 0}) {
		t.Errorf("new file: %q %v; want three zeros", got, ok)
	}
}

func TestKeepAll(t *testing.T) {
	f, _ := appended(t, 5000, 3000)
	must(t, f.MkdirAll(path("d/e"), 0o755))
	h := create(t, f, "d/e/x")
	write(t, h, []byte("x"), 0)
	must(t, f.Rename(path("log"), path("log2")))
	c := f.Crash(crashfs.KeepAll, nil)
	if c.Digest() != f.Digest() {
		t.Error("KeepAll changed something")
	}
	if f.Crash(crashfs.DropUnsynced, nil).Digest() == f.Digest() {
		t.Error("the digest does not see unsynced changes go")
	}
}

// TestDirectoryPrefix: a directory keeps a prefix of its unsynced
// changes, never a later change without an earlier one, and a rename is
// whole.
func TestDirectoryPrefix(t *testing.T) {
	f := crashfs.New(root)
	a := create(t, f, "a")
	must(t, a.Sync())
	must(t, f.Rename(path("a"), path("b")))
	create(t, f, "c")
	must(t, f.Remove(path("b")))
	legal := map[string]bool{"": true, "a": true, "b": true, "b c": true, "c": true}
	seen := map[string]bool{}
	for _, mode := range []crashfs.Mode{crashfs.TornWrite, crashfs.Reorder} {
		for seed := range uint64(200) {
			got := fmt.Sprint(names(t, f.Crash(mode, rng(seed)), ""))
			got = got[1 : len(got)-1]
			if !legal[got] {
				t.Fatalf("%s seed %d: entries [%s], not a prefix of the changes", mode, seed, got)
			}
			seen[got] = true
		}
	}
	if len(seen) != len(legal) {
		t.Errorf("states seen %v, want all of %v", seen, legal)
	}
}

func TestSubdirectoryLostWithoutParentSync(t *testing.T) {
	f := crashfs.New(root)
	must(t, f.MkdirAll(path("p/q"), 0o755))
	h := create(t, f, "p/q/x")
	write(t, h, []byte("x"), 0)
	must(t, h.Sync())
	must(t, f.SyncDir(path("p/q")))
	if _, err := f.Crash(crashfs.DropUnsynced, nil).ReadDir(path("p")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("p survived without a sync of the root: %v", err)
	}
	must(t, f.SyncDir(root))
	must(t, f.SyncDir(path("p")))
	if got, _ := read(t, f.Crash(crashfs.DropUnsynced, nil), "p/q/x"); string(got) != "x" {
		t.Errorf("after syncing every level: %q", got)
	}
}

// TestClone: a clone crashes like the original would have at the moment
// it was taken.
func TestClone(t *testing.T) {
	f, _ := appended(t, 5000, 3000)
	c := f.Clone()
	h, err := f.OpenFile(path("log"), os.O_RDWR, 0)
	must(t, err)
	must(t, h.Sync())
	if c.Crash(crashfs.DropUnsynced, nil).Digest() == f.Crash(crashfs.DropUnsynced, nil).Digest() {
		t.Error("the clone saw the sync made after it")
	}
	if c.Crash(crashfs.KeepAll, nil).Digest() != f.Crash(crashfs.KeepAll, nil).Digest() {
		t.Error("the clone lost data")
	}
	for _, m := range crashfs.Modes {
		if c.Crash(m, rng(3)).Digest() != c.Clone().Crash(m, rng(3)).Digest() {
			t.Errorf("%s: crashes of a clone and of its clone with the same seed differ", m)
		}
	}
}

func TestHookAndOps(t *testing.T) {
	f := crashfs.New(root)
	var ops []string
	f.SetHook(func(op crashfs.Op) { ops = append(ops, op.Kind.String()) })
	must(t, f.MkdirAll(path("d"), 0o755))
	h, err := f.OpenFile(path("d/x"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	write(t, h, []byte("hello"), 0)
	must(t, h.Sync())
	must(t, h.Truncate(2))
	must(t, h.Close())
	h, err = f.OpenFile(path("d/x"), os.O_RDWR|os.O_TRUNC, 0)
	must(t, err)
	must(t, f.Rename(path("d/x"), path("d/y")))
	must(t, f.SyncDir(path("d")))
	must(t, f.Remove(path("d/y")))
	want := []string{"mkdir", "create", "write", "sync", "truncate", "truncate", "rename", "syncdir", "remove"}
	if !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	if f.Ops() != len(want) {
		t.Errorf("Ops() = %d", f.Ops())
	}
	// A removed file stays readable through an open handle.
	buf := make([]byte, 4)
	if n, err := h.ReadAt(buf, 0); n != 0 || err != io.EOF {
		t.Errorf("read of the truncated, removed file: %d %v", n, err)
	}
}

func TestFault(t *testing.T) {
	f := crashfs.New(root)
	h := create(t, f, "x")
	must(t, f.SyncDir(root))
	write(t, h, []byte("durable"), 0)
	must(t, h.Sync())
	f.SetFault(func(op crashfs.Op) error {
		if op.Kind == crashfs.OpWrite || op.Kind == crashfs.OpSync || op.Kind == crashfs.OpRename {
			return syscall.EIO
		}
		return nil
	})
	n, err := h.WriteAt([]byte("12345678"), 7)
	if n != 4 || !errors.Is(err, syscall.EIO) {
		t.Errorf("failed write: %d, %v; want 4 bytes and EIO", n, err)
	}
	if err := h.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("sync: %v", err)
	}
	if err := f.Rename(path("x"), path("y")); !errors.Is(err, syscall.EIO) {
		t.Errorf("rename: %v", err)
	}
	if got, _ := read(t, f, "x"); string(got) != "durable1234" {
		t.Errorf("after the failed write: %q", got)
	}
	if got, _ := read(t, f.Crash(crashfs.DropUnsynced, nil), "x"); string(got) != "durable" {
		t.Errorf("the failed sync made %q durable", got)
	}
}

func TestFileErrors(t *testing.T) {
	f := crashfs.New(root)
	if _, err := f.OpenFile(path("nope"), os.O_RDONLY, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open of a missing file: %v", err)
	}
	h := create(t, f, "x")
	if _, err := f.OpenFile(path("x"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("O_EXCL: %v", err)
	}
	must(t, f.MkdirAll(path("d"), 0o755))
	if err := f.Rename(path("x"), path("d/x")); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename across directories: %v", err)
	}
	if _, err := f.ReadDir(path("x")); err == nil {
		t.Error("ReadDir of a file worked")
	}
	if _, err := f.OpenFile("/elsewhere/x", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		t.Error("a file outside the root was created")
	}
	ro, err := f.OpenFile(path("x"), os.O_RDONLY, 0)
	must(t, err)
	if _, err := ro.WriteAt([]byte("x"), 0); err == nil {
		t.Error("write through a read-only handle worked")
	}
	must(t, h.Close())
	if _, err := h.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	write(t, create(t, f, "gap"), []byte("z"), 10)
	if got, _ := read(t, f, "gap"); !bytes.Equal(got, append(make([]byte, 10), 'z')) {
		t.Errorf("write past the end: %q", got)
	}
	// The root's parents exist and need no sync.
	must(t, f.MkdirAll(filepath.Dir(root), 0o755))
	must(t, f.SyncDir(filepath.Dir(root)))
}

// TestSegmentLog runs the segment layer on the FS: what a log synced and
// closed cleanly survives every crash mode, and an unsynced tail is cut
// to a valid prefix on reopen.
func TestSegmentLog(t *testing.T) {
	dir := path("p-0")
	cfg := segment.Config{SegmentBytes: 2000, IndexIntervalBytes: 100}
	f := crashfs.New(root)
	cfg.FS = f
	// segment.Open creates its directory but leaves the sync of the
	// parent to its caller, as the store does.
	must(t, f.MkdirAll(dir, 0o755))
	must(t, f.SyncDir(root))
	l, _, err := segment.Open(dir, cfg)
	must(t, err)
	batch := func(i int) recordbatch.Batch {
		b := recordbatch.NewBuilder(0)
		must(t, b.Append(1700000000000+int64(i), nil, pattern(150, byte(i)), nil))
		raw, err := b.AppendTo(nil)
		must(t, err)
		return raw
	}
	for i := range 20 {
		_, err := l.Append(batch(i))
		must(t, err)
		if i == 11 {
			_, err := l.Sync()
			must(t, err)
		}
	}
	durable := int64(0)
	for _, m := range crashfs.Modes {
		for seed := range uint64(20) {
			c := f.Crash(m, rng(seed))
			l2, _, err := segment.Open(dir, segment.Config{FS: c, SegmentBytes: 2000, IndexIntervalBytes: 100})
			if err != nil {
				t.Fatalf("%s seed %d: reopen: %v", m, seed, err)
			}
			end := l2.EndOffset()
			if end < 12 || end > 20 || m == crashfs.KeepAll && end != 20 {
				t.Fatalf("%s seed %d: %d batches survive, want 12 to 20", m, seed, end)
			}
			if m == crashfs.DropUnsynced {
				durable = end
			}
			must(t, l2.Close())
		}
	}
	if durable == 20 {
		t.Error("nothing unsynced was dropped")
	}
	must(t, l.Close())
	for _, m := range crashfs.Modes {
		c := f.Crash(m, rng(1))
		l2, rep, err := segment.Open(dir, segment.Config{FS: c, SegmentBytes: 2000, IndexIntervalBytes: 100})
		must(t, err)
		if l2.EndOffset() != 20 || !rep.Clean {
			t.Errorf("%s after a clean close: end %d, clean %t", m, l2.EndOffset(), rep.Clean)
		}
		must(t, l2.Close())
	}
}
