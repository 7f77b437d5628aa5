package snapshot_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

func readShared(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(testutil.SharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// goldenEntries are the entries of kafka-golden/foo-0/...21.snapshot, as
// the golden dump shows them.
var goldenEntries = []snapshot.KafkaEntry{
	{ProducerID: 1, Epoch: 2, LastSequence: 1, LastOffset: 2, OffsetDelta: 3, Timestamp: -1, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 100},
	{ProducerID: 11, Epoch: 12, LastSequence: -1, LastOffset: -1, OffsetDelta: 0, Timestamp: 123456, CoordinatorEpoch: 13, CurrentTxnFirstOffset: -1},
	{ProducerID: 7, Epoch: 0, LastSequence: 0, LastOffset: 13, OffsetDelta: 2, Timestamp: 1700000000013, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
}

func TestKafkaGolden(t *testing.T) {
	data := readShared(t, "kafka-golden/foo-0/00000000000000000021.snapshot")
	if len(data) != 148 {
		t.Fatalf("fixture is %d bytes, want 148", len(data))
	}
	entries, err := snapshot.ReadKafka(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(entries, goldenEntries) {
		t.Fatalf("entries:\n got %+v\nwant %+v", entries, goldenEntries)
	}
	if out := snapshot.AppendKafka(nil, entries); !bytes.Equal(out, data) {
		t.Fatalf("re-written file differs:\n got % x\nwant % x", out, data)
	}
	if out := snapshot.AppendKafka([]byte("prefix"), entries); !bytes.Equal(out[6:], data) || string(out[:6]) != "prefix" {
		t.Fatal("AppendKafka to a non-empty buffer")
	}

	empty := readShared(t, "kafka-golden/foo-0/00000000000000000000.snapshot")
	if !bytes.Equal(empty, []byte{0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0, 0, 0, 0}) {
		t.Fatalf("empty fixture is % x", empty)
	}
	entries, err = snapshot.ReadKafka(empty)
	if err != nil || len(entries) != 0 {
		t.Fatalf("empty snapshot: %v, %v", entries, err)
	}
	if out := snapshot.AppendKafka(nil, entries); !bytes.Equal(out, empty) {
		t.Fatalf("re-written empty file is % x", out)
	}
}

// dumpLine prints an entry as the Scala DumpLogSegments does (§2.6 of
// the format notes), from the state Entry() restores, so the conversion
// is checked against Kafka's own output.
func dumpLine(e producerstate.Entry) string {
	txn := "OptionalLong.empty"
	if e.TxnFirstOffset >= 0 {
		txn = fmt.Sprintf("OptionalLong[%d]", e.TxnFirstOffset)
	}
	s := fmt.Sprintf("producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d ",
		e.ProducerID, e.Epoch, e.CoordinatorEpoch, txn, e.LastTimestamp)
	if n := len(e.Batches); n > 0 {
		b := e.Batches[n-1]
		s += fmt.Sprintf("firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
			b.FirstSeq, b.LastSeq, b.LastOffset, b.LastOffset-b.FirstOffset, b.Timestamp)
	}
	return s + "<EOL>"
}

// goldenDump returns the lines golden-output.txt gives after "Dumping
// name", up to the next "Dumping" or "===" line.
func goldenDump(t *testing.T, name string) []string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(readShared(t, "kafka-golden/golden-output.txt")))
	var lines []string
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Dumping "+name:
			in = true
		case in && (strings.HasPrefix(line, "Dumping ") || strings.HasPrefix(line, "===")):
			return lines
		case in:
			lines = append(lines, line)
		}
	}
	if !in {
		t.Fatalf("golden-output.txt has no dump of %s", name)
	}
	return lines
}

func TestKafkaEntryConversions(t *testing.T) {
	want := goldenDump(t, "foo-0/00000000000000000021.snapshot")
	if len(want) != len(goldenEntries) {
		t.Fatalf("golden dump has %d lines", len(want))
	}
	for i, k := range goldenEntries {
		e := k.Entry()
		if got := dumpLine(e); got != want[i] {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want[i])
		}
		if back := snapshot.KafkaEntryOf(e); back != k {
			t.Errorf("entry %d: KafkaEntryOf(Entry()) = %+v, want %+v", i, back, k)
		}
	}

	// Only the newest batch of a window goes to Kafka's format, and the
	// record timestamp as Kafka's Timestamp: the file has no room for
	// the store's seen time, which comes back as not known.
	full := producerstate.Entry{ProducerID: 31, Epoch: 1, CoordinatorEpoch: 4, TxnFirstOffset: -1, LastTimestamp: 99, LastSeen: 1700000000000, Batches: []producerstate.BatchMeta{
		{FirstSeq: 0, LastSeq: 2, FirstOffset: 0, LastOffset: 2, Timestamp: 90},
		{FirstSeq: 2147483646, LastSeq: 0, FirstOffset: 3, LastOffset: 5, Timestamp: 99},
	}}
	k := snapshot.KafkaEntryOf(full)
	wantK := snapshot.KafkaEntry{ProducerID: 31, Epoch: 1, LastSequence: 0, LastOffset: 5, OffsetDelta: 2, Timestamp: 99, CoordinatorEpoch: 4, CurrentTxnFirstOffset: -1}
	if k != wantK {
		t.Fatalf("KafkaEntryOf = %+v, want %+v", k, wantK)
	}
	if got := k.Entry(); !reflect.DeepEqual(got.Batches, full.Batches[1:]) || got.LastTimestamp != 99 || got.LastSeen != producerstate.SeenUnknown {
		t.Fatalf("Entry() = %+v, want the newest batch %+v, last timestamp 99, seen not known", got, full.Batches[1:])
	}

	// A whole snapshot: sorted by id, a repeated id keeps the later entry.
	entries := append(append([]snapshot.KafkaEntry(nil), goldenEntries...), snapshot.KafkaEntry{ProducerID: 7, Epoch: 5, LastOffset: -1, LastSequence: -1, CurrentTxnFirstOffset: -1})
	snap := snapshot.SnapshotFromKafka(21, entries)
	var ids []int64
	for _, p := range snap.Producers {
		ids = append(ids, p.ProducerID)
	}
	if snap.Offset != 21 || !reflect.DeepEqual(ids, []int64{1, 7, 11}) || snap.Producers[1].Epoch != 5 {
		t.Fatalf("SnapshotFromKafka: offset %d ids %v, producer 7 epoch %d", snap.Offset, ids, snap.Producers[1].Epoch)
	}
	// It is a snapshot the store takes, and converts back.
	v := mustEncode(t, snap)
	got, err := snapshot.DecodeValue(v)
	if err != nil || !sameSnapshot(got, snap) {
		t.Fatalf("store round trip of a Kafka snapshot: %v", err)
	}
	if back := snapshot.KafkaEntriesOf(snap); len(back) != 3 || back[0] != goldenEntries[0] || back[2] != goldenEntries[1] {
		t.Fatalf("KafkaEntriesOf = %+v", back)
	}
}

func TestKafkaCorruptMessages(t *testing.T) {
	// Kafka's messages as golden-output.txt gives them; checked here
	// against the texts written out too, so a missing golden file
	// cannot make the test vacuous.
	cases := []struct {
		file string
		msg  string
		is   error
	}{
		{"00000000000000000001.snapshot", "Snapshot failed schema validation: null", snapshot.ErrCorrupt},
		{"00000000000000000002.snapshot", "Snapshot failed schema validation: null", snapshot.ErrCorrupt},
		{"00000000000000000003.snapshot", "Snapshot is corrupt (CRC is no longer valid). Stored crc: 1277147646. Computed crc: 630028124", snapshot.ErrCorrupt},
		{"00000000000000000004.snapshot", "Snapshot failed schema validation: Snapshot contained an unknown file version 2", snapshot.ErrVersion},
		{"00000000000000000005.snapshot", "Snapshot is corrupt (CRC is no longer valid). Stored crc: 1277147646. Computed crc: 4000611659", snapshot.ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			golden := goldenDump(t, "crc-0/"+c.file)
			if len(golden) != 1 || golden[0] != "[stderr] "+c.msg {
				t.Fatalf("golden-output.txt says %q, the test expects %q", golden, c.msg)
			}
			_, err := snapshot.ReadKafka(readShared(t, "kafka-golden/crc-0/"+c.file))
			var ke *snapshot.KafkaSnapshotError
			if !errors.As(err, &ke) {
				t.Fatalf("err = %v, want a *KafkaSnapshotError", err)
			}
			if err.Error() != c.msg {
				t.Errorf("message:\n got %s\nwant %s", err, c.msg)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("err does not match %v", c.is)
			}
		})
	}
}

func TestKafkaReadEdgeCases(t *testing.T) {
	good := snapshot.AppendKafka(nil, goldenEntries)
	fix := func(b []byte) []byte { // recompute the CRC
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[2:], recordbatch.Checksum(b[6:]))
		return b
	}
	withCount := func(n uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[6:], n)
		return fix(b)
	}
	cases := []struct {
		name string
		data []byte
		msg  string
		pos  int
	}{
		{"one byte", []byte{0}, "Snapshot failed schema validation: null", 1},
		{"version only", []byte{0, 1}, "Snapshot failed schema validation: null", 2},
		{"version -1", []byte{0xff, 0xff}, "Snapshot failed schema validation: Snapshot contained an unknown file version -1", 0},
		{"version 0, long", append([]byte{0, 0}, good[2:]...), "Snapshot failed schema validation: Snapshot contained an unknown file version 0", 0},
		{"no count", good[:9], "Snapshot failed schema validation: null", 9},
		{"negative count", withCount(0xffffffff), "Snapshot failed schema validation: non-nullable field producerEntries was serialized as null", 6},
		{"count above bytes", withCount(139), "Snapshot failed schema validation: Tried to allocate a collection of size 139, but there are only 138 bytes remaining.", 6},
		{"count above entries", withCount(4), "Snapshot failed schema validation: null", 148},
		{"last entry cut", fix(good[:147]), "Snapshot failed schema validation: null", 102},
	}
	for _, c := range cases {
		_, err := snapshot.ReadKafka(c.data)
		var ke *snapshot.KafkaSnapshotError
		if !errors.As(err, &ke) || err.Error() != c.msg || ke.Pos != c.pos {
			t.Errorf("%s: err = %v (at %d), want %q at %d", c.name, err, posOf(ke), c.msg, c.pos)
		}
	}
	// Trailing bytes the CRC covers are accepted, as Kafka accepts them.
	long := fix(append(bytes.Clone(good), 1, 2, 3))
	if entries, err := snapshot.ReadKafka(long); err != nil || !reflect.DeepEqual(entries, goldenEntries) {
		t.Errorf("trailing bytes under a good CRC: %v", err)
	}
}

func posOf(ke *snapshot.KafkaSnapshotError) int {
	if ke == nil {
		return -1
	}
	return ke.Pos
}

// TestKafkaRealSnapshots reads every snapshot file a real broker wrote.
func TestKafkaRealSnapshots(t *testing.T) {
	root := filepath.Join(testutil.SharedDir(t), "testdata", "kafka-real")
	var n, entries int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".snapshot") {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got, err := snapshot.ReadKafka(data)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		entries += len(got)
		if out := snapshot.AppendKafka(nil, got); !bytes.Equal(out, data) {
			t.Errorf("%s: re-written bytes differ", rel)
		}
		off, ok := snapshot.ParseKafkaSnapshotName(d.Name())
		if !ok || snapshot.KafkaSnapshotName(off) != d.Name() {
			t.Errorf("%s: name parses to %d, %v", rel, off, ok)
		}
		for _, k := range got {
			if back := snapshot.KafkaEntryOf(k.Entry()); back != k {
				t.Errorf("%s: entry %+v converts back as %+v", rel, k, back)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 || entries < 7 {
		t.Fatalf("read %d files with %d entries; expected the 10 broker snapshots", n, entries)
	}
	t.Logf("%d broker snapshot files, %d entries", n, entries)
}

func TestKafkaSnapshotName(t *testing.T) {
	for off, name := range map[int64]string{
		0:             "00000000000000000000.snapshot",
		21:            "00000000000000000021.snapshot",
		1234:          "00000000000000001234.snapshot",
		math.MaxInt64: "09223372036854775807.snapshot",
	} {
		if got := snapshot.KafkaSnapshotName(off); got != name {
			t.Errorf("KafkaSnapshotName(%d) = %s", off, got)
		}
		if got, ok := snapshot.ParseKafkaSnapshotName(name); !ok || got != off {
			t.Errorf("Parse(%s) = %d, %v", name, got, ok)
		}
	}
	if got, ok := snapshot.ParseKafkaSnapshotName("12.snapshot"); !ok || got != 12 {
		t.Errorf("Parse(12.snapshot) = %d, %v", got, ok)
	}
	for _, bad := range []string{
		"00000000000000000021.snapshot.deleted", "00000000000000000021.log", ".snapshot",
		"-0000000000000000001.snapshot", "+1.snapshot", "1a.snapshot", "99999999999999999999.snapshot",
		"producer-snapshots.db", "00000000000000000021.snapshot.swap",
	} {
		if off, ok := snapshot.ParseKafkaSnapshotName(bad); ok {
			t.Errorf("Parse(%s) = %d, accepted", bad, off)
		}
	}
}

// FuzzReadKafka feeds arbitrary bytes to ReadKafka, each input as is and
// with its CRC made right. A file it reads must re-read identically from
// AppendKafka's bytes, which equal the input when nothing trails the
// entries; a file it refuses must get one of Kafka's messages. Reading
// never allocates more than a small multiple of the input.
func FuzzReadKafka(f *testing.F) {
	f.Add([]byte{})
	f.Add(snapshot.AppendKafka(nil, nil))
	f.Add(snapshot.AppendKafka(nil, goldenEntries))
	if dir, ok := testutil.SharedDirIfPresent(); ok {
		files, _ := filepath.Glob(filepath.Join(dir, "testdata", "kafka-golden", "*", "*.snapshot"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	prefixes := []string{
		"Snapshot failed schema validation: ",
		"Snapshot is corrupt (CRC is no longer valid). Stored crc: ",
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(in []byte) {
			var entries []snapshot.KafkaEntry
			var err error
			checkAllocated(t, uint64(2*len(in))+64<<10, func() { entries, err = snapshot.ReadKafka(in) })
			if err != nil {
				var ke *snapshot.KafkaSnapshotError
				if !errors.As(err, &ke) || ke.Pos < 0 || ke.Pos > len(in) {
					t.Fatalf("error %v is not a *KafkaSnapshotError inside the input", err)
				}
				if !strings.HasPrefix(err.Error(), prefixes[0]) && !strings.HasPrefix(err.Error(), prefixes[1]) {
					t.Fatalf("message %q is not one of Kafka's", err)
				}
				if errors.Is(err, snapshot.ErrCorrupt) == errors.Is(err, snapshot.ErrVersion) {
					t.Fatalf("error %v matches both or neither sentinel", err)
				}
				return
			}
			out := snapshot.AppendKafka(nil, entries)
			if len(in) == snapshot.KafkaHeaderSize+snapshot.KafkaEntrySize*len(entries) && !bytes.Equal(out, in) {
				t.Fatalf("re-written bytes differ:\n in % x\nout % x", in, out)
			}
			again, err := snapshot.ReadKafka(out)
			if err != nil || len(again) != len(entries) || (len(entries) > 0 && !reflect.DeepEqual(again, entries)) {
				t.Fatalf("read(append(x)) != x: %v", err)
			}
		}
		check(data)
		if len(data) >= 6 {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[2:], recordbatch.Checksum(fixed[6:]))
			check(fixed)
		}
	})
}
