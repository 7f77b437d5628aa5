package segment_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// fuzzSeedMax bounds the seed files taken: larger ones slow every
// fuzzing iteration down.
const fuzzSeedMax = 64 << 10

// FuzzRecoverSegment writes the input as the only segment of a partition
// left by a crash (no checkpoint, so Open scans it batch by batch) and
// opens it. Open must not panic; it may refuse the file only for what it
// does not read (legacy message sets), never for damage, which it cuts.
// What it keeps is a prefix of the input of whole, valid batches with
// increasing offsets; a clean reopen changes nothing; and scanning the
// kept prefix afresh keeps all of it and finds the same end. Seeded from
// the golden segments of testdata/segments and of the shared test data;
// inputs it finds are kept in testdata/fuzz/FuzzRecoverSegment.
func FuzzRecoverSegment(f *testing.F) {
	var seeds []string
	seeds = append(seeds, globLogs(filepath.Join("..", "testdata", "segments"))...)
	if shared, ok := testutil.SharedDirIfPresent(); ok {
		seeds = append(seeds, globLogs(filepath.Join(shared, "testdata"))...)
	}
	for _, name := range seeds {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if len(data) > 100 {
			f.Add(data[:len(data)-37]) // a torn tail
		}
	}
	var two []byte
	for i := range 3 {
		two = append(two, batch(f, 1+i, 20, 1700000000000+int64(i))...)
	}
	f.Add(two)
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		kept, end, ok := recoverInput(t, data)
		if !ok {
			return
		}
		if len(kept) > len(data) || !bytes.Equal(kept, data[:len(kept)]) {
			t.Fatalf("kept %d bytes of %d that are not a prefix of the input", len(kept), len(data))
		}
		checkBatches(t, kept, end)
		// The kept prefix, scanned afresh: all of it stays, same end.
		again, end2, ok := recoverInput(t, kept)
		if !ok || !bytes.Equal(again, kept) || end2 != end {
			t.Fatalf("rescanning the %d kept bytes kept %d (ok %t), end %d, first scan's end %d", len(kept), len(again), ok, end2, end)
		}
	})
}

// globLogs returns the .log files under dir no larger than fuzzSeedMax.
func globLogs(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() <= fuzzSeedMax {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// recoverInput opens a partition directory on a crashfs.FS whose only
// file is data as segment 0, and returns the segment's bytes after
// recovery and the log end. ok is false when Open refused the file for a
// format it does not read. It also checks that a clean reopen keeps
// everything as it is.
func recoverInput(t *testing.T, data []byte) (kept []byte, end int64, ok bool) {
	t.Helper()
	fsys := crashfs.New("/fuzz")
	dir := "/fuzz/p-0"
	name := filepath.Join(dir, "00000000000000000000.log")
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(name, data); err != nil {
		t.Fatal(err)
	}
	cfg := segment.Config{FS: fsys}
	l, rep, err := segment.Open(dir, cfg)
	if err != nil {
		if errors.Is(err, segment.ErrCorrupt) {
			t.Fatalf("open refused damage instead of cutting it: %v", err)
		}
		return nil, 0, false
	}
	end = l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if kept, err = fsys.ReadFile(name); err != nil {
		t.Fatal(err)
	}
	if rep.TruncatedBytes != int64(len(data)-len(kept)) {
		t.Fatalf("report says %d bytes cut, %d were", rep.TruncatedBytes, len(data)-len(kept))
	}
	l, rep, err = segment.Open(dir, cfg)
	if err != nil {
		t.Fatalf("clean reopen: %v", err)
	}
	defer l.Close()
	after, _ := fsys.ReadFile(name)
	if !rep.Clean || rep.TruncatedBytes != 0 || l.EndOffset() != end || !bytes.Equal(after, kept) {
		t.Fatalf("clean reopen: clean %t, %d cut, end %d (was %d), bytes kept %t", rep.Clean, rep.TruncatedBytes, l.EndOffset(), end, bytes.Equal(after, kept))
	}
	return kept, end, true
}

// checkBatches checks that kept is whole, valid batches with increasing
// offsets ending below end.
func checkBatches(t *testing.T, kept []byte, end int64) {
	t.Helper()
	next := int64(0)
	for pos := 0; pos < len(kept); {
		b, err := recordbatch.Parse(kept[pos:], 0)
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			t.Fatalf("kept batch at byte %d: %v", pos, err)
		}
		if b.BaseOffset() < next {
			t.Fatalf("kept batch at byte %d starts at offset %d, below %d", pos, b.BaseOffset(), next)
		}
		next = b.LastOffset() + 1
		pos += b.Size()
	}
	if len(kept) > 0 && next != end {
		t.Fatalf("kept batches end at %d, the log at %d", next, end)
	}
}
