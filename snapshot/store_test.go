package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
)

// testOptions skip bbolt's fsync: these tests are about content, not
// power loss, and the package's own fsyncs still run.
var testOptions = snapshot.Options{NoSync: true, Timeout: 100 * time.Millisecond}

func openStore(t testing.TB, dir string) *snapshot.Store {
	t.Helper()
	s, rep, err := snapshot.Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Warning != "" || rep.SetAside != "" {
		t.Fatalf("unexpected set-aside on open: %+v", rep)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func save(t testing.TB, s *snapshot.Store, snaps ...producerstate.Snapshot) {
	t.Helper()
	for _, snap := range snaps {
		if err := s.Save(snap); err != nil {
			t.Fatal(err)
		}
	}
}

func list(t testing.TB, s *snapshot.Store) []int64 {
	t.Helper()
	offs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

// rawUpdate changes the db file behind the store's back, as damage would.
func rawUpdate(t *testing.T, dir string, fn func(b *bolt.Bucket) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, snapshot.FileName), 0o644, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket([]byte("producer-snapshots"))) }); err != nil {
		t.Fatal(err)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, rep, err := snapshot.Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Created || rep.Warning != "" {
		t.Fatalf("first open report %+v, want Created and no warning", rep)
	}
	snaps := []producerstate.Snapshot{
		richSnapshot(10, 0, 1),
		richSnapshot(11, 4096, 500),
		richSnapshot(12, math.MaxInt64, 50),
		{Offset: 8192}, // no producers at all
	}
	save(t, s, snaps...)
	for _, want := range snaps {
		got, err := s.Load(want.Offset)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSnapshot(got, want) {
			t.Fatalf("offset %d: loaded snapshot differs", want.Offset)
		}
	}
	if _, err := s.Load(5); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("Load(5) = %v, want ErrNotFound", err)
	}
	if got := list(t, s); !slices.Equal(got, []int64{0, 4096, 8192, math.MaxInt64}) {
		t.Fatalf("List = %v", got)
	}

	// Saving at the same offset replaces.
	repl := richSnapshot(13, 4096, 7)
	save(t, s, repl)
	if got, err := s.Load(4096); err != nil || !sameSnapshot(got, repl) {
		t.Fatalf("after overwrite: %v", err)
	}

	// Reopen: same data, and no creation this time.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, rep, err = snapshot.Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep != (snapshot.OpenReport{}) {
		t.Fatalf("reopen report %+v, want nothing to report", rep)
	}
	got, skipped, ok, err := s.LoadLatest(math.MaxInt64)
	if err != nil || !ok || len(skipped) != 0 || !sameSnapshot(got, snaps[2]) {
		t.Fatalf("LoadLatest after reopen: ok=%v skipped=%v err=%v", ok, skipped, err)
	}
	if got, err := s.Load(4096); err != nil || !sameSnapshot(got, repl) {
		t.Fatalf("after reopen, offset 4096: %v", err)
	}
}

func TestSaveRefusesInvalid(t *testing.T) {
	s := openStore(t, t.TempDir())
	err := s.Save(producerstate.Snapshot{Offset: 1, Producers: []producerstate.Entry{{ProducerID: 9}, {ProducerID: 3}}})
	if !errors.Is(err, snapshot.ErrInvalidSnapshot) {
		t.Fatalf("Save(unsorted) = %v", err)
	}
	if got := list(t, s); len(got) != 0 {
		t.Fatalf("List = %v after a refused save", got)
	}
}

func TestLoadLatest(t *testing.T) {
	for _, l := range loaders {
		t.Run(l.name, func(t *testing.T) { testLoadLatest(t, l.load) })
	}
}

func testLoadLatest(t *testing.T, loadLatest loadFunc) {
	s := openStore(t, t.TempDir())
	if _, _, ok, err := loadLatest(s, 100); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	for _, off := range []int64{10, 20, 30} {
		save(t, s, richSnapshot(uint64(off), off, 5))
	}
	for _, c := range []struct {
		max  int64
		want int64 // -1: none
	}{
		{-1, -1}, {0, -1}, {9, -1}, {10, 10}, {19, 10}, {20, 20}, {25, 20}, {30, 30}, {31, 30}, {math.MaxInt64, 30},
	} {
		got, skipped, ok, err := loadLatest(s, c.max)
		if err != nil || len(skipped) != 0 {
			t.Fatalf("LoadLatest(%d): skipped=%v err=%v", c.max, skipped, err)
		}
		if ok != (c.want >= 0) || (ok && got.Offset != c.want) {
			t.Errorf("LoadLatest(%d) = %d, ok=%v; want %d", c.max, got.Offset, ok, c.want)
		}
		if ok && !sameSnapshot(got, richSnapshot(uint64(c.want), c.want, 5)) {
			t.Errorf("LoadLatest(%d): content differs", c.max)
		}
	}
}

func TestDeleteAboveBelow(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, off := range []int64{0, 5, 10, 15, 20} {
		save(t, s, producerstate.Snapshot{Offset: off})
	}
	step := func(what string, f func() (int, error), wantN int, want ...int64) {
		t.Helper()
		n, err := f()
		if err != nil || n != wantN {
			t.Fatalf("%s: n=%d err=%v, want n=%d", what, n, err, wantN)
		}
		if got := list(t, s); !slices.Equal(got, want) {
			t.Fatalf("%s: List = %v, want %v", what, got, want)
		}
	}
	step("DeleteAbove(MaxInt64)", func() (int, error) { return s.DeleteAbove(math.MaxInt64) }, 0, 0, 5, 10, 15, 20)
	step("DeleteAbove(20)", func() (int, error) { return s.DeleteAbove(20) }, 0, 0, 5, 10, 15, 20)
	step("DeleteAbove(12)", func() (int, error) { return s.DeleteAbove(12) }, 2, 0, 5, 10)
	step("DeleteAbove(10)", func() (int, error) { return s.DeleteAbove(10) }, 0, 0, 5, 10)
	step("DeleteBelow(0)", func() (int, error) { return s.DeleteBelow(0) }, 0, 0, 5, 10)
	step("DeleteBelow(5)", func() (int, error) { return s.DeleteBelow(5) }, 1, 5, 10)
	step("DeleteBelow(math.MinInt64)", func() (int, error) { return s.DeleteBelow(math.MinInt64) }, 0, 5, 10)
	step("DeleteBelow(MaxInt64)", func() (int, error) { return s.DeleteBelow(math.MaxInt64) }, 2)
	save(t, s, producerstate.Snapshot{Offset: 7}, producerstate.Snapshot{Offset: math.MaxInt64})
	step("DeleteAbove(-1)", func() (int, error) { return s.DeleteAbove(-1) }, 2)
}

// TestLoadLatestSkipsCorrupt damages the newest snapshots in the ways a
// disk or an older/newer build could, and checks each is reported,
// deleted like Kafka does, and the next older one returned.
func TestLoadLatestSkipsCorrupt(t *testing.T) {
	for _, l := range loaders {
		t.Run(l.name, func(t *testing.T) { testLoadLatestSkipsCorrupt(t, l.load) })
	}
}

func testLoadLatestSkipsCorrupt(t *testing.T, loadLatest loadFunc) {
	dir := t.TempDir()
	s := openStore(t, dir)
	for _, off := range []int64{100, 200, 300, 400, 500} {
		save(t, s, richSnapshot(uint64(off), off, 30))
	}
	good600 := richSnapshot(600, 600, 3)
	save(t, s, good600)
	s.Close()

	rawUpdate(t, dir, func(b *bolt.Bucket) error {
		change := func(off int64, f func(v []byte) []byte) error {
			key := []byte{0, 0, 0, 0, 0, 0, byte(off >> 8), byte(off)}
			return b.Put(key, f(bytes.Clone(b.Get(key))))
		}
		// 500: a byte flipped inside the producers.
		if err := change(500, func(v []byte) []byte { v[len(v)/2] ^= 0x40; return v }); err != nil {
			return err
		}
		// 400: written by a build with another format version.
		if err := change(400, func(v []byte) []byte { v[1] = 9; return v }); err != nil {
			return err
		}
		// 300: a well-formed value for offset 250, stored under 300.
		return change(300, func([]byte) []byte { return mustEncode(t, richSnapshot(1, 250, 2)) })
	})

	s = openStore(t, dir)
	got, skipped, ok, err := loadLatest(s, 599)
	if err != nil || !ok {
		t.Fatalf("LoadLatest: ok=%v err=%v", ok, err)
	}
	if got.Offset != 200 || !sameSnapshot(got, richSnapshot(200, 200, 30)) {
		t.Fatalf("LoadLatest returned offset %d, want the snapshot at 200", got.Offset)
	}
	want := []struct {
		off  int64
		is   error
		pos  int
		text string
	}{
		{500, snapshot.ErrCorrupt, 2, "crc32c mismatch"},
		{400, snapshot.ErrVersion, 0, "format version 9"},
		{300, snapshot.ErrCorrupt, 6, "value holds offset 250, stored under offset 300"},
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %v, want offsets 500, 400, 300", skipped)
	}
	for i, w := range want {
		sk := skipped[i]
		var de *snapshot.DecodeError
		if sk.Offset != w.off || !errors.Is(sk.Err, w.is) || !errors.As(sk.Err, &de) ||
			de.Offset != w.off || de.Pos != w.pos || !strings.Contains(sk.Err.Error(), w.text) {
			t.Errorf("skipped[%d] = {%d, %v}, want offset %d, %v at byte %d, %q", i, sk.Offset, sk.Err, w.off, w.is, w.pos, w.text)
		}
		if !strings.Contains(sk.Err.Error(), "offset "+itoa(w.off)) {
			t.Errorf("error %q does not name offset %d", sk.Err, w.off)
		}
	}
	if errors.Is(skipped[1].Err, snapshot.ErrCorrupt) {
		t.Error("a version mismatch also matches ErrCorrupt")
	}
	// The skipped ones are gone; 600 (above the bound) and older ones stay.
	if got := list(t, s); !slices.Equal(got, []int64{100, 200, 600}) {
		t.Fatalf("List after LoadLatest = %v, want [100 200 600]", got)
	}
	if got, err := s.Load(600); err != nil || !sameSnapshot(got, good600) {
		t.Fatalf("Load(600): %v", err)
	}

	// Everything corrupt: a full replay.
	s.Close()
	rawUpdate(t, dir, func(b *bolt.Bucket) error {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			v = bytes.Clone(v)
			v[len(v)-1] ^= 1
			if err := b.Put(bytes.Clone(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	s = openStore(t, dir)
	_, skipped, ok, err = loadLatest(s, math.MaxInt64)
	if err != nil || ok || len(skipped) != 3 {
		t.Fatalf("all corrupt: ok=%v skipped=%v err=%v, want ok=false and 3 skipped", ok, skipped, err)
	}
	if got := list(t, s); len(got) != 0 {
		t.Fatalf("List = %v, want empty", got)
	}
}

// loadFunc is LoadLatest, or LoadLatestState with its State turned
// into a Snapshot, for tests that hold for both.
type loadFunc func(s *snapshot.Store, maxOffset int64) (producerstate.Snapshot, []snapshot.SkippedSnapshot, bool, error)

var loaders = []struct {
	name string
	load loadFunc
}{
	{"LoadLatest", (*snapshot.Store).LoadLatest},
	{"LoadLatestState", func(s *snapshot.Store, maxOffset int64) (producerstate.Snapshot, []snapshot.SkippedSnapshot, bool, error) {
		st, skipped, ok, err := s.LoadLatestState(maxOffset, producerstate.Config{})
		if ok != (st != nil) {
			return producerstate.Snapshot{}, skipped, ok, fmt.Errorf("LoadLatestState: ok=%v with state %v", ok, st)
		}
		var snap producerstate.Snapshot
		if st != nil {
			snap = st.Snapshot()
		}
		return snap, skipped, ok, err
	}},
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func setAsideFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, snapshot.FileName+".corrupt-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkSetAside opens dir, whose db file holds content, and checks the
// file is set aside untouched, reported, and replaced by a working store.
func checkSetAside(t *testing.T, dir string, content []byte) {
	t.Helper()
	s, rep, err := snapshot.Open(dir, testOptions)
	if err != nil {
		t.Fatalf("Open failed instead of setting the file aside: %v", err)
	}
	defer s.Close()
	t.Logf("set aside because: %v", rep.Cause)
	aside := setAsideFiles(t, dir)
	if len(aside) != 1 || rep.SetAside != aside[0] || rep.Cause == nil || !rep.Created {
		t.Fatalf("report %+v, set-aside files %v", rep, aside)
	}
	if !strings.Contains(rep.Warning, filepath.Base(aside[0])) || !strings.Contains(rep.Warning, "full replay") {
		t.Errorf("warning %q does not say where the file went and what follows", rep.Warning)
	}
	if got, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("set-aside file changed: %v", err)
	}
	if got := list(t, s); len(got) != 0 {
		t.Fatalf("fresh store lists %v", got)
	}
	if _, _, ok, err := s.LoadLatest(math.MaxInt64); ok || err != nil {
		t.Fatalf("fresh store LoadLatest: ok=%v err=%v", ok, err)
	}
	save(t, s, richSnapshot(1, 42, 10))
	s.Close()
	s = openStore(t, dir) // and it reopens without a warning
	if got := list(t, s); !slices.Equal(got, []int64{42}) {
		t.Fatalf("after reopen List = %v", got)
	}
}

func TestOpenGarbageDB(t *testing.T) {
	for _, size := range []int{1, 100, 4096, 64 << 10} {
		t.Run(itoa(int64(size)), func(t *testing.T) {
			dir := t.TempDir()
			garbage := make([]byte, size)
			rng := rand.New(rand.NewPCG(uint64(size), 1))
			for i := range garbage {
				garbage[i] = byte(rng.Uint32())
			}
			if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), garbage, 0o644); err != nil {
				t.Fatal(err)
			}
			checkSetAside(t, dir, garbage)
		})
	}
}

// TestOpenTruncatedDB cuts a real db file short at several points: inside
// the meta pages, past them but short of the pages the meta points to.
// Each must be set aside, never read past its end.
func TestOpenTruncatedDB(t *testing.T) {
	src := t.TempDir()
	s := openStore(t, src)
	for off := int64(1); off <= 8; off++ {
		save(t, s, richSnapshot(uint64(off), off, 300))
	}
	s.Close()
	full, err := os.ReadFile(filepath.Join(src, snapshot.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// The high-water mark: the end of the last page in use. The file may
	// run past it (bbolt grows in steps); those bytes are not data.
	var hwm int
	db, err := bolt.Open(filepath.Join(src, snapshot.FileName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error { hwm = int(tx.Size()); return nil })
	db.Close()
	if hwm > len(full) || hwm < 16<<10 {
		t.Fatalf("high-water mark %d, file %d bytes", hwm, len(full))
	}

	// Cut at the high-water mark: nothing lost, everything reads.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), full[:hwm], 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	if got := list(t, s); len(got) != 8 {
		t.Fatalf("cut at the high-water mark: List = %v", got)
	}
	if got, _, ok, err := s.LoadLatest(math.MaxInt64); err != nil || !ok || !sameSnapshot(got, richSnapshot(8, 8, 300)) {
		t.Fatalf("cut at the high-water mark: LoadLatest ok=%v err=%v", ok, err)
	}
	s.Close()

	page := os.Getpagesize()
	for _, size := range []int{page / 2, page + 100, 2*page + 10, 3 * page, 4 * page, hwm / 2, hwm - page, hwm - 1} {
		t.Run(itoa(int64(size)), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), full[:size], 0o644); err != nil {
				t.Fatal(err)
			}
			checkSetAside(t, dir, full[:size])
		})
	}
}

func TestOpenEmptyFile(t *testing.T) {
	// A zero-length file (a crash right after creating it) is simply
	// initialised, as bbolt does.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, rep, err := snapshot.Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !rep.Created || rep.SetAside != "" {
		t.Fatalf("report %+v", rep)
	}
	save(t, s, producerstate.Snapshot{Offset: 1})
}

func TestOpenForeignLayout(t *testing.T) {
	// A valid bbolt file that is not ours (a key of the wrong size) is
	// set aside too: nothing in it can be trusted as a snapshot.
	dir := t.TempDir()
	openStore(t, dir).Close()
	rawUpdate(t, dir, func(b *bolt.Bucket) error { return b.Put([]byte("short"), []byte("x")) })
	content, err := os.ReadFile(filepath.Join(dir, snapshot.FileName))
	if err != nil {
		t.Fatal(err)
	}
	checkSetAside(t, dir, content)
}

func TestOpenLockedDBFailsFast(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	save(t, s, producerstate.Snapshot{Offset: 3})
	start := time.Now()
	_, _, err := snapshot.Open(dir, snapshot.Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, bolterrors.ErrTimeout) {
		t.Fatalf("second Open = %v, want bbolt's timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %v", d)
	}
	if aside := setAsideFiles(t, dir); len(aside) != 0 {
		t.Fatalf("a locked db was set aside: %v", aside)
	}
	if got := list(t, s); !slices.Equal(got, []int64{3}) {
		t.Fatalf("List = %v", got)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := snapshot.Open(dir, snapshot.Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only open of no file = %v", err)
	}
	s := openStore(t, dir)
	save(t, s, richSnapshot(1, 10, 3), richSnapshot(2, 20, 3))
	s.Close()
	rawUpdate(t, dir, func(b *bolt.Bucket) error {
		key := []byte{0, 0, 0, 0, 0, 0, 0, 20}
		v := bytes.Clone(b.Get(key))
		v[len(v)-1] ^= 1
		return b.Put(key, v)
	})
	before, err := os.ReadFile(filepath.Join(dir, snapshot.FileName))
	if err != nil {
		t.Fatal(err)
	}

	ro, _, err := snapshot.Open(dir, snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got, skipped, ok, err := ro.LoadLatest(math.MaxInt64)
	if err != nil || !ok || got.Offset != 10 || len(skipped) != 1 || skipped[0].Offset != 20 {
		t.Fatalf("read-only LoadLatest: %d ok=%v skipped=%v err=%v", got.Offset, ok, skipped, err)
	}
	if got := list(t, ro); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("read-only store deleted a snapshot: List = %v", got)
	}
	if err := ro.Save(producerstate.Snapshot{Offset: 1}); !errors.Is(err, snapshot.ErrReadOnly) {
		t.Fatalf("Save = %v", err)
	}
	if _, err := ro.DeleteAbove(0); !errors.Is(err, snapshot.ErrReadOnly) {
		t.Fatalf("DeleteAbove = %v", err)
	}
	ro.Close()
	if after, _ := os.ReadFile(filepath.Join(dir, snapshot.FileName)); !bytes.Equal(before, after) {
		t.Fatal("a read-only store changed the file")
	}

	// A garbage file is an error in read-only mode, never set aside.
	if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), bytes.Repeat([]byte{0xab}, 9000), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snapshot.Open(dir, snapshot.Options{ReadOnly: true}); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("read-only open of garbage = %v, want ErrCorrupt", err)
	}
	if aside := setAsideFiles(t, dir); len(aside) != 0 {
		t.Fatalf("read-only open set a file aside: %v", aside)
	}
}

func TestClosed(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := s.Save(producerstate.Snapshot{}); !errors.Is(err, snapshot.ErrClosed) {
		t.Errorf("Save = %v", err)
	}
	if _, err := s.List(); !errors.Is(err, snapshot.ErrClosed) {
		t.Errorf("List = %v", err)
	}
	if _, _, _, err := s.LoadLatest(1); !errors.Is(err, snapshot.ErrClosed) {
		t.Errorf("LoadLatest = %v", err)
	}
	if _, err := s.DeleteBelow(10); !errors.Is(err, snapshot.ErrClosed) {
		t.Errorf("DeleteBelow = %v", err)
	}
}

func TestSyncedSaveAndConcurrentUse(t *testing.T) {
	// The production setting (bbolt fsyncs each commit), with readers and
	// writers at once, for the race detector.
	dir := t.TempDir()
	s, _, err := snapshot.Open(dir, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				off := int64(w*100 + i)
				if err := s.Save(richSnapshot(uint64(off), off, 20)); err != nil {
					t.Error(err)
					return
				}
				if _, _, _, err := s.LoadLatest(off); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := list(t, s); len(got) != 20 {
		t.Fatalf("List = %v", got)
	}
}

// TestOpenDamagedPages overwrites pages behind valid meta pages (the
// freelist, the bucket's branch and leaf pages) with garbage. bbolt
// panics or faults on such pages; Open must turn that into a set-aside,
// never a crash.
func TestOpenDamagedPages(t *testing.T) {
	src := t.TempDir()
	s := openStore(t, src)
	for off := int64(1); off <= 40; off++ {
		save(t, s, richSnapshot(uint64(off), off*1000, 20))
	}
	s.Close()
	full, err := os.ReadFile(filepath.Join(src, snapshot.FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	for seed := range uint64(64) {
		t.Run(itoa(int64(seed)), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			damaged := bytes.Clone(full)
			// Damage a few pages after the two meta pages.
			for range 1 + rng.IntN(4) {
				p := 2 + rng.IntN(len(full)/page-2)
				for i := p * page; i < (p+1)*page; i++ {
					damaged[i] = byte(rng.Uint32())
				}
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, snapshot.FileName), damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			s, rep, err := snapshot.Open(dir, testOptions)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			// Whether the damage hit anything bbolt reads at open or not,
			// the store must answer without panicking.
			_, skipped, ok, err := s.LoadLatest(math.MaxInt64)
			t.Logf("set aside: %v; LoadLatest ok=%v skipped=%d err=%v", rep.Cause, ok, len(skipped), err)
			if err != nil && !errors.Is(err, snapshot.ErrCorrupt) {
				t.Fatalf("LoadLatest error %v does not match ErrCorrupt", err)
			}
		})
	}
}
