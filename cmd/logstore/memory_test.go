package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/jsonl"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/segment"
)

// runAllocated runs the command line in this process and returns its
// output, exit status and the bytes it allocated on the heap.
func runAllocated(t *testing.T, args ...string) (stdout, stderr string, code int, alloc uint64) {
	t.Helper()
	var out, errb bytes.Buffer
	alloc = testutil.Allocated(func() { code = run(args, &out, &errb) })
	return out.String(), errb.String(), code, alloc
}

// emptyRecordsLine is a line of --input of about size bytes whose
// records are all {}: each takes 7 to 9 bytes in a batch for its 3 in
// the line, the most a line can claim for what it holds.
func emptyRecordsLine(size int) string {
	const head, tail = `{"records":[`, `{}]}`
	n := (size - len(head) - len(tail)) / 3
	return head + strings.Repeat("{},", n) + tail
}

// TestAppendHugeLineMemory: a 16 MiB line of empty records, whose batch
// would be 37 MiB, is refused as too large as soon as the batch passes
// the store's limit, allocating a small multiple of the line (it took
// 1.4 GB when every record was decoded first). append's help promises at
// most about 3 times the longest line.
func TestAppendHugeLineMemory(t *testing.T) {
	dir := t.TempDir()
	line := emptyRecordsLine(jsonl.MaxLineBytes)
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, []byte(line+"\n"+`{"records":[{"value":"ok"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code, alloc := runAllocated(t, "append", "--dir", dir, "--input", input)
	t.Logf("a %d-byte line of {} records: %d bytes allocated (%.1fx the line)", len(line), alloc, float64(alloc)/float64(len(line)))
	// A record takes 9 bytes here (its offset delta 3), so the 116,500th
	// or so passes the limit.
	want := regexp.MustCompile(fmt.Sprintf(`^INVALID line 1: batch too large: by record 11\d{4} it passes the store's limit of %d bytes \(give fewer records per line\)\nOK base=0 last=0\n$`, segment.DefaultMaxBatchBytes))
	if !want.MatchString(out) || code != exitRefused {
		t.Errorf("exit %d, output\n%s\nwant exit %d, output matching %s", code, out, exitRefused, want)
	}
	if limit := uint64(3 * len(line)); alloc > limit {
		t.Errorf("allocated %d bytes, want at most 3 times the line (%d)", alloc, limit)
	}
}

// TestAppendHugeCompressedLineMemory: such a line with compression is
// built whole (records 2.3 times the line, under what a reader inflates),
// then compressed, and the store refuses it (compressed, it is still
// above its limit). That is the
// most a line of --input costs: about 10 times the line, and the
// compressor's own 35 MB or so (16 MiB: 198 MB; 4 MiB: 74 MB), as
// append's help says; it took 1.4 GB before.
func TestAppendHugeCompressedLineMemory(t *testing.T) {
	dir := t.TempDir()
	line := emptyRecordsLine(jsonl.MaxLineBytes / 4) // the ratio of a whole line's, in a quarter of the time
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code, alloc := runAllocated(t, "append", "--dir", dir, "--input", input, "--compression", "zstd")
	t.Logf("a %d-byte line of {} records, zstd: %d bytes allocated (%.1fx the line)", len(line), alloc, float64(alloc)/float64(len(line)))
	if code != exitRefused || !strings.HasPrefix(out, "INVALID line 1: batch size above the limit: size ") {
		t.Errorf("exit %d, output %q, want INVALID for the batch's compressed size", code, out)
	}
	if limit := uint64(11*len(line) + 40<<20); alloc > limit {
		t.Errorf("allocated %d bytes, want at most 11 times the line and 40 MiB for the compressor (%d)", alloc, limit)
	}
}

// paddedStore makes a store of two batches, closed cleanly, whose
// segment's index files are then made size bytes long (sparse: zero
// slots after the entries, as a preallocating writer leaves them), and
// returns the store directory.
func paddedStore(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"a", "b"} {
		if _, _, code := runCLIIn(t, "append", "--dir", dir, v); code != exitOK {
			t.Fatalf("append exited %d", code)
		}
	}
	for _, suf := range []string{".index", ".timeindex"} {
		if err := os.Truncate(filepath.Join(dir, "events-0", "00000000000000000000"+suf), size); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCLIIn(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestOpenSparseIndexMemory: a command that opens the store (read here;
// append, producers and perf open it the same way) reads no more of a
// 6 GiB sparse index than its segment justifies: it allocates a few
// megabytes, where it needed 12 GB.
func TestOpenSparseIndexMemory(t *testing.T) {
	dir := paddedStore(t, 6<<30)
	out, _, code, alloc := runAllocated(t, "read", "--dir", dir)
	t.Logf("read with two 6 GiB sparse indexes: %d bytes allocated", alloc)
	if code != exitOK || strings.Count(out, "\n") != 2 {
		t.Errorf("exit %d, output %q", code, out)
	}
	if alloc > 100<<20 {
		t.Errorf("allocated %d bytes, want under 100 MB", alloc)
	}
}

// TestCheckPaddedIndexMemory: check streams an index, however long: a
// 48 MiB zero-padded one costs no more than a small one.
func TestCheckPaddedIndexMemory(t *testing.T) {
	dir := paddedStore(t, 48<<20) // a multiple of both entry sizes
	out, _, code, alloc := runAllocated(t, "check", "--dir", dir)
	t.Logf("check with two 48 MiB padded indexes: %d bytes allocated", alloc)
	if code != exitOK || !strings.Contains(out, "zero slots") {
		t.Errorf("exit %d, output %q", code, out)
	}
	if alloc > 8<<20 {
		t.Errorf("allocated %d bytes, want under 8 MiB", alloc)
	}
}
