package segment_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// batch builds a batch of n records of valueSize bytes, with record
// timestamps from ts, ready to append (its offsets are assigned then).
func batch(t testing.TB, n, valueSize int, ts int64) recordbatch.Batch {
	t.Helper()
	b := recordbatch.NewBuilder(0)
	for i := range n {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		if err := b.Append(ts+int64(i), fmt.Appendf(nil, "k%d", i), v, nil); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := recordbatch.Parse(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// open opens the log in dir and fails the test on error.
func open(t testing.TB, dir string, cfg segment.Config) (*segment.Log, segment.RecoveryReport) {
	t.Helper()
	l, rep, err := segment.Open(dir, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return l, rep
}

// readAll reads every batch of the log from its start and returns them.
func readAll(t testing.TB, l *segment.Log) []recordbatch.Batch {
	t.Helper()
	var out []recordbatch.Batch
	for off := l.StartOffset(); off < l.EndOffset(); {
		data, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(data) == 0 {
			t.Fatalf("read at %d (end %d): nothing", off, l.EndOffset())
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			if err := b.Validate(); err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			out = append(out, b)
			off = b.LastOffset() + 1
			data = data[b.Size():]
		}
	}
	return out
}

// copyShared copies files of a shared fixture directory into a new
// temporary directory named like a partition, and returns it.
func copyShared(t testing.TB, fixture string, files ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "foo-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(testutil.SharedFile(t, fixture+"/"+f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fixedClock returns a clock that starts at t0 and that the test moves.
type fixedClock struct{ now time.Time }

func (c *fixedClock) Now() time.Time { return c.now }
