package logstore_test

// Fixtures for the corruption tests: a store on the real filesystem with
// several segments, left by a clean close or by a killed process, and
// helpers to damage its files.

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/crashtest"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// damageFixture is a store directory to damage.
type damageFixture struct {
	dir  string // the store
	pdir string // its one partition
	tl   crashtest.Timeline
	opts logstore.Options
}

const damageTopic = "damage"

// newDamageFixture writes 30 batches of 3 producers into small segments
// under SyncAlways, and either closes the store (clean) or copies its
// directory while it is open, as a killed process leaves it.
func newDamageFixture(t *testing.T, clean bool) *damageFixture {
	t.Helper()
	f := &damageFixture{dir: t.TempDir(), opts: crashtest.WithSegments(logstore.Options{ProducerExpiry: -1}, 1024, 0)}
	f.pdir = filepath.Join(f.dir, damageTopic+"-0")
	s := openStore(t, f.dir, f.opts)
	p := openPartition(t, s, damageTopic, 0)
	rng := rand.New(rand.NewPCG(11, 11))
	next := map[int64]int32{}
	for i := range 30 {
		pid := int64(300 + rng.IntN(3))
		n := 1 + rng.IntN(5)
		b := producerBatch(pid, 0, next[pid], n, crashtest.Timestamp+int64(i))
		f.tl = append(f.tl, crashtest.NewWritten(b, p.EndOffset()))
		if _, err := p.Append(b); err != nil {
			t.Fatal(err)
		}
		next[pid] += int32(n)
	}
	if !clean {
		// Settled first: a copy of a directory being written is no
		// crash image (the crash suite makes those).
		if err := p.Flushed(); err != nil {
			t.Fatal(err)
		}
		killed := t.TempDir()
		testutil.CopyDir(t, f.dir, killed)
		f.dir, f.pdir = killed, filepath.Join(killed, damageTopic+"-0")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.files(t, ".log")); n < 4 {
		t.Fatalf("fixture has %d segments; want several", n)
	}
	return f
}

// clone returns a copy of the fixture in a new directory.
func (f *damageFixture) clone(t *testing.T) *damageFixture {
	t.Helper()
	c := *f
	c.dir = t.TempDir()
	c.pdir = filepath.Join(c.dir, damageTopic+"-0")
	testutil.CopyDir(t, f.dir, c.dir)
	return &c
}

// segmentBase is the base offset in a segment file's name.
func segmentBase(t *testing.T, path string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// files returns the partition's files with suffix, sorted.
func (f *damageFixture) files(t *testing.T, suffix string) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, f.pdir) {
		if strings.HasSuffix(n, suffix) {
			out = append(out, filepath.Join(f.pdir, n))
		}
	}
	slices.Sort(out)
	return out
}

// open opens the damaged store and its partition; the store is closed at
// the end of the test.
func (f *damageFixture) open(t *testing.T) (*logstore.Partition, error) {
	t.Helper()
	opts := f.opts
	opts.LockTimeout = -1
	s, err := logstore.Open(f.dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Partition(damageTopic, 0)
}

// expectAll is the oracle's expectation when every batch written must be
// there.
func (f *damageFixture) expectAll() crashtest.Expect {
	return crashtest.Expect{Timeline: f.tl, Acked: len(f.tl), Durable: true}
}

func modifyFile(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// batchSpans returns the [start, end) byte ranges of the batches of a .log
// file.
func batchSpans(t *testing.T, path string) [][2]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans [][2]int
	for pos := 0; pos < len(data); {
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			t.Fatalf("%s at %d: %v", path, pos, err)
		}
		spans = append(spans, [2]int{pos, pos + b.Size()})
		pos += b.Size()
	}
	return spans
}

// baseAt returns the base offset of the batch at pos in a .log file.
func baseAt(t *testing.T, path string, pos int) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recordbatch.Batch(data[pos:]).BaseOffset()
}

// dbPath is the fixture's snapshot db.
func (f *damageFixture) dbPath() string { return filepath.Join(f.pdir, snapshot.FileName) }

// garbage is n bytes no batch header would accept as a length.
func garbage(n int) []byte { return bytes.Repeat([]byte{0xa5, 0x5a, 0xff, 0x00}, n/4+1)[:n] }
