package producerstate_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/producerstate"
	"github.com/logstore/logstore/recordbatch"
)

// readLog returns the batches of a segment file up to its first torn or
// invalid batch, as recovery would keep them.
func readLog(t testing.TB, path string) []recordbatch.Batch {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []recordbatch.Batch
	for pos := 0; pos < len(raw); {
		b, err := recordbatch.Parse(raw[pos:], 0)
		if err != nil || b.Validate() != nil {
			break
		}
		out = append(out, b)
		pos += b.Size()
	}
	return out
}

// logFiles lists the .log files of the repository's golden segments and,
// when it is there, of the shared test data (Kafka, franz-go and real
// Kafka directories).
func logFiles(t testing.TB) []string {
	t.Helper()
	dirs := []string{filepath.Join(testutil.RepoDir(t), "testdata", "segments")}
	if d, ok := testutil.SharedDirIfPresent(); ok {
		dirs = append(dirs, filepath.Join(d, "testdata"))
	}
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".log") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestReplayRealLogs replays every segment written by Kafka, franz-go and
// the codec: Apply never fails on them, and at every batch boundary a
// snapshot plus the rest equals the full replay.
func TestReplayRealLogs(t *testing.T) {
	files := logFiles(t)
	if len(files) == 0 {
		t.Fatal("no segment files found")
	}
	producers := 0
	for _, path := range files {
		log := readLog(t, path)
		full := replay(t, noExpiry, log)
		producers += full.Len()
		if len(log) > 0 && full.MapEndOffset() != log[len(log)-1].LastOffset()+1 {
			t.Errorf("%s: map end %d", path, full.MapEndOffset())
		}
		st := producerstate.New(noExpiry)
		for i, b := range log {
			if err := st.Apply(b, now0); err != nil {
				t.Fatal(err)
			}
			if i%7 != 0 && i != len(log)-1 {
				continue
			}
			rebuilt := replayOnto(t, producerstate.FromSnapshot(noExpiry, st.Snapshot()), log[i+1:])
			if !rebuilt.Equal(full) {
				t.Fatalf("%s: snapshot after batch %d + tail differs:\n%s", path, i, diff(rebuilt, full))
			}
		}
	}
	t.Logf("%d segment files, %d producers", len(files), producers)
}

// TestReplayKafkaGolden checks the state a replay of Kafka's golden log
// gives, batch by batch (see kafka-golden/golden-output.txt).
func TestReplayKafkaGolden(t *testing.T) {
	log := readLog(t, testutil.SharedFile(t, "kafka-golden/foo-0/00000000000000000000.log"))
	if len(log) != 11 {
		t.Fatalf("%d batches, want 11", len(log))
	}
	st := replay(t, noExpiry, log) // at now0, whose Unix ms are T
	const T = 1700000000000
	wantEntries := map[int64]producerstate.Entry{
		// idempotent batch at 7
		29342342: {ProducerID: 29342342, Epoch: 15, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: T + 7, LastSeen: T, LastApplied: 7,
			Batches: []producerstate.BatchMeta{{FirstSeq: 234123, LastSeq: 234123, FirstOffset: 7, LastOffset: 7, Timestamp: T + 7}}},
		// transactional gzip batch at 8..9, COMMIT at 10 (coordinator epoch 100)
		98323: {ProducerID: 98323, Epoch: 99, CoordinatorEpoch: 100, TxnFirstOffset: -1, LastTimestamp: T + 10, LastSeen: T, LastApplied: 10,
			Batches: []producerstate.BatchMeta{{FirstSeq: 266, LastSeq: 267, FirstOffset: 8, LastOffset: 9, Timestamp: T + 9}}},
		// the sequence wrap at 11..13
		7: {ProducerID: 7, Epoch: 0, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: T + 13, LastSeen: T, LastApplied: 13,
			Batches: []producerstate.BatchMeta{{FirstSeq: 2147483646, LastSeq: 0, FirstOffset: 11, LastOffset: 13, Timestamp: T + 13}}},
		// an ABORT marker alone at 16 (epoch 1, coordinator epoch 2)
		5: {ProducerID: 5, Epoch: 1, CoordinatorEpoch: 2, TxnFirstOffset: -1, LastTimestamp: T + 16, LastSeen: T, LastApplied: 16},
	}
	if st.Len() != len(wantEntries) || st.MapEndOffset() != 21 {
		t.Fatalf("%d producers, map end %d; want %d, 21", st.Len(), st.MapEndOffset(), len(wantEntries))
	}
	for id, w := range wantEntries {
		if e := mustProducer(t, st, id); !e.Equal(w) {
			t.Errorf("producer %d:\n got %s\nwant %s", id, fmtEntry(e, true), fmtEntry(w, true))
		}
	}
	// What the check then says: the wrap continues at 1, a retry of the
	// wrapping batch is a duplicate.
	want(t, st.Check(data(t, bspec{pid: 7, seq: 1}), now0), producerstate.OK)
	wantDup(t, st.Check(data(t, bspec{pid: 7, seq: 2147483646, n: 3}), now0), 11, 13)
	want(t, st.Check(data(t, bspec{pid: 98323, epoch: 99, seq: 268}), now0), producerstate.OK)
	want(t, st.Check(marker(t, 5, 1, true, 1, ts0), now0), producerstate.Fenced)
}

// TestReplayFranzGoTransactions replays franz-go's transactional producer
// through kfake: three transactions at epochs 0, 1 and 2, each closed by
// its marker.
func TestReplayFranzGoTransactions(t *testing.T) {
	log := readLog(t, filepath.Join(testutil.RepoDir(t), "testdata", "segments", "franz-go-transactions", "00000000000000000000.log"))
	st := replay(t, noExpiry, log)
	if st.Len() != 1 {
		t.Fatalf("%d producers, want 1", st.Len())
	}
	e := st.Snapshot().Producers[0]
	if e.Epoch != 2 || e.TxnFirstOffset != -1 || len(e.Batches) == 0 || e.Batches[0].FirstSeq != 0 {
		t.Fatalf("state %s", fmtEntry(e, true))
	}
	// The producer's next batch in epoch 2 continues its sequence; a
	// batch of epoch 1 is fenced.
	next := e.Batches[len(e.Batches)-1].LastSeq + 1
	want(t, st.Check(data(t, bspec{pid: e.ProducerID, epoch: 2, seq: next, txn: true}), now0), producerstate.OK)
	want(t, st.Check(data(t, bspec{pid: e.ProducerID, epoch: 1, seq: 0, txn: true}), now0), producerstate.Fenced)
}
