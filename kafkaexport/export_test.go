package kafkaexport_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkadump"
	"github.com/logstore/logstore/kafkaexport"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/snapshot"
	"github.com/logstore/logstore/vfs"
)

var recent = time.Now().UnixMilli()

// batch is a client batch of n records of producer pid, transactional
// or not.
func batch(pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, recent, txn)
}

// writeStore writes two partitions of topic "t" through the root
// package: idempotent producers, a committed and an aborted transaction,
// enough data to roll segments; and a partition of topic "empty" with

// appendClosed appends b to partition 0 of topic in the store in dir and
// closes the store.
func appendClosed(t *testing.T, dir, topic string, b []byte) {
	t.Helper()
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(b); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// nothing in it. It gives t-0 a topic id.
func writeStore(t *testing.T, dir string) (tid catalog.TopicID) {
	t.Helper()
	st, err := logstore.Open(dir, logstore.Options{SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(2) {
		p, err := st.Partition("t", part)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int32(40) {
			if _, err := p.Append(batch(7+int64(part), 0, i*3, 3, false)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Append(batch(100, 1, 0, 2, true)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendMarker(100, 1, true, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(batch(200, 2, 0, 2, true)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendMarker(200, 2, false, 5); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Partition("empty", 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	tid = catalog.TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err := catalog.WritePartitionMetadata(vfs.OS, filepath.Join(dir, "t-0"), tid); err != nil {
		t.Fatal(err)
	}
	return tid
}

func TestExport(t *testing.T) {
	storeDir, out := t.TempDir(), filepath.Join(t.TempDir(), "kafka")
	tid := writeStore(t, storeDir)

	// The producers as the store holds them, to compare with.
	st, err := logstore.Open(storeDir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]producersAt{}
	for _, name := range []string{"t-0", "t-1", "empty-0"} {
		topic, part, _ := strings.Cut(name, "-")
		p, err := st.ExistingPartition(topic, int32(part[0]-'0'))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = producersAt{p.ProducerSnapshot().Producers, p.StartOffset(), p.EndOffset()}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("exported %d partitions, want 3: %+v", len(got), got)
	}
	for _, p := range got {
		name := p.ID.String()
		w := want[name]
		if p.StartOffset != w.start || p.EndOffset != w.end {
			t.Errorf("%s: offsets [%d, %d), want [%d, %d)", name, p.StartOffset, p.EndOffset, w.start, w.end)
		}
		// Segments: byte-equal, and every segment file of the store.
		var segs []string
		ents, _ := os.ReadDir(filepath.Join(storeDir, name))
		for _, e := range ents {
			switch filepath.Ext(e.Name()) {
			case ".log", ".index", ".timeindex", ".txnindex":
				segs = append(segs, e.Name())
			}
		}
		if !slices.Equal(segs, p.Segments) {
			t.Errorf("%s: copied %v, want %v", name, p.Segments, segs)
		}
		for _, s := range segs {
			a, _ := os.ReadFile(filepath.Join(storeDir, name, s))
			b, err := os.ReadFile(filepath.Join(p.Dir, s))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s/%s: not byte-equal (%v)", name, s, err)
			}
		}
		// The .snapshot: Kafka's name at the log end, decodes to the same
		// producers.
		if p.Snapshot != fmt.Sprintf("%020d.snapshot", w.end) {
			t.Errorf("%s: snapshot named %s", name, p.Snapshot)
		}
		data, err := os.ReadFile(filepath.Join(p.Dir, p.Snapshot))
		if err != nil {
			t.Fatal(err)
		}
		ents2, err := snapshot.ReadKafka(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back := snapshot.SnapshotFromKafka(w.end, ents2)
		if len(back.Producers) != len(w.producers) {
			t.Fatalf("%s: %d producers back, want %d", name, len(back.Producers), len(w.producers))
		}
		for i, e := range back.Producers {
			k := snapshot.KafkaEntryOf(w.producers[i])
			if snapshot.KafkaEntryOf(e) != k {
				t.Errorf("%s: producer %d: %+v, want %+v", name, i, snapshot.KafkaEntryOf(e), k)
			}
		}
		if name != "empty-0" && len(back.Producers) != 3 {
			t.Errorf("%s: %d producers, want 3 (one idempotent, two transactional)", name, len(back.Producers))
		}
		// partition.metadata: only where the store has one.
		id, err := catalog.ReadPartitionMetadata(vfs.OS, p.Dir)
		switch name {
		case "t-0":
			if err != nil || id != tid || !p.HasTopicID {
				t.Errorf("%s: partition.metadata %v, %v; want %v", name, id, err, tid)
			}
		default:
			if !errors.Is(err, os.ErrNotExist) || p.HasTopicID {
				t.Errorf("%s: partition.metadata: %v, want none", name, err)
			}
		}
		// leader-epoch-checkpoint: Kafka's text, exactly.
		lec, err := os.ReadFile(filepath.Join(p.Dir, "leader-epoch-checkpoint"))
		if err != nil {
			t.Fatal(err)
		}
		wantLEC := "0\n0\n"
		if w.end > w.start {
			wantLEC = fmt.Sprintf("0\n1\n0 %d\n", w.start)
		}
		if string(lec) != wantLEC {
			t.Errorf("%s: leader-epoch-checkpoint %q, want %q", name, lec, wantLEC)
		}
		// dump reads the exported directory, the .snapshot among it.
		var stdout, stderr bytes.Buffer
		if err := kafkadump.Dump(&stdout, &stderr, []string{p.Dir}, kafkadump.DefaultOptions()); err != nil {
			t.Fatalf("%s: dump: %v", name, err)
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: dump stderr: %s", name, stderr.String())
		}
		if !strings.Contains(stdout.String(), "Dumping "+filepath.Join(p.Dir, p.Snapshot)) {
			t.Errorf("%s: dump did not read the snapshot:\n%s", name, stdout.String())
		}
	}
	// The store is still usable, and the output is refused a second time.
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{Topic: "t"}); !errors.Is(err, kafkaexport.ErrExists) {
		t.Fatalf("second export: %v, want ErrExists", err)
	}
	if _, err := kafkaexport.Export(storeDir, t.TempDir(), kafkaexport.Options{Topic: "nope"}); !errors.Is(err, kafkaexport.ErrNoTopic) {
		t.Fatalf("unknown topic: %v, want ErrNoTopic", err)
	}
}

type producersAt struct {
	producers  []producerstate.Entry
	start, end int64
}

func TestExportRefusesHeldStore(t *testing.T) {
	storeDir := t.TempDir()
	st, err := logstore.Open(storeDir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = kafkaexport.Export(storeDir, t.TempDir(), kafkaexport.Options{Store: logstore.Options{LockTimeout: -1}})
	if !errors.Is(err, logstore.ErrStoreInUse) {
		t.Fatalf("export of a held store: %v, want ErrStoreInUse", err)
	}
}

func TestExportRefusesOpenTransaction(t *testing.T) {
	storeDir, out := t.TempDir(), t.TempDir()
	appendClosed(t, storeDir, "t", batch(100, 1, 0, 2, true))
	_, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{})
	if !errors.Is(err, kafkaexport.ErrOpenTransaction) {
		t.Fatalf("export with a transaction open: %v, want ErrOpenTransaction", err)
	}
	if _, err := os.Stat(filepath.Join(out, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partition written anyway: %v", err)
	}
}

// TestExportKafkaGolden checks the formats against files Kafka wrote: an
// empty producer snapshot (Kafka's 00000000000000000000.snapshot) is
// what the export writes for a partition without producers, and the
// 3-producer one survives a decode and re-encode byte for byte.
func TestExportKafkaGolden(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "testdata", "kafka-golden", "foo-0")
	for _, name := range []string{"00000000000000000000.snapshot", "00000000000000000021.snapshot"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Skipf("kafka golden file absent: %v", err)
		}
		ents, err := snapshot.ReadKafka(data)
		if err != nil {
			t.Fatal(err)
		}
		if got := snapshot.AppendKafka(nil, ents); !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded differs from Kafka's bytes", name)
		}
	}
	empty, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.snapshot"))
	storeDir, out := t.TempDir(), t.TempDir()
	st, err := logstore.Open(storeDir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Partition("e", 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "e-0", "00000000000000000000.snapshot"))
	if err != nil || !bytes.Equal(got, empty) {
		t.Errorf("empty snapshot % x (%v), want Kafka's % x", got, err, empty)
	}
}

func TestEncodeLeaderEpochCheckpoint(t *testing.T) {
	got := string(kafkaexport.EncodeLeaderEpochCheckpoint([]kafkaexport.EpochEntry{{0, 0}, {3, 1200}}))
	if want := "0\n2\n0 0\n3 1200\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestExportKafkaRealFiles compares the exported leader-epoch-checkpoint
// and partition.metadata with the ones a Kafka broker wrote for a
// partition whose log starts at 0 (shared/testdata/kafka-real).
func TestExportKafkaRealFiles(t *testing.T) {
	kdir := filepath.Dir(testutil.SharedFile(t, "kafka-real/rjmfernandes-flink-on-prem/promotions-0/partition.metadata"))
	wantMeta, err := os.ReadFile(filepath.Join(kdir, "partition.metadata"))
	if err != nil {
		t.Fatal(err)
	}
	wantLEC, err := os.ReadFile(filepath.Join(kdir, "leader-epoch-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	tid, err := catalog.ReadPartitionMetadata(vfs.OS, kdir)
	if err != nil {
		t.Fatal(err)
	}
	storeDir, out := t.TempDir(), t.TempDir()
	appendClosed(t, storeDir, "promotions", batch(3, 0, 0, 2, false))
	if err := catalog.WritePartitionMetadata(vfs.OS, filepath.Join(storeDir, "promotions-0"), tid); err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"partition.metadata": wantMeta, "leader-epoch-checkpoint": wantLEC} {
		got, err := os.ReadFile(filepath.Join(out, "promotions-0", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q (%v), Kafka wrote %q", name, got, err, want)
		}
	}
}

// TestExportRemovesPartialPartition: a partition that fails half written
// (here its partition.metadata does not decode, after the segments were
// copied) leaves no directory behind, so a second run is not refused.
func TestExportRemovesPartialPartition(t *testing.T) {
	storeDir, out := t.TempDir(), t.TempDir()
	appendClosed(t, storeDir, "t", batch(3, 0, 0, 2, false))
	meta := filepath.Join(storeDir, "t-0", "partition.metadata")
	if err := os.WriteFile(meta, []byte("version: 0\ntopic_id: ???"), 0o644); err != nil {
		t.Fatal(err)
	}
	var me *catalog.MetadataError
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{}); !errors.As(err, &me) {
		t.Fatalf("export with a bad partition.metadata: %v, want a *catalog.MetadataError", err)
	}
	if _, err := os.Stat(filepath.Join(out, "t-0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("half-written partition left behind: %v", err)
	}
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{}); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// TestExportLogStart: a partition whose start a DeleteRecords moved into
// its first segment is exported with that start in OUT's
// log-start-offset-checkpoint; a second export into OUT (another topic)
// keeps the first one's entries.
func TestExportLogStart(t *testing.T) {
	storeDir, out := t.TempDir(), filepath.Join(t.TempDir(), "kafka")
	st, err := logstore.Open(storeDir, logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		p, err := st.Partition(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := p.Append(batch(-1, -1, -1, 1, false)); err != nil {
				t.Fatal(err)
			}
		}
		if topic == "a" {
			if low, err := p.DeleteRecords(3); err != nil || low != 3 {
				t.Fatalf("DeleteRecords(3) = %d, %v", low, err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		if _, err := kafkaexport.Export(storeDir, out, kafkaexport.Options{Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, kafkaexport.LogStartCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0\n2\na 0 3\nb 0 0\n"; string(data) != want {
		t.Fatalf("log-start-offset-checkpoint %q, want %q", data, want)
	}
	if _, err := os.Stat(filepath.Join(out, kafkaexport.LogStartCheckpointName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the .tmp is left: %v", err)
	}
}
