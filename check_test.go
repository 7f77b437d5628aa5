package logstore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
	bolt "go.etcd.io/bbolt"
)

// chkOpts keeps producers whatever their timestamps and rolls often.
var chkOpts = logstore.Options{Sync: logstore.SyncNever, ProducerExpiry: -1, SegmentBytes: 700, IndexIntervalBytes: 1}

// chkRun checks dir and returns the findings and stats, failing the test
// on an error.
func chkRun(t *testing.T, dir string) ([]logstore.Problem, logstore.CheckStats) {
	t.Helper()
	var got []logstore.Problem
	stats, err := logstore.Check(dir, func(p logstore.Problem) { got = append(got, p) })
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return got, stats
}

func chkText(ps []logstore.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// chkNoProblems fails when anything but notes was found.
func chkNoProblems(t *testing.T, got []logstore.Problem, stats logstore.CheckStats) {
	t.Helper()
	for _, p := range got {
		if p.Kind != logstore.ProblemNote {
			t.Fatalf("problems found:\n%s", chkText(got))
		}
	}
	if stats.Problems != 0 || stats.Notes != len(got) {
		t.Fatalf("stats %+v, findings:\n%s", stats, chkText(got))
	}
}

func chkSameSums(t *testing.T, before, after map[string][32]byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("files before %d, after %d", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed", k)
		}
	}
}

// chkFill appends batches of a few producers (one of them transactional,
// its transaction left open) and of no producer to partition topic-0.
func chkFill(t *testing.T, s *logstore.Store, topic string, n int, ts int64) {
	t.Helper()
	p := openPartition(t, s, topic, 0)
	seqs := map[int64]int32{}
	for i := range n {
		var b []byte
		switch pid := int64(1 + i%4); pid {
		case 4:
			b = batchOf(fmt.Sprintf("plain-%d", i))
		case 3:
			bld := recordbatch.NewBuilder(0)
			bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence, bld.Transactional = pid, 0, seqs[pid], true
			if err := bld.Append(ts, nil, []byte("txn"), nil); err != nil {
				t.Fatal(err)
			}
			var err error
			if b, err = bld.AppendTo(nil); err != nil {
				t.Fatal(err)
			}
			seqs[pid]++
		default:
			b = producerBatch(pid, 0, seqs[pid], 1+i%3, ts)
			seqs[pid] += int32(1 + i%3)
		}
		if _, err := p.Append(b); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// chkStore builds a closed store of two partitions with several
// segments and snapshots each.
func chkStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir, chkOpts)
	chkFill(t, s, "alpha", 40, 1700000000000)
	chkFill(t, s, "beta", 25, 1700000000000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheckCleanStore(t *testing.T) {
	dir := chkStore(t)
	before := testutil.FileSums(t, dir)
	var last logstore.CheckProgress
	var got []logstore.Problem
	c := logstore.Checker{
		Report:   func(p logstore.Problem) { got = append(got, p) },
		Progress: func(p logstore.CheckProgress) { last = p },
	}
	stats, err := c.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	chkNoProblems(t, got, stats)
	if len(got) != 0 || stats.Partitions != 2 || stats.Segments < 6 || stats.Batches != 65 || stats.Snapshots < 6 || stats.IndexEntries == 0 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
	if last.Total == 0 || last.Done != last.Total || last.Total != stats.Bytes {
		t.Fatalf("last progress %+v, %d bytes", last, stats.Bytes)
	}
	chkSameSums(t, before, testutil.FileSums(t, dir))
}

// TestCheckRandomWorkload: whatever the store did (rolls, retries, new
// epochs, transactions, clean and unclean restarts), check finds nothing
// wrong in it: its snapshots equal the replay, its indexes the log.
func TestCheckRandomWorkload(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			dir := t.TempDir()
			s := openStore(t, dir, chkOpts)
			p := openPartition(t, s, "prop", 0)
			type prod struct {
				epoch int16
				next  int32
				last  []byte // the newest accepted batch, for retries
			}
			prods := map[int64]*prod{}
			for op := range 400 {
				pid := int64(1 + rng.IntN(5))
				pr := prods[pid]
				if pr == nil {
					pr = &prod{}
					prods[pid] = pr
				}
				switch r := rng.IntN(10); {
				case r < 6 || pr.last == nil:
					n := 1 + rng.IntN(3)
					bld := recordbatch.NewBuilder(0)
					bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = pid, pr.epoch, pr.next
					bld.Transactional = pid == 5
					for i := range n {
						if err := bld.Append(recent, nil, fmt.Appendf(nil, "v%d-%d", op, i), nil); err != nil {
							t.Fatal(err)
						}
					}
					b, err := bld.AppendTo(nil)
					if err != nil {
						t.Fatal(err)
					}
					if got, _ := outcome(p, b); got != "OK" {
						t.Fatalf("op %d: %s", op, got)
					}
					pr.last, pr.next = b, recordbatch.IncrementSequence(pr.next, int32(n))
				case r < 8:
					if got, _ := outcome(p, pr.last); got != "DUPLICATE" {
						t.Fatalf("op %d: retry: %s", op, got)
					}
				default:
					pr.epoch++
					pr.next, pr.last = 0, nil
				}
				if rng.IntN(50) == 0 {
					if rng.IntN(2) == 0 {
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						dir = killedCopy(t, s, p, dir)
						got, stats := chkRun(t, dir)
						chkNoProblems(t, got, stats)
					}
					s = openStore(t, dir, chkOpts)
					p = openPartition(t, s, "prop", 0)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got, stats := chkRun(t, dir)
			chkNoProblems(t, got, stats)
			if stats.Snapshots < 3 {
				t.Fatalf("only %d snapshots compared", stats.Snapshots)
			}
		})
	}
}

// TestCheckForgottenProducers: producers the store forgot (expired when
// a snapshot was saved, over the cap) are not problems, nor is a
// forgotten producer that comes back with a fresh sequence.
func TestCheckForgottenProducers(t *testing.T) {
	clock := time.UnixMilli(1700000000000)
	now := func() time.Time { return clock }
	dir := t.TempDir()
	opts := logstore.Options{Sync: logstore.SyncNever, ProducerExpiry: time.Hour, MaxProducers: 3,
		SegmentBytes: 500, IndexIntervalBytes: 1}.WithClock(now)
	s := openStore(t, dir, opts)
	p := openPartition(t, s, "exp", 0)
	send := func(pid int64, seq int32, n int) {
		t.Helper()
		if got, _ := outcome(p, producerBatch(pid, 0, seq, n, clock.UnixMilli())); got != "OK" {
			t.Fatalf("pid %d seq %d: %s", pid, seq, got)
		}
	}
	send(1, 0, 1)
	send(2, 0, 1)
	clock = clock.Add(2 * time.Hour) // 1 and 2 expire
	for i := range 8 {
		send(3, int32(2*i), 2)
	}
	send(1, 0, 2) // back, unknown again: from sequence 0
	for pid := int64(4); pid <= 7; pid++ {
		send(pid, 0, 1) // past the cap of 3: 1 and 3 are evicted
	}
	for i := range 6 {
		send(3, int32(2*i), 2) // unknown again: from sequence 0
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	chkNoProblems(t, got, stats)
	if stats.Snapshots < 3 {
		t.Fatalf("stats %+v", stats)
	}
}

// TestCheckRetention: when retention removed the first segments, the
// oldest snapshot at or above the log start starts the replay.
func TestCheckRetention(t *testing.T) {
	dir := t.TempDir()
	opts := chkOpts
	opts.RetentionBytes = 1500
	s := openStore(t, dir, opts)
	chkFill(t, s, "ret", 60, 1700000000000)
	p := openPartition(t, s, "ret", 0)
	if err := p.Flushed(); err != nil { // retention runs after each roll's flush
		t.Fatal(err)
	}
	start := p.StartOffset()
	if start == 0 {
		t.Fatal("retention deleted nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	chkNoProblems(t, got, stats)
	if len(got) != 1 || !strings.Contains(got[0].Detail, fmt.Sprintf("the log below offset %d is gone, so the replay starts from this snapshot", start)) || stats.Snapshots == 0 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckSnapshotProblems: snapshots that do not agree with the log,
// each reported with its offset.
func TestCheckSnapshotProblems(t *testing.T) {
	for _, c := range []struct {
		name string
		// spoil changes the snapshots of a closed store, whose log ends
		// at end and whose snapshots are at offsets, and returns the
		// offset of the snapshot to be reported and a part of the text.
		spoil func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string)
	}{
		{"wrong epoch", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			off := offsets[1]
			snap := chkLoad(t, st, off)
			snap.Producers[0].Epoch = 9
			chkSave(t, st, snap)
			return off, fmt.Sprintf("producer %d: epoch 9, the log gives 0", snap.Producers[0].ProducerID)
		}},
		{"wrong window", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			off := offsets[len(offsets)-1]
			snap := chkLoad(t, st, off)
			snap.Producers[0].Batches[0].LastOffset++
			chkSave(t, st, snap)
			return off, fmt.Sprintf("producer %d: window [", snap.Producers[0].ProducerID)
		}},
		{"open transaction left out", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			off := offsets[2]
			snap := chkLoad(t, st, off)
			var kept []producerstate.Entry
			for _, e := range snap.Producers {
				if e.ProducerID != 3 {
					kept = append(kept, e)
				}
			}
			snap.Producers = kept
			chkSave(t, st, snap)
			return off, "producer 3 has a transaction open since offset"
		}},
		{"producer not in the log", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			off := offsets[1]
			snap := chkLoad(t, st, off)
			snap.Producers = append(snap.Producers, producerstate.Entry{ProducerID: 99, TxnFirstOffset: -1, CoordinatorEpoch: -1})
			chkSave(t, st, snap)
			return off, "producer 99 is in the snapshot, but not in the log below it"
		}},
		{"above the log end", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			snap := chkLoad(t, st, end)
			snap.Offset = end + 5
			chkSave(t, st, snap)
			return end + 5, fmt.Sprintf("above the log end offset %d: the next open deletes it", end)
		}},
		{"inside a batch", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			// Producer 1's batches hold 2 records at offsets 4i+1.
			snap := chkLoad(t, st, offsets[0])
			snap.Offset = 6
			chkSave(t, st, snap)
			return 6, "the offset lies inside the batch of offsets 5..6"
		}},
		{"undecodable", func(t *testing.T, st *snapshot.Store, offsets []int64, end int64) (int64, string) {
			return offsets[1], "" // spoiled through bbolt below
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, chkOpts)
			chkFill(t, s, "snap", 40, 1700000000000)
			end := openPartition(t, s, "snap", 0).EndOffset()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			pdir := filepath.Join(dir, "snap-0")
			st, _, err := snapshot.Open(pdir, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			offsets, err := st.List()
			if err != nil || len(offsets) < 4 {
				t.Fatalf("snapshots %v: %v", offsets, err)
			}
			off, want := c.spoil(t, st, offsets, end)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if want == "" {
				chkPutRaw(t, filepath.Join(pdir, snapshot.FileName), off, []byte{0, 1, 2, 3, 4, 5, 6})
				want = "cannot be read: "
			}
			got, stats := chkRun(t, dir)
			if stats.Problems != 1 || len(got) != 1 || got[0].Kind != logstore.ProblemSnapshot || got[0].Snapshot != off ||
				got[0].File != "snap-0/producer-snapshots.db" || !strings.Contains(got[0].Detail, want) {
				t.Fatalf("findings:\n%swant one at snapshot offset %d with %q", chkText(got), off, want)
			}
		})
	}
}

func chkLoad(t *testing.T, st *snapshot.Store, off int64) producerstate.Snapshot {
	t.Helper()
	snap, err := st.Load(off)
	if err != nil || len(snap.Producers) == 0 {
		t.Fatalf("snapshot at %d: %+v %v", off, snap, err)
	}
	return snap
}

func chkSave(t *testing.T, st *snapshot.Store, snap producerstate.Snapshot) {
	t.Helper()
	if err := st.Save(snap); err != nil {
		t.Fatal(err)
	}
}

// chkPutRaw stores value under the snapshot key of off, bypassing the
// snapshot package's encoding.
func chkPutRaw(t *testing.T, path string, off int64, value []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("producer-snapshots")).Put(binary.BigEndian.AppendUint64(nil, uint64(off)), value)
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckUnusableSnapshotDB: a db bbolt cannot open is one problem, and
// the log is still checked.
func TestCheckUnusableSnapshotDB(t *testing.T) {
	dir := chkStore(t)
	if err := os.WriteFile(filepath.Join(dir, "alpha-0", snapshot.FileName), []byte(strings.Repeat("garbage!", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	if stats.Problems != 1 || got[0].Kind != logstore.ProblemSnapshot || got[0].Snapshot != -1 ||
		!strings.Contains(got[0].Detail, "the snapshot db cannot be used") || stats.Batches != 65 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckOpenStore: a store that is open has its snapshot db locked;
// check fails rather than read files that are changing.
func TestCheckOpenStore(t *testing.T) {
	dir := chkStore(t)
	s := openStore(t, dir, chkOpts)
	openPartition(t, s, "alpha", 0)
	_, err := logstore.Check(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "is locked by another process") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckNotAStore(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := logstore.Check(missing, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("check created the directory")
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := logstore.Check(file, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file: %v", err)
	}
	// A directory without partitions is an empty store.
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "not-a-partition"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, empty)
	if len(got) != 0 || stats != (logstore.CheckStats{}) {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

func TestProblemString(t *testing.T) {
	for _, c := range []struct {
		p    logstore.Problem
		want string
	}{
		{logstore.Problem{Kind: logstore.ProblemCorrupt, File: "a-0/x.log", Pos: 12, Snapshot: -1, Detail: "d"}, "CORRUPT a-0/x.log at byte 12: d"},
		{logstore.Problem{Kind: logstore.ProblemSnapshot, File: "a-0/producer-snapshots.db", Pos: -1, Snapshot: 40, Detail: "d"}, "SNAPSHOT a-0/producer-snapshots.db at snapshot offset 40: d"},
		{logstore.Problem{Kind: logstore.ProblemNote, File: "a-0/x.index", Pos: -1, Snapshot: -1, Detail: "d"}, "NOTE a-0/x.index: d"},
		{logstore.Problem{Kind: logstore.ProblemTornTail, File: "f", Pos: 0, Snapshot: -1, Detail: "d"}, "TORN_TAIL f at byte 0: d"},
		{logstore.Problem{Kind: logstore.ProblemIndex, File: "f", Pos: 8, Snapshot: -1, Detail: "d"}, "INDEX f at byte 8: d"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestPartitionIDValidate(t *testing.T) {
	for _, id := range []logstore.PartitionID{{Topic: "../x"}, {Topic: "a", Partition: -1}, {Topic: ""}, {Topic: strings.Repeat("t", 250)}} {
		if err := id.Validate(); !errors.Is(err, logstore.ErrInvalidName) {
			t.Errorf("%+v: %v", id, err)
		}
	}
	if err := (logstore.PartitionID{Topic: "events.v2_x-y", Partition: 3}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestCheckEmptySnapshotDB: a 0-byte producer-snapshots.db (created, never
// initialised) is one SNAPSHOT problem, and its log and the other
// partitions are still checked.
func TestCheckEmptySnapshotDB(t *testing.T) {
	dir := chkStore(t)
	if err := os.Truncate(filepath.Join(dir, "alpha-0", snapshot.FileName), 0); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	if stats.Problems != 1 || got[0].Kind != logstore.ProblemSnapshot || got[0].File != "alpha-0/"+snapshot.FileName ||
		!strings.Contains(got[0].Detail, "empty (0 bytes") || stats.Partitions != 2 || stats.Batches != 65 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckSnapshotDBNotAFile: a snapshot db that is a directory cannot
// be opened: one SNAPSHOT problem, and the check goes on.
func TestCheckSnapshotDBNotAFile(t *testing.T) {
	dir := chkStore(t)
	db := filepath.Join(dir, "alpha-0", snapshot.FileName)
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	if stats.Problems != 1 || got[0].Kind != logstore.ProblemSnapshot || !strings.Contains(got[0].Detail, "cannot be opened") ||
		stats.Partitions != 2 || stats.Batches != 65 {
		t.Fatalf("stats %+v\n%s", stats, chkText(got))
	}
}

// TestCheckEntriesThatAreNotPartitions: an entry named as a partition
// that is a regular file, a dangling symbolic link or a loop of links is
// a PARTITION problem each, in partition order, and the real partitions
// are checked; a link to a partition directory is followed, as the
// store follows it.
func TestCheckEntriesThatAreNotPartitions(t *testing.T) {
	dir := chkStore(t)
	if err := os.WriteFile(filepath.Join(dir, "alpha-1"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"gamma-0", "alpha-2"}, // dangling
		{"loop-b", "alpha-3"},  // alpha-3 -> loop-b -> alpha-3
		{"alpha-3", "loop-b"},
		{"beta-0", "beta-1"}, // a link to a partition directory
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	got, stats := chkRun(t, dir)
	want := []string{
		"PARTITION alpha-1: named as a partition, but a regular file, not a directory: the store cannot open this partition",
		"PARTITION alpha-2: named as a partition, but a symbolic link to gamma-0, which does not exist: the store cannot open this partition",
		"PARTITION alpha-3: named as a partition, but a symbolic link to loop-b that loops back on itself: the store cannot open this partition",
	}
	if text := chkText(got); text != "  "+strings.Join(want, "\n  ")+"\n" || stats.Problems != 3 || stats.Partitions != 3 {
		t.Fatalf("stats %+v\n%s\nwant:\n  %s", stats, text, strings.Join(want, "\n  "))
	}
	if got[0].Kind != logstore.ProblemPartition || got[0].Pos != -1 || got[0].Snapshot != -1 {
		t.Fatalf("%+v", got[0])
	}
}

// TestCheckChecksWhatPartitionsLists: Check and Store.Partitions agree on
// what is a partition: the entries Check reports as PARTITION problems
// are the ones Partitions leaves out, and Check reads the others (a link
// to a partition directory among them), in the order Partitions lists
// them.
func TestCheckChecksWhatPartitionsLists(t *testing.T) {
	dir := chkStore(t)
	if err := os.WriteFile(filepath.Join(dir, "alpha-1"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "x-01"), 0o755); err != nil { // not a partition's name
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"gamma-0", "alpha-2"}, // dangling
		{"beta-0", "beta-1"},   // a link to a partition directory
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	var checked, bad []string
	c := logstore.Checker{
		Report: func(p logstore.Problem) {
			if p.Kind == logstore.ProblemPartition {
				bad = append(bad, p.File)
			}
		},
		Progress: func(p logstore.CheckProgress) {
			if n := p.Partition.String(); len(checked) == 0 || checked[len(checked)-1] != n {
				checked = append(checked, n)
			}
		},
	}
	if _, err := c.Check(dir); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, logstore.Options{})
	ids, err := s.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, id := range ids {
		listed = append(listed, id.String())
	}
	if want := []string{"alpha-0", "beta-0", "beta-1"}; !slices.Equal(listed, want) || !slices.Equal(checked, want) {
		t.Fatalf("Partitions lists %v, Check checked %v; want %v both", listed, checked, want)
	}
	if want := []string{"alpha-1", "alpha-2"}; !slices.Equal(bad, want) {
		t.Fatalf("Check reported %v as not partitions, want %v", bad, want)
	}
}
