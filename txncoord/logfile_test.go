package txncoord_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/txncoord"
)

// newLoggedEnv is newEnv with the file's commits recorded and the log
// kept; cfg changes the config before the first Open.
func newLoggedEnv(t *testing.T, cfg func(*txncoord.Config)) (*env, *commitLog, *testutil.LockedBuffer) {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), ids: &fakeIDs{next: 1000}, markers: &fakeMarkers{},
		clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), events: &eventLog{}}
	commits := newCommitLog(t, e.dir)
	commits.ch = make(chan struct{}, 1<<16)
	logs := &testutil.LockedBuffer{}
	e.cfg = txncoord.Config{CheckInterval: 24 * time.Hour, Now: e.clock.Now, Events: e.events.add, OnCommit: commits.onCommit,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if cfg != nil {
		cfg(&e.cfg)
	}
	e.open()
	return e, commits, logs
}

// logWorkload runs transactions of three ids that leave each state on
// disk at some commit.
func logWorkload(e *env, rounds int) {
	pa, ea := e.init("a")
	pb, eb := e.init("b")
	for i := range rounds {
		e.add("a", pa, ea, tpA0, tpA1)
		e.add("b", pb, eb, tpB0)
		e.end("a", pa, ea, i%2 == 0)
		e.end("b", pb, eb, i%3 == 0)
		if i%4 == 3 {
			pb, eb = e.init("b")
		}
	}
	pc, ec := e.init("c")
	e.add("c", pc, ec, tpA1) // left ongoing
}

// readDir is Read of dir, failing the test on an error.
func readDir(t *testing.T, dir string) []txncoord.Transaction {
	t.Helper()
	txns, err := txncoord.Read(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return txns
}

// readBytes is Read of a directory holding data as transactions.db.
func readBytes(t *testing.T, data []byte) []txncoord.Transaction {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, txncoord.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return readDir(t, dir)
}

// openDir opens a coordinator over dir with fake markers and a log.
func openDir(t *testing.T, dir string) (*txncoord.Coordinator, *testutil.LockedBuffer, error) {
	logs := &testutil.LockedBuffer{}
	c, err := txncoord.Open(dir, &fakeIDs{next: 1 << 20}, &fakeMarkers{}, txncoord.Config{CheckInterval: 24 * time.Hour,
		Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return c, logs, err
}

// wantCompacted: dir's transactions.db is a record file with no tail and
// no leftover tmp file next to it.
func wantCompacted(t *testing.T, dir string) txncoord.LogState {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := txncoord.DecodeLog(data)
	if err != nil || st.Tail != "" || st.End != int64(len(data)) {
		t.Fatalf("after Open: %v, tail %q, end %d of %d", err, st.Tail, st.End, len(data))
	}
	if _, err := os.Stat(filepath.Join(dir, txncoord.TmpName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a tmp file left after Open: %v", err)
	}
	return st
}

// TestOneFramePerCommit: a commit appends one frame to the file, and
// Open writes the file anew: the live records, the epoch.
func TestOneFramePerCommit(t *testing.T) {
	e, commits, _ := newLoggedEnv(t, nil)
	logWorkload(e, 2)
	e.c.Close()
	st := wantCompacted(t, e.dir)
	if st.Epoch != 1 || len(st.Records) != 3 {
		t.Fatalf("epoch %d, %d records; want 1, 3", st.Epoch, len(st.Records))
	}
	commits.mu.Lock()
	files := slices.Clone(commits.files)
	commits.mu.Unlock()
	for k := 1; k < len(files); k++ {
		if !bytes.HasPrefix(files[k], files[k-1]) {
			t.Fatalf("commit %d does not append to the file of commit %d", k, k-1)
		}
		if n := len(files[k-1]); n+8+int(binary.BigEndian.Uint32(files[k][n:])) != len(files[k]) {
			t.Fatalf("commit %d appended more than one frame", k)
		}
	}
	e.open()
	data, err := os.ReadFile(filepath.Join(e.dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st2, err := txncoord.DecodeLog(data)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Epoch != 2 || !maps.EqualFunc(st.Records, st2.Records, bytes.Equal) || !bytes.Equal(data, txncoord.LogImage(2, st.Records)) {
		t.Fatalf("Open did not write the file anew with the live records at epoch 2: epoch %d, %d records", st2.Epoch, len(st2.Records))
	}
}

// TestTornTailEveryByte: a crash during a commit's write leaves any
// prefix of the appended frames after the last synced commit. Cut at
// every byte of every commit's frames, the file reads as the commit
// before; Open drops the tail, logs the file and the offset, and writes
// the file anew without it.
func TestTornTailEveryByte(t *testing.T) {
	e, commits, _ := newLoggedEnv(t, nil)
	logWorkload(e, 2)
	e.c.Close()
	commits.mu.Lock()
	files := slices.Clone(commits.files)
	commits.mu.Unlock()
	stride := 1
	if testing.Short() {
		stride = 7
	}
	cuts := 0
	for k := 1; k < len(files); k++ {
		prev, cur := files[k-1], files[k]
		if !bytes.HasPrefix(cur, prev) || len(cur) == len(prev) {
			t.Fatalf("commit %d does not append to the file", k)
		}
		if n := int(binary.BigEndian.Uint32(cur[len(prev):])); len(prev)+8+n != len(cur) {
			t.Fatalf("commit %d appended more than one frame", k)
		}
		want := readBytes(t, prev)
		for cut := len(prev) + 1 + k%stride; cut < len(cur); cut += stride {
			dir := t.TempDir()
			path := filepath.Join(dir, txncoord.FileName)
			if err := os.WriteFile(path, cur[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			if got := readDir(t, dir); !slices.EqualFunc(got, want, equalTxn) {
				t.Fatalf("commit %d cut at %d: read %+v, want %+v", k, cut, got, want)
			}
			c, logs, err := openDir(t, dir)
			if err != nil {
				t.Fatalf("commit %d cut at %d: open: %v", k, cut, err)
			}
			c.Close()
			if l := logs.String(); !strings.Contains(l, "torn tail") || !strings.Contains(l, path) || !strings.Contains(l, fmt.Sprintf("offset=%d", len(prev))) {
				t.Fatalf("commit %d cut at %d: the log does not name the file and offset %d:\n%s", k, cut, len(prev), l)
			}
			wantCompacted(t, dir)
			cuts++
		}
	}
	t.Logf("%d commits, %d cuts", len(files), cuts)
}

// TestDamagedTailAndMiddle: a tail that fails its CRC, is zeros, or
// claims a length past the end is dropped as torn; damage before a good
// frame, a frame whose CRC is right but whose payload does not decode,
// and a bad header are ErrDamaged with the file and offset.
func TestDamagedTailAndMiddle(t *testing.T) {
	e, _, _ := newLoggedEnv(t, nil)
	logWorkload(e, 1)
	e.c.Close()
	good, err := os.ReadFile(filepath.Join(e.dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// The frames' offsets.
	var frames []int
	for off := 16; off < len(good); off += 8 + int(binary.BigEndian.Uint32(good[off:])) {
		frames = append(frames, off)
	}
	last := frames[len(frames)-1]
	flip := func(b []byte, at int) []byte { b = bytes.Clone(b); b[at] ^= 0x40; return b }
	crc := func(p []byte) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(len(p))), crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)))
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		tornAt  int // > 0: dropped from this offset; 0: damaged
		damaged int // the offset a *DamagedError names
	}{
		{"last frame's payload flipped", flip(good, len(good)-1), last, 0},
		{"last frame's CRC flipped", flip(good, last+5), last, 0},
		{"zeros after the last frame", append(bytes.Clone(good), make([]byte, 100)...), len(good), 0},
		{"length past the end", append(bytes.Clone(good), 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5), len(good), 0},
		{"header cut after the last frame", append(bytes.Clone(good), 0, 0, 0), len(good), 0},
		{"a middle frame flipped", flip(good, frames[1]+9), 0, frames[1]},
		{"a good CRC around an unknown record type", append(bytes.Clone(good), append(crc([]byte{9, 1}), 9, 1)...), 0, len(good) + 8},
		{"a good CRC around a bad record", append(bytes.Clone(good), append(crc([]byte{2, 0, 1, 'x', 0, 0, 0, 1, 1}), 2, 0, 1, 'x', 0, 0, 0, 1, 1)...), 0, len(good) + 8 + 9},
		{"format version 3", func() []byte { b := bytes.Clone(good); b[11] = 3; return b }(), 0, 8},
		{"header CRC flipped", flip(good, 13), 0, 12},
		{"header cut", good[:10], 0, 10},
		{"no epoch record", good[:16], 0, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, txncoord.FileName)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			c, logs, err := openDir(t, dir)
			if tc.tornAt > 0 {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				c.Close()
				if l := logs.String(); !strings.Contains(l, path) || !strings.Contains(l, fmt.Sprintf("offset=%d", tc.tornAt)) {
					t.Fatalf("the log does not name the file and offset %d:\n%s", tc.tornAt, l)
				}
				wantCompacted(t, dir)
				return
			}
			var de *txncoord.DamagedError
			if !errors.Is(err, txncoord.ErrDamaged) || !errors.As(err, &de) || de.Offset != tc.damaged || !strings.Contains(err.Error(), path) {
				t.Fatalf("open: %v, want a *DamagedError at offset %d naming the file", err, tc.damaged)
			}
			if _, err := txncoord.Read(dir, time.Second); !errors.Is(err, txncoord.ErrDamaged) {
				t.Fatalf("read: %v, want ErrDamaged", err)
			}
			// Nothing was changed.
			if data, _ := os.ReadFile(path); !bytes.Equal(data, tc.data) {
				t.Fatal("a refused file was changed")
			}
		})
	}
}

// v1Want is what testdata/transactions-v1.db holds: written by the
// previous version (bbolt) at coordinator epoch 1, one id in each
// state, "prepared" with markers that failed.
var v1Want = []struct {
	id, state string
	pid       int64
	parts     []txncoord.TopicPartition
}{
	{"aborted", "CompleteAbort", 1003, nil},
	{"committed", "CompleteCommit", 1002, nil},
	{"empty", "Empty", 1000, nil},
	{"ongoing", "Ongoing", 1001, []txncoord.TopicPartition{tpA0, tpA1}},
	{"prepared", "PrepareCommit", 1004, []txncoord.TopicPartition{tpA0, tpB0}},
}

func wantV1(t *testing.T, got []txncoord.Transaction, finished bool) {
	t.Helper()
	if len(got) != len(v1Want) {
		t.Fatalf("%d ids, want %d: %+v", len(got), len(v1Want), got)
	}
	for i, w := range v1Want {
		g := got[i]
		state, parts := w.state, w.parts
		if finished && w.id == "prepared" {
			state, parts = "CompleteCommit", nil
		}
		if g.TransactionalID != w.id || g.State != state || g.ProducerID != w.pid || g.Epoch != 0 || g.Timeout != testTimeout || !slices.Equal(g.Partitions, parts) {
			t.Fatalf("id %d: %+v, want %s %s producer %d partitions %v", i, g, w.id, state, w.pid, parts)
		}
	}
}

// copyV1 puts the previous version's file into dir.
func copyV1(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "transactions-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, txncoord.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConvertFromBolt: a transactions.db the previous version wrote
// (bbolt) is read as it is by Read, and converted by Open: every id
// kept, the coordinator epoch carried on, the decided transaction
// finished, the file now a record file (the bbolt one gone with the
// rename).
func TestConvertFromBolt(t *testing.T) {
	dir := t.TempDir()
	copyV1(t, dir)
	wantV1(t, readDir(t, dir), false)
	markers := &fakeMarkers{}
	c, err := txncoord.Open(dir, &fakeIDs{next: 5000}, markers, txncoord.Config{CheckInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if ce := c.CoordinatorEpoch(); ce != 2 {
		t.Fatalf("coordinator epoch %d after the conversion, want 2", ce)
	}
	wantMarkers(t, markers.take(), marker{tpA0, 1004, 0, true, 2}, marker{tpB0, 1004, 0, true, 2})
	wantV1(t, c.List(), true)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	st := wantCompacted(t, dir)
	if st.Epoch != 2 || len(st.Records) != len(v1Want) {
		t.Fatalf("converted file: epoch %d, %d records", st.Epoch, len(st.Records))
	}
	wantV1(t, readDir(t, dir), true)
	c, err = txncoord.Open(dir, &fakeIDs{next: 5000}, markers, txncoord.Config{CheckInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ce := c.CoordinatorEpoch(); ce != 3 {
		t.Fatalf("coordinator epoch %d at the next Open, want 3", ce)
	}
	wantMarkers(t, markers.take())
	wantV1(t, c.List(), true)
}

// errCrash stops a write at a step, as a crash would.
var errCrash = errors.New("crash")

// capture is the directory as a crash at a step could leave it: each
// file's bytes (absent: nil).
type capture struct {
	step  string
	db    []byte
	tmp   []byte
	label string
}

func captureDir(t *testing.T, dir, step string) []capture {
	db, err := os.ReadFile(filepath.Join(dir, txncoord.FileName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
	tmp, err := os.ReadFile(filepath.Join(dir, txncoord.TmpName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
	out := []capture{{step: step, db: db, tmp: tmp, label: "as written"}}
	if step == "tmp written" && len(tmp) > 0 {
		// Not synced: a crash may keep any prefix of it.
		out = append(out, capture{step, db, tmp[:len(tmp)/2], "tmp half"}, capture{step, db, []byte{}, "tmp empty"})
	}
	return out
}

func (c capture) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string][]byte{txncoord.FileName: c.db, txncoord.TmpName: c.tmp} {
		if data != nil {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

var rewriteSteps = []string{"tmp written", "tmp synced", "renamed", "dir synced"}

// TestConversionCrash: a crash at each step of the conversion (the new
// file written, synced, renamed over the bbolt file, the directory
// synced) leaves a directory that Open converts or opens as if nothing
// had happened: every id kept, the decision finished, no tmp file left.
func TestConversionCrash(t *testing.T) {
	for _, step := range rewriteSteps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			copyV1(t, dir)
			var caps []capture
			restore := txncoord.SetStepHook(func(s string) error {
				if s != step {
					return nil
				}
				caps = captureDir(t, dir, s)
				return errCrash
			})
			_, err := txncoord.Open(dir, &fakeIDs{next: 5000}, &fakeMarkers{}, txncoord.Config{CheckInterval: 24 * time.Hour})
			restore()
			if !errors.Is(err, errCrash) {
				t.Fatalf("open: %v, want the crash", err)
			}
			for _, cp := range caps {
				d := cp.write(t)
				wantV1(t, readDir(t, d), false)
				c, _, err := openDir(t, d)
				if err != nil {
					t.Fatalf("%s: open: %v", cp.label, err)
				}
				wantV1(t, c.List(), true)
				c.Close()
				wantCompacted(t, d)
			}
		})
	}
}

// TestCompaction: past Config.CompactBytes (and twice its live size)
// the file is compacted after a commit: it stays bounded, holds what
// the coordinator holds, and a crash at each step of a compaction
// leaves a directory Open reads as it was before it.
func TestCompaction(t *testing.T) {
	var caps []capture
	var dir string
	e, commits, _ := newLoggedEnv(t, func(cfg *txncoord.Config) { cfg.CompactBytes = 512 })
	dir = e.dir
	compactions := map[string]int{}
	defer txncoord.SetStepHook(func(s string) error {
		if s != "appended" {
			compactions[s]++
			caps = append(caps, captureDir(t, dir, s)...)
		}
		return nil
	})()
	logWorkload(e, 30)
	if compactions["dir synced"] < 3 {
		t.Fatalf("%d compactions, want several", compactions["dir synced"])
	}
	fi, err := os.Stat(filepath.Join(dir, txncoord.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2048 {
		t.Fatalf("file of %d bytes after compactions at 512", fi.Size())
	}
	list := e.c.List()
	e.c.Close()
	if got := readDir(t, dir); !slices.EqualFunc(got, list, equalTxn) {
		t.Fatalf("file %+v, coordinator %+v", got, list)
	}
	_ = commits
	// Every capture reads as the state it compacted: the tmp file,
	// whole or not, is ignored until it is renamed, and once renamed it
	// holds the same records.
	var want []txncoord.Transaction
	for _, cp := range caps {
		d := cp.write(t)
		got := readDir(t, d)
		if cp.step == "tmp written" && cp.label == "as written" {
			want = got
		}
		if !slices.EqualFunc(got, want, equalTxn) {
			t.Fatalf("crash at %s (%s): read %+v, want %+v", cp.step, cp.label, got, want)
		}
		c, _, err := openDir(t, d)
		if err != nil {
			t.Fatalf("crash at %s (%s): open: %v", cp.step, cp.label, err)
		}
		c.Close()
		wantCompacted(t, d)
	}
}

// TestCompactionFailureKeepsFile: a compaction that fails before its
// rename leaves the old file, which the coordinator keeps appending to.
func TestCompactionFailureKeepsFile(t *testing.T) {
	e, _, logs := newLoggedEnv(t, func(cfg *txncoord.Config) { cfg.CompactBytes = 512 })
	fails := 0
	defer txncoord.SetStepHook(func(s string) error {
		if s == "tmp synced" && fails < 2 {
			fails++
			return errors.New("disk full")
		}
		return nil
	})()
	logWorkload(e, 20)
	if fails != 2 || !strings.Contains(logs.String(), "disk full") {
		t.Fatalf("%d failed compactions; log:\n%s", fails, logs.String())
	}
	list := e.c.List()
	e.c.Close()
	if got := readDir(t, e.dir); !slices.EqualFunc(got, list, equalTxn) {
		t.Fatalf("file %+v, coordinator %+v", got, list)
	}
	if _, err := os.Stat(filepath.Join(e.dir, txncoord.TmpName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed compaction left its tmp file: %v", err)
	}
}

// TestCommitFailure: a commit whose append or sync fails is an error to
// its caller and leaves the state as it was, in memory and in the file
// (written anew from the state before it); the next commit works. If
// writing the file anew fails too, every later commit fails, and the
// file still holds the state before the failure.
func TestCommitFailure(t *testing.T) {
	e, _, _ := newLoggedEnv(t, func(cfg *txncoord.Config) { cfg.OnCommit = nil })
	pid, epoch := e.init("t")
	failAt := map[string]int{"appended": 1}
	defer txncoord.SetStepHook(func(s string) error {
		if failAt[s] > 0 {
			failAt[s]--
			return errors.New("I/O error")
		}
		return nil
	})()
	if err := e.c.AddPartitionsDurable("t", pid, epoch, []txncoord.TopicPartition{tpA0}); err == nil {
		t.Fatal("AddPartitionsDurable with a failing append succeeded")
	}
	e.wantState("t", "Empty")
	// The file was written anew without the failed commit's frame.
	e.reopen()
	e.wantState("t", "Empty")
	if pid, epoch = e.init("t"); epoch != 1 {
		t.Fatalf("epoch %d after two inits, want 1", epoch)
	}
	e.add("t", pid, epoch, tpA0)
	e.wantState("t", "Ongoing")

	failAt = map[string]int{"appended": 1, "tmp written": 1}
	if err := e.c.EndTxn("t", pid, epoch, true); err == nil {
		t.Fatal("EndTxn with a failing append succeeded")
	}
	e.wantState("t", "Ongoing")
	if err := e.c.EndTxn("t", pid, epoch, true); err == nil || !strings.Contains(err.Error(), "earlier failure") {
		t.Fatalf("EndTxn after the file was left unknown: %v", err)
	}
	// The failed commit's frame was written before its sync failed
	// (the hook fails after the write): like any write whose sync
	// failed, it may or may not be on disk. Here it is, so Open finds
	// the decision and finishes it; the client's retry of EndTxn is
	// then answered as a retry.
	e.reopen()
	e.wantState("t", "CompleteCommit")
	e.end("t", pid, epoch, true)
}

// TestReadWaitsAcrossCompaction: a Read waiting for the lock of the file
// a compaction then replaces does not report that file's (older) state:
// once it has the lock it finds the file is no longer transactions.db,
// and reads the one that is, after the coordinator closes it.
func TestReadWaitsAcrossCompaction(t *testing.T) {
	e, _, _ := newLoggedEnv(t, func(cfg *txncoord.Config) { cfg.CompactBytes = 512 })
	pid, epoch := e.init("t")
	type result struct {
		txns []txncoord.Transaction
		err  error
	}
	done := make(chan result, 1)
	go func() {
		txns, err := txncoord.Read(e.dir, time.Minute)
		done <- result{txns, err}
	}()
	// Let Read open the file and wait for its lock (if it has not by
	// then, the test passes without taking the path it is for).
	time.Sleep(50 * time.Millisecond)
	compacted := 0
	defer txncoord.SetStepHook(func(s string) error {
		if s == "dir synced" {
			compacted++
		}
		return nil
	})()
	for i := 0; compacted == 0 || i < 20; i++ {
		e.add("t", pid, epoch, tpA0)
		e.end("t", pid, epoch, i%2 == 0)
	}
	e.add("t", pid, epoch, tpB0) // the last state: Ongoing on b-0
	want := e.c.List()
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !slices.EqualFunc(r.txns, want, equalTxn) {
		t.Fatalf("read %+v, want the last state %+v", r.txns, want)
	}
}
