package groupcoord

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore/internal/metalog"
	"github.com/logstore/logstore/internal/testutil"
)

// fixtureV1 is a groups.db of format 1 (bbolt) as the last build with
// the bbolt format wrote it, by the workload of writeFixtureV1: a
// consumer group with a member's offsets, a simple consumer's offsets,
// a transaction's pending offsets, a deleted group. This build runs
// the same workload into a record file, which must read the same.
const fixtureV1 = "testdata/groups-v1.db"

// writeFixtureV1 runs the workload of the fixture in dir.
func writeFixtureV1(t *testing.T, dir string) {
	e := &env{t: t, dir: dir, clk: newFakeClock()}
	e.cfg = Config{Clock: e.clk, InitialRebalanceDelay: testDelay}
	e.open()
	ids, gen := e.stable("g", 2)
	if c := e.commit(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []OffsetCommit{
		{TopicPartition: TopicPartition{"t", 0}, Offset: 5, LeaderEpoch: 3, Metadata: "m0"},
		{TopicPartition: TopicPartition{"t", 1}, Offset: 7, LeaderEpoch: -1},
	}}); c[0] != None {
		t.Fatal(c)
	}
	e.commit(CommitRequest{Group: "simple", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 1}}})
	e.commit(CommitRequest{Group: "gone", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 0}, Offset: 2}}})
	done := make(chan []Code, 1)
	e.c.DeleteGroups([]string{"gone"}, func(c []Code) { done <- c })
	if c := <-done; c[0] != None {
		t.Fatal(c)
	}
	if c := e.commitTxn(TxnCommitRequest{Group: "tx", Generation: -1, ProducerID: 7, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"v", 2}, Offset: 10, Metadata: "pending"}}}); c[0] != None {
		t.Fatal(c)
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeBolt writes a bbolt groups.db of format 1 at path as the
// previous build's first Open made it (the buckets and the version),
// then fn's changes: the old write path, kept for the tests.
func writeBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keyVersion, []byte{boltFormatVersion}); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketGroups, bucketOffsets, bucketPending} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if fn != nil {
			return fn(tx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readGroups(t *testing.T, dir string) []GroupInfo {
	t.Helper()
	gs, err := Read(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// wantFixture: dir holds what the fixture's workload leaves, as a
// record file and with no tmp file next to it, and the transaction's
// offsets are still pending.
func wantFixture(t *testing.T, dir string, want []GroupInfo) {
	t.Helper()
	if got := readGroups(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("groups\n got %+v\nwant %+v", got, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || !groupsFormat.IsFile(data) {
		t.Fatalf("not a record file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, TmpFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a tmp file left: %v", err)
	}
	l, err := readFile(filepath.Join(dir, FileName), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := l.pending["tx"][7][TopicPartition{"v", 2}]; !ok || r.offset != 10 || r.metadata != "pending" {
		t.Fatalf("pending offsets %+v", l.pending)
	}
}

// copyFixture puts the fixture in a new directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(fixtureV1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// workloadGroups is Read of the fixture's workload run by this build.
func workloadGroups(t *testing.T) []GroupInfo {
	t.Helper()
	dir := t.TempDir()
	writeFixtureV1(t, dir)
	gs := readGroups(t, dir)
	// The fixture's build stored no members (version 1 group records).
	for i := range gs {
		gs[i].State, gs[i].Protocol, gs[i].Leader, gs[i].Members = Empty, "", "", nil
	}
	return gs
}

// TestConvertFromBolt: the bbolt groups.db of the previous build reads
// as the record file of the same workload, and Open converts it: every
// group, offset and pending offset kept, the file now a record file
// (the bbolt one gone with the rename), and the next Open reads it.
func TestConvertFromBolt(t *testing.T) {
	want := workloadGroups(t)
	if len(want) != 2 || want[0].Group != "g" || want[1].Group != "simple" {
		t.Fatalf("the workload's groups: %+v", want)
	}
	dir := copyFixture(t)
	if got := readGroups(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("the bbolt file reads\n %+v\nwant %+v", got, want)
	}
	logs := &testutil.LockedBuffer{}
	e := &env{t: t, dir: dir, clk: newFakeClock()}
	e.cfg = Config{Clock: e.clk, InitialRebalanceDelay: testDelay, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	e.open()
	if !strings.Contains(logs.String(), "converting groups.db") {
		t.Fatalf("log: %s", logs)
	}
	if got, _ := e.c.Fetch("tx", []TopicPartition{{"v", 2}}, true); got[0].Code != UnstableOffsetCommit {
		t.Fatalf("pending offsets lost: %+v", got)
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	wantFixture(t, dir, want)
	e.open()
	if err := e.c.CompleteTxn(7, OffsetsPartition("tx"), true); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.Fetch("tx", []TopicPartition{{"v", 2}}, true); got[0].Offset != 10 || got[0].Code != None {
		t.Fatalf("after the commit of the transaction: %+v", got)
	}
	e.c.Close()
}

// TestConversionCrash: a crash at each step of the conversion (the new
// file written, synced, renamed over the bbolt file, the directory
// synced) leaves a directory that Open converts or opens as if nothing
// had happened: everything kept, no tmp file left.
func TestConversionCrash(t *testing.T) {
	errCrash := errors.New("crash")
	want := workloadGroups(t)
	for _, step := range []string{"tmp written", "tmp synced", "renamed", "dir synced"} {
		t.Run(step, func(t *testing.T) {
			dir := copyFixture(t)
			type capture struct{ db, tmp []byte }
			var caps []capture
			stepHook = func(s string) error {
				if s != step {
					return nil
				}
				db, _ := os.ReadFile(filepath.Join(dir, FileName))
				tmp, _ := os.ReadFile(filepath.Join(dir, TmpFileName))
				caps = append(caps, capture{db, tmp})
				if s == "tmp written" {
					// Not synced: a crash may keep any prefix of it.
					caps = append(caps, capture{db, tmp[:len(tmp)/2]}, capture{db, []byte{}})
				}
				return errCrash
			}
			_, err := Open(dir, Config{Clock: newFakeClock(), Logger: slog.New(slog.DiscardHandler)})
			stepHook = nil
			if !errors.Is(err, errCrash) || len(caps) == 0 {
				t.Fatalf("open: %v, want the crash", err)
			}
			for i, cp := range caps {
				d := t.TempDir()
				if err := os.WriteFile(filepath.Join(d, FileName), cp.db, 0o644); err != nil {
					t.Fatal(err)
				}
				if cp.tmp != nil {
					if err := os.WriteFile(filepath.Join(d, TmpFileName), cp.tmp, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if got := readGroups(t, d); !reflect.DeepEqual(got, want) {
					t.Fatalf("capture %d before Open: %+v", i, got)
				}
				c, err := Open(d, Config{Clock: newFakeClock(), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatalf("capture %d: open: %v", i, err)
				}
				c.Close()
				wantFixture(t, d, want)
			}
		})
	}
}

// TestRecordFileDamage: a torn tail is dropped (and logged); damage in
// the middle of the file or a record that does not decode is refused,
// naming the file, the byte and the record.
func TestRecordFileDamage(t *testing.T) {
	e := newEnv(t, Config{})
	e.commit(CommitRequest{Group: "s", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 1}}})
	e.commit(CommitRequest{Group: "s", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"t", 0}, Offset: 2}}})
	e.c.Close()
	path := filepath.Join(e.dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := groupsFormat.Decode(data, path)
	if err != nil || st.Tail != "" {
		t.Fatal(err, st.Tail)
	}
	open := func(data []byte) (*Coordinator, *testutil.LockedBuffer, error) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		logs := &testutil.LockedBuffer{}
		c, err := Open(e.dir, Config{Clock: newFakeClock(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
		return c, logs, err
	}
	t.Run("torn tail", func(t *testing.T) {
		c, logs, err := open(data[:len(data)-3])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Fetch("s", []TopicPartition{{"t", 0}}, false)
		c.Close()
		if got[0].Offset != 1 || !strings.Contains(logs.String(), "torn tail") {
			t.Fatalf("%+v; log %s", got, logs)
		}
	})
	entry := func(key string, val []byte) []byte {
		p := binary32(nil, len(key))
		p = append(p, key...)
		p = binary32(p, len(val))
		return append(p, val...)
	}
	hdr := groupsFormat.AppendHeader(nil)
	good := append([]byte{metalog.PayloadPuts}, entry("gs", groupRecord{generation: 1, emptyMs: -1}.encode())...)
	t.Run("middle", func(t *testing.T) {
		d := append(append(bytes.Clone(hdr), metalog.AppendFrame(nil, good)...), metalog.AppendFrame(nil, good)...)
		d[len(hdr)+metalog.FrameHeaderSize+2] ^= 1
		_, _, err := open(d)
		var de *DamagedError
		if !errors.Is(err, ErrDamaged) || !errors.As(err, &de) || !de.InFile || de.Offset != len(hdr) || de.File != path {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("record", func(t *testing.T) {
		v := offsetRecord{offset: 1, expireMs: -1, metadata: "abc"}.encode()
		bad := append([]byte{metalog.PayloadPuts}, entry("o"+string(offsetKey("s", TopicPartition{"t", 0})), v[:len(v)-1])...)
		d := append(bytes.Clone(hdr), metalog.AppendFrame(nil, bad)...)
		_, _, err := open(d)
		var de *DamagedError
		keyLen := len(offsetKey("s", TopicPartition{"t", 0})) + 1
		if !errors.As(err, &de) || de.Bucket != "offsets" || string(de.Key) != string(offsetKey("s", TopicPartition{"t", 0})) ||
			de.Offset != len(hdr)+metalog.FrameHeaderSize+1+4+keyLen+4+29 {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("key", func(t *testing.T) {
		bad := append([]byte{metalog.PayloadPuts}, entry("o\x00\x09g", offsetRecord{expireMs: -1}.encode())...)
		_, _, err := open(append(bytes.Clone(hdr), metalog.AppendFrame(nil, bad)...))
		var de *DamagedError
		if !errors.As(err, &de) || de.Bucket != "offsets" || !strings.Contains(de.Reason, "key byte") {
			t.Fatalf("got %#v", err)
		}
	})
}

func binary32(b []byte, n int) []byte {
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// TestDeleteGroupDurable: DeleteGroups removes every record of the group
// from the file, its offsets and pending offsets included, even one
// whose commit was queued just before it; a group whose id is a prefix
// of another's keeps nothing of the other's and loses nothing of its own.
func TestDeleteGroupDurable(t *testing.T) {
	e := newEnv(t, Config{})
	tp := TopicPartition{"t", 0}
	e.commit(CommitRequest{Group: "d", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: tp, Offset: 1}}})
	e.commit(CommitRequest{Group: "dd", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: tp, Offset: 2}}})
	e.commitTxn(TxnCommitRequest{Group: "d", Generation: -1, ProducerID: 3, Offsets: []OffsetCommit{{TopicPartition: tp, Offset: 4}}})
	committed := make(chan []Code, 1)
	e.c.Commit(CommitRequest{Group: "d", Generation: -1, Offsets: []OffsetCommit{{TopicPartition: TopicPartition{"u", 1}, Offset: 5}}}, func(c []Code) { committed <- c })
	deleted := make(chan []Code, 1)
	e.c.DeleteGroups([]string{"d"}, func(c []Code) { deleted <- c })
	<-committed
	if c := <-deleted; c[0] != None {
		t.Fatal(c)
	}
	e.reopen()
	gs := readGroupsOpen(t, e)
	if len(gs) != 1 || gs[0].Group != "dd" || len(gs[0].Offsets) != 1 || gs[0].Offsets[0].Offset != 2 {
		t.Fatalf("after reopen: %+v", gs)
	}
	if got, _ := e.c.Fetch("d", []TopicPartition{tp}, true); got[0].Offset != -1 || got[0].Code != None {
		t.Fatalf("the deleted group's offsets: %+v", got)
	}
}

// readGroupsOpen is Read of e's directory, the coordinator closed for
// it and opened again after.
func readGroupsOpen(t *testing.T, e *env) []GroupInfo {
	t.Helper()
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	gs := readGroups(t, e.dir)
	e.open()
	return gs
}

// FuzzDecodeFile: the replay of any bytes as groups.db fails with a
// *metalog.DamagedError or gives records that load, and whose image
// replays to the same records.
func FuzzDecodeFile(f *testing.F) {
	recs := newLoaded()
	recs.groups["g"] = groupRecord{generation: 2, emptyMs: -1, protocolType: "consumer"}
	recs.offsets["g"] = map[TopicPartition]offsetRecord{{"t", 1}: {offset: 5, expireMs: -1, metadata: "m"}}
	recs.pending["g"] = map[int64]map[TopicPartition]offsetRecord{7: {{"t", 1}: {offset: 6, expireMs: -1}}}
	img := groupsFormat.Image(nil, recs.records())
	f.Add(img)
	f.Add(img[:len(img)-5])
	f.Add(append(bytes.Clone(img), metalog.AppendFrame(nil, []byte{metalog.PayloadPuts, 0, 0, 0, 2, 'g', 'g', 0, 0, 0, 0})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := groupsFormat.Decode(data, "file")
		if err != nil {
			var de *metalog.DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("error %v", err)
			}
			return
		}
		l, err := loadRecords(st.Records, "file")
		if err != nil {
			t.Fatalf("replayed records do not load: %v", err)
		}
		if again := l.records(); !reflect.DeepEqual(again, st.Records) {
			t.Fatalf("records %q, loaded and encoded again %q", st.Records, again)
		}
	})
}
