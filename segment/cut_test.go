package segment_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/segment"
)

// tornImage returns a crashfs image of a log of n batches whose segment
// ends in tail, left by a crash (no clean mark), the path of its .log,
// and the length of the whole batches.
func tornImage(t *testing.T, n int, tail []byte) (img *crashfs.FS, dir, logName string, valid int) {
	t.Helper()
	f := crashfs.New(t.TempDir())
	dir = filepath.Join(f.Root(), "p-0")
	l, _ := open(t, dir, segment.Config{FS: f})
	for i := range n {
		if _, err := l.Append(batch(t, 1, 50, 1700000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	img = f.Crash(crashfs.KeepAll, nil) // the process died
	logName = filepath.Join(dir, "00000000000000000000.log")
	data, err := img.ReadFile(logName)
	if err != nil {
		t.Fatal(err)
	}
	if err := img.WriteFile(logName, append(data, tail...)); err != nil {
		t.Fatal(err)
	}
	return img, dir, logName, len(data)
}

// TestCutBytesKept: the bytes recovery cuts off a torn segment are in
// <segment>.log.cut-<position>, named in the report; a file of that name
// left by an interrupted earlier open (the same bytes, or a prefix) is
// written again, and one holding other bytes is kept, the new cut going
// to ".1".
func TestCutBytesKept(t *testing.T) {
	t.Parallel()
	tail := bytes.Repeat([]byte{0xab}, 5000) // not a batch: a torn write
	for _, tc := range []struct {
		name     string
		existing []byte // a cut file already there, nil for none
		want     string // the cut file's suffix after ".log"
	}{
		{"fresh", nil, ".cut-%d"},
		{"interrupted-prefix", tail[:1234], ".cut-%d"},
		{"interrupted-whole", tail, ".cut-%d"},
		{"earlier-cut", []byte("other bytes"), ".cut-%d.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img, dir, logName, valid := tornImage(t, 3, tail)
			cut := fmt.Sprintf(logName+tc.want, valid)
			if tc.existing != nil {
				if err := img.WriteFile(fmt.Sprintf("%s.cut-%d", logName, valid), tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			l, rep := open(t, dir, segment.Config{FS: img})
			defer l.Close()
			if rep.TruncatedBytes != int64(len(tail)) || !slices.Equal(rep.CutFiles, []string{cut}) {
				t.Fatalf("report cut %d bytes into %q, want %d into %q", rep.TruncatedBytes, rep.CutFiles, len(tail), cut)
			}
			if got, err := img.ReadFile(cut); err != nil || !bytes.Equal(got, tail) {
				t.Errorf("%s: %d bytes (%v), want the %d cut", cut, len(got), err, len(tail))
			}
			if tc.want != ".cut-%d" {
				if got, _ := img.ReadFile(fmt.Sprintf("%s.cut-%d", logName, valid)); !bytes.Equal(got, tc.existing) {
					t.Errorf("the earlier cut file changed: %q", got)
				}
			}
			if len(readAll(t, l)) != 3 {
				t.Error("batches lost")
			}
		})
	}
}

// TestCutKeptThroughCrashes: power lost after any file operation of the
// open that cuts a torn tail, in every crash mode, leaves the bytes in
// the log or in a synced cut file; the next open cuts again and ends with
// the whole tail in a cut file beside the same three batches.
func TestCutKeptThroughCrashes(t *testing.T) {
	t.Parallel()
	tail := bytes.Repeat([]byte{0xcd}, 3*4096+100)
	img, dir, logName, valid := tornImage(t, 3, tail)
	var crashes []*crashfs.FS
	rng := rand.New(rand.NewPCG(1, 2))
	img.SetHook(func(crashfs.Op) {
		for _, m := range crashfs.Modes {
			crashes = append(crashes, img.Crash(m, rng))
		}
	})
	l, _ := open(t, dir, segment.Config{FS: img})
	img.SetHook(nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(crashes) == 0 {
		t.Fatal("the open made no file operation")
	}
	for i, c := range crashes {
		data, err := c.ReadFile(logName)
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		l, rep, err := segment.Open(dir, segment.Config{FS: c})
		if err != nil {
			t.Fatalf("image %d (%s after op %d): open: %v", i, crashfs.Modes[i%len(crashfs.Modes)], i/len(crashfs.Modes)+1, err)
		}
		if n := len(readAll(t, l)); n != 3 {
			t.Errorf("image %d: %d batches, want 3", i, n)
		}
		l.Close()
		if len(data) == valid {
			continue // the first open's cut was durable: nothing to cut now
		}
		kept := false
		for _, name := range rep.CutFiles {
			got, _ := c.ReadFile(name)
			kept = kept || bytes.Equal(got, tail)
		}
		if !kept {
			t.Errorf("image %d (%s after op %d): log of %d bytes, cut into %q without the whole tail", i, crashfs.Modes[i%len(crashfs.Modes)], i/len(crashfs.Modes)+1, len(data), rep.CutFiles)
		}
	}
}

// TestCheckListsCutFiles: check names every cut file as a note (nothing
// is wrong, but the operator should look), and still finds the log clean.
func TestCheckListsCutFiles(t *testing.T) {
	t.Parallel()
	dir, _, _ := crashedLog(t, segment.Config{}, 3)
	logName := filepath.Join(dir, "00000000000000000000.log")
	modify(t, logName, func(b []byte) []byte { return append(b, "torn"...) })
	l, rep := open(t, dir, segment.Config{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rep.CutFiles) != 1 {
		t.Fatalf("cut files %q, want one", rep.CutFiles)
	}
	var problems []segment.Problem
	if _, err := segment.Verify(dir, nil, func(p segment.Problem) { problems = append(problems, p) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Kind != segment.ProblemNote || problems[0].File != rep.CutFiles[0] ||
		!strings.Contains(problems[0].Detail, "bytes a recovery cut off segment 00000000000000000000 at byte ") {
		t.Errorf("check found %v, want a note on %s", problems, rep.CutFiles[0])
	}
}
