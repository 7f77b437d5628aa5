package logstore_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// openStore opens a store in dir and closes it when the test ends (a
// second Close is harmless).
func openStore(t testing.TB, dir string, opts logstore.Options) *logstore.Store {
	t.Helper()
	s, err := logstore.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// killedCopy returns a copy of dir as a killed process leaves it (the
// store open: no clean mark), then closes s. p's background work ends
// first: a copy of a directory being written is no crash image (the crash
// suite makes those).
func killedCopy(t testing.TB, s *logstore.Store, p *logstore.Partition, dir string) string {
	t.Helper()
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	testutil.CopyDir(t, dir, killed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return killed
}

func openPartition(t testing.TB, s *logstore.Store, topic string, partition int32) *logstore.Partition {
	t.Helper()
	p, err := s.Partition(topic, partition)
	if err != nil {
		t.Fatalf("Partition(%q, %d): %v", topic, partition, err)
	}
	return p
}

// batchOf builds a client batch of the given values, one record each,
// with base offset 0 (Append stamps the real one). It panics on a builder
// error, which would be a bug of the test, so goroutines can call it.
func batchOf(values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	for _, v := range values {
		if err := b.Append(1_700_000_000_000, nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// readValues reads the partition from its start to its end and returns
// each record's value by offset. It fails on a gap or a bad batch.
func readValues(t testing.TB, p *logstore.Partition) map[int64]string {
	t.Helper()
	values := make(map[int64]string)
	next, end := p.StartOffset(), p.EndOffset()
	for next < end {
		data, err := p.Read(next, 64<<10)
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		if len(data) == 0 {
			t.Fatalf("Read(%d) returned nothing below end %d", next, end)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatalf("batch read at %d: %v", next, err)
			}
			if err := b.Validate(); err != nil {
				t.Fatalf("batch read at %d: %v", next, err)
			}
			if b.LastOffset() >= next {
				if b.BaseOffset() > next {
					t.Fatalf("gap: batch at %d after offset %d", b.BaseOffset(), next)
				}
				recs, err := b.DecodeRecords(0)
				if err != nil {
					t.Fatalf("records of batch %d: %v", b.BaseOffset(), err)
				}
				for _, r := range recs {
					values[r.Offset] = string(r.Value)
				}
				next = b.LastOffset() + 1
			}
			data = data[b.Size():]
		}
	}
	return values
}

// testFS is a vfs.FS over vfs.OS that counts the syncs of .log
// files, can make them slow, and can fail one .log Sync or WriteAt.
type testFS struct {
	vfs.FS
	logSyncs  atomic.Int64
	syncDelay time.Duration

	failSync  atomic.Bool // the next .log Sync fails
	failWrite atomic.Bool // the next .log WriteAt fails

	mu     sync.Mutex
	synced map[string]int64 // .log file -> its size before its last good sync
}

var errInjected = errors.New("injected fault")

func newTestFS() *testFS { return &testFS{FS: vfs.OS, synced: make(map[string]int64)} }

func (f *testFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &testFile{File: file, fs: f, name: name}, nil
}

type testFile struct {
	vfs.File
	fs   *testFS
	name string
}

func (f *testFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.failWrite.CompareAndSwap(true, false) {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: errInjected}
	}
	return f.File.WriteAt(p, off)
}

func (f *testFile) Sync() error {
	if f.fs.failSync.CompareAndSwap(true, false) {
		return &fs.PathError{Op: "fdatasync", Path: f.name, Err: errInjected}
	}
	// Every write that completed before this point is covered by the
	// sync below.
	size, err := f.File.Size()
	if err != nil {
		return err
	}
	if f.fs.syncDelay > 0 {
		time.Sleep(f.fs.syncDelay)
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.logSyncs.Add(1)
	f.fs.mu.Lock()
	f.fs.synced[f.name] = max(f.fs.synced[f.name], size)
	f.fs.mu.Unlock()
	return nil
}

// syncedSizes returns each .log file's size at its last good sync.
func (f *testFS) syncedSizes() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int64, len(f.synced))
	for k, v := range f.synced {
		out[k] = v
	}
	return out
}

// listDir returns the names in dir, sorted.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPartitionNamesRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s := openStore(t, dir, logstore.Options{})
	cases := []struct {
		topic     string
		partition int32
	}{
		{"", 0},
		{".", 0},
		{"..", 0},
		{"../x", 0},
		{"a/b", 0},
		{"/abs", 0},
		{`a\b`, 0},
		{"a b", 0},
		{"tópico", 0},
		{"nul\x00", 0},
		{"a:b", 0},
		{strings.Repeat("a", 250), 0},
		{"ok", -1},
	}
	for _, c := range cases {
		p, err := s.Partition(c.topic, c.partition)
		if !errors.Is(err, logstore.ErrInvalidName) {
			t.Errorf("Partition(%q, %d) = %v, %v; want ErrInvalidName", c.topic, c.partition, p, err)
			continue
		}
		if !strings.Contains(err.Error(), dir) {
			t.Errorf("error %q does not name the store %s", err, dir)
		}
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{".lock"}) {
		t.Errorf("store dir holds %q after refused names; want only .lock", got)
	}
	if got := listDir(t, root); !slices.Equal(got, []string{"store"}) {
		t.Errorf("the store's parent holds %q; want only store", got)
	}
}

func TestPartitionNamesAccepted(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	long := strings.Repeat("x", 249)
	ids := []logstore.PartitionID{
		{Topic: "events", Partition: 0},
		{Topic: "events", Partition: 7},
		{Topic: "a", Partition: 2147483647},
		{Topic: "...", Partition: 1},
		{Topic: "__consumer_offsets", Partition: 49},
		{Topic: "my.topic_name-2", Partition: 3}, // a dash in the topic
		{Topic: long, Partition: 0},
	}
	for _, id := range ids {
		p := openPartition(t, s, id.Topic, id.Partition)
		if p.ID() != id {
			t.Errorf("ID() = %v, want %v", p.ID(), id)
		}
		fi, err := os.Stat(filepath.Join(dir, id.String()))
		if err != nil || !fi.IsDir() {
			t.Errorf("partition %v: directory %s: %v", id, id.String(), err)
		}
		if again := openPartition(t, s, id.Topic, id.Partition); again != p {
			t.Errorf("partition %v: second Partition call returned another *Partition", id)
		}
	}
	if got := filepath.Join(dir, "my.topic_name-2-3"); !slices.Contains(listDir(t, dir), filepath.Base(got)) {
		t.Errorf("no directory %s", got)
	}

	// Things that are not partition directories are not listed.
	for _, junk := range []string{"x-01", "x-+1", "x-1a", "x-", "x-delete", "x-0.abc-delete", "nodash", "a b-0"} {
		if err := os.Mkdir(filepath.Join(dir, junk), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file-0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ids)
	slices.SortFunc(want, func(a, b logstore.PartitionID) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	if !slices.Equal(got, want) {
		t.Errorf("Partitions() = %v\nwant %v", got, want)
	}
}

func TestPartitionConcurrentOpen(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	const n = 16
	got := make([]*logstore.Partition, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, err := s.Partition("t", int32(i%2))
			if err != nil {
				t.Error(err)
			}
			got[i] = p
		})
	}
	wg.Wait()
	for i := range n {
		if got[i] != got[i%2] {
			t.Errorf("call %d got a different *Partition than call %d", i, i%2)
		}
	}
	if got[0] == got[1] {
		t.Error("partitions 0 and 1 are the same *Partition")
	}
}

// TestOpenOptionsRefused: Open refuses options out of range, with an
// error that names the option.
func TestOpenOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		opts logstore.Options
		want string
	}{
		"zero interval":           {logstore.Options{Sync: logstore.SyncInterval(0)}, "sync interval 0s"},
		"negative interval":       {logstore.Options{Sync: logstore.SyncInterval(-time.Second)}, "sync interval -1s"},
		"small segment":           {logstore.Options{SegmentBytes: 60}, "Options.SegmentBytes 60: must be 0 (the default, 1073741824) or from 61 to 2147483647"},
		"huge segment":            {logstore.Options{SegmentBytes: 1 << 31}, "Options.SegmentBytes 2147483648:"},
		"negative segment":        {logstore.Options{SegmentBytes: -1}, "Options.SegmentBytes -1:"},
		"negative segment time":   {logstore.Options{SegmentTime: -time.Second}, "Options.SegmentTime -1s: must be 0 (the default, 168h0m0s) or more"},
		"small index":             {logstore.Options{SegmentIndexBytes: 23}, "Options.SegmentIndexBytes 23: must be 0 (the default, 10485760) or at least 24"},
		"negative index interval": {logstore.Options{IndexIntervalBytes: -1}, "Options.IndexIntervalBytes -1: must be 0 (the default, 4096) or more"},
		"small max message":       {logstore.Options{MaxMessageBytes: 60}, "Options.MaxMessageBytes 60: must be 0 (the default, 1048588) or at least 61"},
		"negative records bound":  {logstore.Options{MaxRecordsBytes: -1}, "Options.MaxRecordsBytes -1:"},
	} {
		s, err := logstore.Open(dir, tc.opts)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant it to contain %q", name, err, tc.want)
		}
	}
}

// TestOpenOptionsAtTheirBounds: the smallest and largest values in range
// open a store whose partitions work.
func TestOpenOptionsAtTheirBounds(t *testing.T) {
	for name, opts := range map[string]logstore.Options{
		"smallest": {SegmentBytes: 61, SegmentTime: time.Millisecond, SegmentIndexBytes: 24, IndexIntervalBytes: 1, MaxMessageBytes: 61, RetentionBytes: -1, RetentionTime: -1},
		"largest":  {SegmentBytes: 1<<31 - 1, SegmentIndexBytes: 1 << 20, MaxMessageBytes: 1 << 30, RetentionBytes: 1 << 40, RetentionTime: 1000 * time.Hour},
	} {
		s := openStore(t, t.TempDir(), opts)
		openPartition(t, s, "events", 0)
		if err := s.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}
}

func TestStoreInUse(t *testing.T) {
	dir := t.TempDir()
	first, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	second, err := logstore.Open(dir, logstore.Options{LockTimeout: 200 * time.Millisecond})
	waited := time.Since(start)
	if !errors.Is(err, logstore.ErrStoreInUse) {
		second.Close()
		t.Fatalf("second Open = %v; want ErrStoreInUse", err)
	}
	if waited < 200*time.Millisecond {
		t.Errorf("second Open gave up after %s; LockTimeout is 200ms", waited)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the store %s", err, dir)
	}
	t.Logf("refused after %s: %v", waited.Round(time.Millisecond), err)

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := logstore.Open(dir, logstore.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenWaitsForLock(t *testing.T) {
	dir := t.TempDir()
	first, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		first.Close()
	}()
	start := time.Now()
	second, err := logstore.Open(dir, logstore.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open while the first closes: %v", err)
	}
	t.Logf("got the lock after %s", time.Since(start).Round(time.Millisecond))
	second.Close()
}

// TestOpenContextStopsWaitingForLock: while another Store holds the
// lock, OpenContext gives up when its context ends, with the context's
// cause, long before its lock timeout.
func TestOpenContextStopsWaitingForLock(t *testing.T) {
	dir := t.TempDir()
	first, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	stop := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(stop) })
	second, err := logstore.OpenContext(ctx, dir, logstore.Options{LockTimeout: time.Hour})
	if !errors.Is(err, stop) || errors.Is(err, logstore.ErrStoreInUse) {
		if second != nil {
			second.Close()
		}
		t.Fatalf("OpenContext: %v; want the context's cause", err)
	}
}

// lockHolderEnv makes the test binary, run as a child, hold a store's
// lock until its stdin closes.
const lockHolderEnv = "LOGSTORE_TEST_HOLD_LOCK"

func TestStoreInUseByAnotherProcess(t *testing.T) {
	if dir := os.Getenv(lockHolderEnv); dir != "" {
		holdLock(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreInUseByAnotherProcess$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v; want locked", line, err)
	}

	s, err := logstore.Open(dir, logstore.Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, logstore.ErrStoreInUse) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open while another process holds the lock = %v; want ErrStoreInUse", err)
	}

	stdin.Close()
	go io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err = logstore.Open(dir, logstore.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the other process closed: %v", err)
	}
	s.Close()
}

// holdLock is the child of TestStoreInUseByAnotherProcess.
func holdLock(dir string) {
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
}

func TestClosedStore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "events", 0)
	if _, err := p.Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Partition("events", 0); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("Partition after Close = %v; want ErrClosed", err)
	}
	if _, err := p.Append(batchOf("b")); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("Append after Store.Close = %v; want ErrClosed", err)
	}
	if _, err := p.Read(0, 1<<10); !errors.Is(err, logstore.ErrClosed) {
		t.Errorf("Read after Store.Close = %v; want ErrClosed", err)
	}
}

// TestCloseWhileOpening closes the store while partitions are being
// opened and appended to: every call either works before the close or
// fails with ErrClosed, and the lock is released.
func TestCloseWhileOpening(t *testing.T) {
	dir := t.TempDir()
	s, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				p, err := s.Partition(fmt.Sprintf("t%d", j%4), int32(i%3))
				if errors.Is(err, logstore.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Partition: %v", err)
					return
				}
				if _, err := p.Append(batchOf("v")); err != nil && !errors.Is(err, logstore.ErrClosed) {
					t.Errorf("Append: %v", err)
				}
			}
		})
	}
	time.Sleep(2 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	wg.Wait()
	s2, err := logstore.Open(dir, logstore.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	defer s2.Close()
	ids, err := s2.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		p := openPartition(t, s2, id.Topic, id.Partition)
		if !p.Recovery().Clean {
			t.Errorf("partition %v was not closed cleanly: %+v", id, p.Recovery())
		}
	}
}

// A store directory that is a dangling symbolic link is named as such,
// not as "mkdir: file exists"; so is a dangling link among its parents.
func TestOpenDanglingSymlink(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "data")
	if err := os.Symlink(filepath.Join(root, "gone"), link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, dir := range []string{link, filepath.Join(link, "store")} {
		s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) through a dangling link succeeded", dir)
		}
		want := link + " is a symbolic link to " + filepath.Join(root, "gone") + ", which does not exist"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v\nwant it to say %q", dir, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// A refused name is named in the error: topic and partition.
func TestPartitionRefusalNamesThePartition(t *testing.T) {
	s, err := logstore.Open(t.TempDir(), logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		topic     string
		partition int32
	}{{"events", -1}, {"a/b", 3}, {"", 0}} {
		_, err := s.Partition(c.topic, c.partition)
		want := fmt.Sprintf("open partition (topic %q, partition %d) in store", c.topic, c.partition)
		if !errors.Is(err, logstore.ErrInvalidName) || !strings.Contains(err.Error(), want) {
			t.Errorf("Partition(%q, %d): %v; want ErrInvalidName and %q", c.topic, c.partition, err, want)
		}
	}
}

// TestStoreDirThroughFS creates a store's directory, and its missing
// parents, through the store's filesystem: after a power loss that keeps
// only what was synced, the directory is still there, and Check, reading
// through the same filesystem, finds the partition and its batch.
func TestStoreDirThroughFS(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	// The lock file and bbolt's snapshot db are on the real OS: give them
	// their directories there. crashfs has none of them yet.
	if err := os.MkdirAll(filepath.Join(dir, "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsys := crashfs.New(root)
	s := openStore(t, dir, logstore.Options{}.WithFS(fsys))
	p := openPartition(t, s, "t", 0)
	if _, err := p.Append(batchOf("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	img := fsys.Crash(crashfs.DropUnsynced, rand.New(rand.NewPCG(1, 2)))
	for _, d := range []string{filepath.Join(root, "a"), dir} {
		if fi, err := img.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("after the crash, Stat(%s) = %v, %v; want a directory", d, fi, err)
		}
	}
	var problems []logstore.Problem
	c := logstore.Checker{FS: img, Report: func(p logstore.Problem) { problems = append(problems, p) }}
	stats, err := c.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 1 || stats.Batches != 1 || stats.Problems != 0 {
		t.Fatalf("Check through the crashed image: %+v, %v; want 1 partition, 1 batch, no problems", stats, problems)
	}
}

// TestCheckMissingDirThroughFS: Check stats the store directory through
// its filesystem, so a directory only the real OS has is missing there.
func TestCheckMissingDirThroughFS(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := logstore.Checker{FS: crashfs.New(root)}
	if _, err := c.Check(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check(%s) through an empty crashfs: %v; want it missing", dir, err)
	}
}
