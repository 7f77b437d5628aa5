package logstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkadump"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/segment"
)

// txnDataBatch builds a transactional client batch of n records.
func txnDataBatch(pid int64, epoch int16, seq int32, n int) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, recent, true)
}

func mustAppend(t *testing.T, p *logstore.Partition, batch []byte) logstore.AppendResult {
	t.Helper()
	res, err := p.Append(batch)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustMarker(t *testing.T, p *logstore.Partition, pid int64, commit bool) logstore.AppendResult {
	t.Helper()
	res, err := p.AppendMarker(pid, 0, commit, 5)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantLSO(t *testing.T, p *logstore.Partition, want int64) {
	t.Helper()
	if got := p.LastStableOffset(); got != want {
		t.Fatalf("LastStableOffset = %d, want %d (end %d)", got, want, p.EndOffset())
	}
}

// txnWorkload writes two aborted and one committed transaction; it
// returns the .txnindex entries Kafka would write for them.
func txnWorkload(t *testing.T, p *logstore.Partition) []segment.AbortedTxn {
	wantLSO(t, p, 0)
	mustAppend(t, p, txnDataBatch(1, 0, 0, 2)) // 0..1, opens pid 1's txn at 0
	wantLSO(t, p, 0)
	mustAppend(t, p, producerBatch(2, 0, 0, 1, recent)) // 2, idempotent
	mustAppend(t, p, txnDataBatch(3, 0, 0, 1))          // 3, opens pid 3's txn at 3
	wantLSO(t, p, 0)
	if r := mustMarker(t, p, 1, false); r.BaseOffset != 4 { // ABORT pid 1 at 4
		t.Fatalf("marker at %d, want 4", r.BaseOffset)
	}
	wantLSO(t, p, 3)
	mustMarker(t, p, 3, true) // COMMIT pid 3 at 5
	wantLSO(t, p, 6)
	mustAppend(t, p, txnDataBatch(1, 0, 2, 1)) // 6
	wantLSO(t, p, 6)
	mustMarker(t, p, 1, false) // ABORT at 7, none other open
	wantLSO(t, p, 8)
	return []segment.AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 4, LastStableOffset: 3},
		{ProducerID: 1, FirstOffset: 6, LastOffset: 7, LastStableOffset: 8},
	}
}

func txnIndexBytes(entries []segment.AbortedTxn) []byte {
	var b []byte
	for _, e := range entries {
		b = segment.AppendTxnEntry(b, e)
	}
	return b
}

func TestTxnLastStableOffsetAndIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "txn", 0)
	want := txnWorkload(t, p)

	got, err := p.AbortedTransactions(0, p.LastStableOffset())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AbortedTransactions(0, 8) = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		from, to int64
		want     []segment.AbortedTxn
	}{
		{0, 3, want[:1]}, {5, 8, want[1:]}, {5, 6, nil}, {4, 7, want}, {8, 8, nil},
	} {
		got, err := p.AbortedTransactions(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("AbortedTransactions(%d, %d) = %+v, want %+v", c.from, c.to, got, c.want)
		}
	}

	// The bytes as Kafka writes them: int16 version 0, then pid, first,
	// last and last stable offset as big-endian int64s.
	name := filepath.Join(dir, "txn-0", "00000000000000000000.txnindex")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	first := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 3}
	if !bytes.Equal(data, txnIndexBytes(want)) || !bytes.HasPrefix(data, first) {
		t.Fatalf(".txnindex = % x", data)
	}

	// kafka-dump-log.sh's lines for it.
	var out, errOut bytes.Buffer
	if err := kafkadump.Dump(&out, &errOut, []string{name}, kafkadump.Options{}); err != nil {
		t.Fatal(err, errOut.String())
	}
	for _, line := range []string{
		"version: 0 producerId: 1 firstOffset: 0 lastOffset: 4 lastStableOffset: 3\n",
		"version: 0 producerId: 1 firstOffset: 6 lastOffset: 7 lastStableOffset: 8\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("dump lacks %q:\n%s", line, out.String())
		}
	}

	// The markers in the .log's dump.
	out.Reset()
	logName := filepath.Join(dir, "txn-0", "00000000000000000000.log")
	if err := kafkadump.Dump(&out, &errOut, []string{logName}, kafkadump.Options{DeepIteration: true, MaxBytes: 1 << 30}); err != nil {
		t.Fatal(err, errOut.String())
	}
	for _, s := range []string{
		"baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true",
		"| offset: 4 ", " endTxnMarker: ABORT coordinatorEpoch: 5",
		"| offset: 5 ", " endTxnMarker: COMMIT coordinatorEpoch: 5",
	} {
		if !strings.Contains(out.String(), s) {
			fi, _ := os.Stat(logName)
			t.Errorf("log dump (%d bytes) lacks %q:\n%s\n%s", fi.Size(), s, out.String(), errOut.String())
		}
	}

	// A reopen keeps the index and the LSO.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = openPartition(t, s, "txn", 0)
	wantLSO(t, p, 8)
	mustAppend(t, p, txnDataBatch(3, 0, 1, 1)) // 8
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p = openPartition(t, s, "txn", 0)
	wantLSO(t, p, 8)
	if got, _ := p.AbortedTransactions(0, 9); !slices.Equal(got, want) {
		t.Fatalf("after reopen: %+v", got)
	}
}

// TestTxnIndexAcrossSegments: an ABORT's entry goes to the segment that
// holds the marker, with the first offset in an earlier one; a query from
// an offset of the later segment still finds it.
func TestTxnIndexAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{SegmentBytes: 200})
	p := openPartition(t, s, "txn", 0)
	mustAppend(t, p, txnDataBatch(1, 0, 0, 1))
	for seq := int32(0); len(txnSegmentBases(t, p, dir)) < 3; seq++ {
		mustAppend(t, p, producerBatch(2, 0, seq, 1, recent))
	}
	wantLSO(t, p, 0)
	m := mustMarker(t, p, 1, false)
	segs := txnSegmentBases(t, p, dir)
	last := segs[len(segs)-1]
	want := []segment.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: m.LastOffset, LastStableOffset: m.LastOffset + 1}}
	data, err := os.ReadFile(filepath.Join(dir, "txn-0", fmt.Sprintf("%020d.txnindex", last)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, txnIndexBytes(want)) {
		t.Fatalf(".txnindex of segment %d = % x", last, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "txn-0", "00000000000000000000.txnindex")); !os.IsNotExist(err) {
		t.Fatalf("segment 0 has a .txnindex: %v", err)
	}
	got, err := p.AbortedTransactions(segs[1], m.LastOffset+1)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("AbortedTransactions = %+v, %v", got, err)
	}
}

// TestTxnIndexRecovery: after a crash, a .txnindex that is missing,
// damaged, torn, or holds an entry whose marker the log lost, is rebuilt
// from the log; the open transactions (and so the LSO) too.
func TestTxnIndexRecovery(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, name string)
	}{
		{"intact", func(*testing.T, string) {}},
		{"missing", func(t *testing.T, name string) {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		}},
		{"bad version", func(t *testing.T, name string) { patch(t, name, 0, []byte{1}) }},
		{"torn entry", func(t *testing.T, name string) {
			appendFile(t, name, []byte{0, 0, 0, 0, 0, 0, 0, 0, 9})
		}},
		{"entry past the log end", func(t *testing.T, name string) {
			appendFile(t, name, segment.AppendTxnEntry(nil, segment.AbortedTxn{ProducerID: 9, FirstOffset: 20, LastOffset: 30, LastStableOffset: 31}))
		}},
		{"wrong lso", func(t *testing.T, name string) { patch(t, name, 33, []byte{7}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, logstore.Options{})
			p := openPartition(t, s, "txn", 0)
			want := txnWorkload(t, p)
			mustAppend(t, p, txnDataBatch(3, 0, 1, 1)) // 8: open at the crash
			killed := killedCopy(t, s, p, dir)
			name := filepath.Join(killed, "txn-0", "00000000000000000000.txnindex")
			c.spoil(t, name)
			s2 := openStore(t, killed, logstore.Options{})
			p2 := openPartition(t, s2, "txn", 0)
			wantLSO(t, p2, 8)
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, txnIndexBytes(want)) {
				t.Fatalf(".txnindex after recovery = % x", data)
			}
			mustMarker(t, p2, 3, false)
			wantLSO(t, p2, 10)
		})
	}
}

// TestTxnIndexCutWithLog: a crash that tears the ABORT marker off the log
// leaves no entry for it.
func TestTxnIndexCutWithLog(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "txn", 0)
	want := txnWorkload(t, p)
	killed := killedCopy(t, s, p, dir)
	logName := filepath.Join(killed, "txn-0", "00000000000000000000.log")
	fi, err := os.Stat(logName)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logName, fi.Size()-5); err != nil { // into the last marker
		t.Fatal(err)
	}
	s2 := openStore(t, killed, logstore.Options{})
	p2 := openPartition(t, s2, "txn", 0)
	if p2.EndOffset() != 7 {
		t.Fatalf("end %d, want 7", p2.EndOffset())
	}
	wantLSO(t, p2, 6) // pid 1's second transaction is open again
	got, err := p2.AbortedTransactions(0, 7)
	if err != nil || !slices.Equal(got, want[:1]) {
		t.Fatalf("AbortedTransactions = %+v, %v", got, err)
	}
}

// TestTxnIndexKafkaGolden: the .txnindex Kafka wrote decodes and encodes
// back to the same bytes.
func TestTxnIndexKafkaGolden(t *testing.T) {
	name := testutil.SharedFile(t, "kafka-golden/foo-0/00000000000000000000.txnindex")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	entries, whole, err := segment.ParseTxnIndex(name, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if whole != int64(len(data)) || !bytes.Equal(txnIndexBytes(entries), data) {
		t.Fatalf("re-encoded % x, want % x", txnIndexBytes(entries), data)
	}
	if want := (segment.AbortedTxn{ProducerID: 5, FirstOffset: 12, LastOffset: 16, LastStableOffset: 8}); entries[0] != want {
		t.Fatalf("first entry %+v, want %+v", entries[0], want)
	}
}

func patch(t *testing.T, name string, pos int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, name string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// txnSegmentBases lists the base offsets of partition txn-0's segments,
// once p's flushes are done: a roll's files get their segment names in
// the flush, so before it the newest segment may still be a spare.
func txnSegmentBases(t *testing.T, p *logstore.Partition, dir string) []int64 {
	t.Helper()
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "txn-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		var b int64
		if _, err := fmt.Sscanf(filepath.Base(n), "%020d.log", &b); err != nil {
			t.Fatal(err)
		}
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases
}

// TestCheckTxnIndex: check finds nothing wrong with the .txnindex files
// logstore writes, also across segments and with a snapshot at each roll,
// and reports an INDEX problem for one that disagrees with the log.
func TestCheckTxnIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{SegmentBytes: 300})
	p := openPartition(t, s, "txn", 0)
	txnWorkload(t, p)
	mustAppend(t, p, txnDataBatch(3, 0, 1, 1))
	for seq := int32(1); len(txnSegmentBases(t, p, dir)) < 3; seq++ {
		mustAppend(t, p, producerBatch(2, 0, seq, 1, recent))
	}
	mustMarker(t, p, 3, false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := chkRun(t, dir)
	chkNoProblems(t, got, stats)

	files, err := filepath.Glob(filepath.Join(dir, "txn-0", "*.txnindex"))
	if err != nil || len(files) < 2 {
		t.Fatalf("txnindex files %v, %v", files, err)
	}
	patch(t, files[len(files)-1], 33, []byte{0x55}) // the last stable offset
	patch(t, files[0], 1, []byte{1})                // version 1
	got, _ = chkRun(t, dir)
	if len(got) != 2 || got[0].Kind != logstore.ProblemIndex || got[1].Kind != logstore.ProblemIndex {
		t.Fatalf("problems:\n%s", chkText(got))
	}
	if !strings.Contains(chkText(got), "version") || !strings.Contains(chkText(got), "ABORT markers give") {
		t.Fatalf("problems:\n%s", chkText(got))
	}

	// The next open rebuilds both (the one below the snapshot by a full
	// replay), and check is content again.
	s = openStore(t, dir, logstore.Options{SegmentBytes: 300})
	p = openPartition(t, s, "txn", 0)
	if rep := p.Recovery(); len(rep.DamagedTxnIndexes) != 1 {
		t.Fatalf("DamagedTxnIndexes = %v", rep.DamagedTxnIndexes)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats = chkRun(t, dir)
	chkNoProblems(t, got, stats)
}

// TestTxnKafkaRecoveryScenario is Kafka's testFullTransactionIndexRecovery
// (and testRecoverOnlyLastSegment, testRecoverLastSegmentWithNoSnapshots):
// four producers' transactions interleaved with plain data over several
// segments. The live index, and the one rebuilt after a crash with the
// index files (and the snapshots) deleted, are exactly Kafka's:
// AbortedTxn(pid 1, 0, 29, lso 8) and AbortedTxn(pid 2, 8, 74, lso 36).
func TestTxnKafkaRecoveryScenario(t *testing.T) {
	want := []segment.AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 29, LastStableOffset: 8},
		{ProducerID: 2, FirstOffset: 8, LastOffset: 74, LastStableOffset: 36},
	}
	for _, c := range []struct {
		name          string
		lastOnly      bool // delete only the last segment's .txnindex
		dropSnapshots bool
	}{
		{"all deleted, no snapshots", false, true},
		{"last segment's deleted", true, false},
		{"last segment's deleted, no snapshots", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, logstore.Options{SegmentBytes: 640})
			p := openPartition(t, s, "txn", 0)
			seqs := map[int64]int32{}
			txn := func(pid int64, n int, wantEnd int64) {
				t.Helper()
				mustAppend(t, p, txnDataBatch(pid, 0, seqs[pid], n))
				seqs[pid] += int32(n)
				if p.EndOffset() != wantEnd {
					t.Fatalf("end %d, want %d", p.EndOffset(), wantEnd)
				}
			}
			plain := func(n int, wantEnd int64) {
				t.Helper()
				vals := make([]string, n)
				for i := range vals {
					vals[i] = fmt.Sprint("plain ", i)
				}
				mustAppend(t, p, batchOf(vals...))
				if p.EndOffset() != wantEnd {
					t.Fatalf("end %d, want %d", p.EndOffset(), wantEnd)
				}
			}
			marker := func(pid int64, commit bool, wantEnd int64) {
				t.Helper()
				mustMarker(t, p, pid, commit)
				if p.EndOffset() != wantEnd {
					t.Fatalf("end %d, want %d", p.EndOffset(), wantEnd)
				}
			}
			txn(1, 5, 5)
			plain(3, 8)
			txn(2, 2, 10)
			txn(1, 4, 14)
			txn(3, 3, 17)
			plain(2, 19)
			txn(1, 10, 29)
			marker(1, false, 30)
			txn(2, 6, 36)
			txn(4, 3, 39)
			plain(10, 49)
			txn(3, 9, 58)
			marker(3, true, 59)
			txn(4, 8, 67)
			txn(2, 7, 74)
			marker(2, false, 75)
			plain(10, 85)
			txn(4, 4, 89)
			marker(4, true, 90)
			wantLSO(t, p, 90)
			if got, err := p.AbortedTransactions(0, 90); err != nil || !slices.Equal(got, want) {
				t.Fatalf("live: %+v, %v", got, err)
			}
			bases := txnSegmentBases(t, p, dir)
			if len(bases) < 3 {
				t.Fatalf("segments %v", bases)
			}
			killed := killedCopy(t, s, p, dir)
			pdir := filepath.Join(killed, "txn-0")
			files, _ := filepath.Glob(filepath.Join(pdir, "*.txnindex"))
			for _, f := range files {
				if c.lastOnly && f != filepath.Join(pdir, fmt.Sprintf("%020d.txnindex", bases[len(bases)-1])) {
					continue
				}
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			if c.dropSnapshots {
				if err := os.Remove(filepath.Join(pdir, "producer-snapshots.db")); err != nil {
					t.Fatal(err)
				}
			}
			s2 := openStore(t, killed, logstore.Options{SegmentBytes: 5120})
			p2 := openPartition(t, s2, "txn", 0)
			if got, err := p2.AbortedTransactions(0, 90); err != nil || !slices.Equal(got, want) {
				t.Fatalf("rebuilt: %+v, %v", got, err)
			}
			wantLSO(t, p2, 90)
		})
	}
}

// TestAppendMarkerRules: markers are checked as Kafka's appendEndTxnMarker
// checks them; a marker that ends no transaction writes no .txnindex
// entry; clients still may not send control batches.
func TestAppendMarkerRules(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{Sync: logstore.SyncNever})
	p := openPartition(t, s, "txn", 0)

	// No transaction open (an unknown producer): the marker is written,
	// no entry.
	mustMarker(t, p, 7, false)
	if got, _ := p.AbortedTransactions(0, 10); len(got) != 0 {
		t.Fatalf("entries %+v", got)
	}

	mustAppend(t, p, txnDataBatch(1, 3, 0, 1)) // 1, epoch 3
	if _, err := p.AppendMarker(1, 2, false, 5); !errors.Is(err, logstore.ErrFenced) {
		t.Fatalf("older producer epoch: %v", err)
	}
	mustMarker3 := func(coord int32) error { _, err := p.AppendMarker(1, 3, true, coord); return err }
	if err := mustMarker3(5); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, p, txnDataBatch(1, 3, 1, 1)) // 3
	if err := mustMarker3(4); !errors.Is(err, logstore.ErrFenced) {
		t.Fatalf("older coordinator epoch: %v", err)
	}
	wantLSO(t, p, 3)
	if p.EndOffset() != 4 {
		t.Fatalf("refused markers moved the end to %d", p.EndOffset())
	}

	// A client's control batch is refused.
	b, err := recordbatch.AppendEndTxnBatch(nil, 0, recent, -1, 1, 3, recordbatch.EndTxnMarker{Type: recordbatch.ControlAbort, CoordinatorEpoch: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(b); !errors.Is(err, logstore.ErrInvalidBatch) {
		t.Fatalf("client marker: %v", err)
	}
	wantLSO(t, p, 3)
}

// TestTxnIndexRetention: retention deletes a segment's .txnindex with it.
func TestTxnIndexRetention(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{SegmentBytes: 300, RetentionBytes: 600})
	p := openPartition(t, s, "txn", 0)
	mustAppend(t, p, txnDataBatch(1, 0, 0, 1))
	mustMarker(t, p, 1, false)
	mustAppend(t, p, txnDataBatch(3, 0, 0, 1)) // 2, left open
	first := filepath.Join(dir, "txn-0", "00000000000000000000.txnindex")
	if _, err := os.Stat(first); err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); p.StartOffset() == 0; seq++ {
		mustAppend(t, p, producerBatch(2, 0, seq, 1, recent))
		if err := p.Flushed(); err != nil {
			t.Fatal(err)
		}
		if seq > 100 {
			t.Fatal("retention never moved the log start")
		}
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Fatalf("the .txnindex outlived its segment: %v", err)
	}
	// The open transaction began below the log start: the LSO is the
	// log start, as in Kafka.
	wantLSO(t, p, p.StartOffset())
	if got, err := p.AbortedTransactions(0, p.EndOffset()); err != nil || len(got) != 0 {
		t.Fatalf("%+v, %v", got, err)
	}
}

// BenchmarkLastStableOffset: the LSO with 100 transactions open, as a
// fetch reads it.
func BenchmarkLastStableOffset(b *testing.B) {
	s, err := logstore.Open(b.TempDir(), logstore.Options{Sync: logstore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("txn", 0)
	if err != nil {
		b.Fatal(err)
	}
	for pid := int64(1); pid <= 100; pid++ {
		if _, err := p.Append(txnDataBatch(pid, 0, 0, 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if p.LastStableOffset() != 0 {
			b.Fatal("LSO moved")
		}
	}
}

// BenchmarkAppendMarker: a transaction of one batch ended by an ABORT
// marker (the marker synced, its .txnindex entry written and synced), or
// by a COMMIT, under SyncNever for the data.
func BenchmarkAppendMarker(b *testing.B) {
	for _, commit := range []bool{true, false} {
		b.Run(fmt.Sprintf("commit=%v", commit), func(b *testing.B) {
			s, err := logstore.Open(b.TempDir(), logstore.Options{Sync: logstore.SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			p, err := s.Partition("txn", 0)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				if _, err := p.Append(txnDataBatch(1, 0, int32(i), 1)); err != nil {
					b.Fatal(err)
				}
				if _, err := p.AppendMarker(1, 0, commit, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLSONeverPassesUndecidedTxn: the last stable offset never covers a
// batch of a transaction whose marker is not below the high watermark:
// not for the moment between the batch's write (which DurableEnd covers
// at once under SyncNever, at the next group commit under SyncAlways)
// and the producer state's update, and not between its marker's write
// and the marker's fsync (Kafka keeps such a transaction unstable until
// its marker is replicated). One producer writes transactions of one
// data batch and its marker, so the data batches are at even offsets and
// the markers at odd ones, and the LSO is always even; a reader reads it
// without pause meanwhile.
func TestLSONeverPassesUndecidedTxn(t *testing.T) {
	for _, mode := range []logstore.SyncMode{logstore.SyncNever, logstore.SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), logstore.Options{Sync: mode})
			p := openPartition(t, s, "race", 0)
			var stop atomic.Bool
			var bad atomic.Int64
			bad.Store(-1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if lso := p.LastStableOffset(); lso%2 != 0 {
						bad.CompareAndSwap(-1, lso)
					}
				}
			}()
			const txns = 200
			for i := range txns {
				mustAppend(t, p, txnDataBatch(1, 0, int32(i), 1))
				mustMarker(t, p, 1, i%2 == 0)
				if bad.Load() >= 0 {
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			if lso := bad.Load(); lso >= 0 {
				t.Fatalf("LastStableOffset %d: past the batch at %d, whose marker was not durable", lso, lso-1)
			}
		})
	}
}

// TestReadStable: reads stop below the last stable offset, and at least
// the batch holding the offset comes back whole; from the LSO up to the
// high watermark nothing and no error; above the high watermark
// ErrOffsetOutOfRange.
func TestReadStable(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "stable", 0)
	mustAppend(t, p, producerBatch(-1, -1, -1, 2, recent)) // 0..1
	mustAppend(t, p, txnDataBatch(1, 0, 0, 2))             // 2..3, open
	mustAppend(t, p, producerBatch(-1, -1, -1, 1, recent)) // 4
	data, hwm, lso, err := p.ReadStable(0, 1<<20)
	if err != nil || hwm != 5 || lso != 2 {
		t.Fatalf("ReadStable(0) = hwm %d lso %d, %v", hwm, lso, err)
	}
	if got := batchBases(t, data); !slices.Equal(got, []int64{0}) {
		t.Fatalf("ReadStable(0) read batches at %v, want [0]", got)
	}
	if data, _, _, err = p.ReadStable(1, 1); err != nil || !slices.Equal(batchBases(t, data), []int64{0}) {
		t.Fatalf("ReadStable(1, 1 byte) read %v, %v; want the batch at 0 whole", batchBases(t, data), err)
	}
	for _, off := range []int64{2, 3, 4, 5} {
		if data, _, _, err := p.ReadStable(off, 1<<20); err != nil || len(data) != 0 {
			t.Fatalf("ReadStable(%d) = %d bytes, %v; want nothing", off, len(data), err)
		}
	}
	if _, _, _, err := p.ReadStable(6, 1<<20); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("ReadStable(6) = %v, want ErrOffsetOutOfRange", err)
	}
	mustMarker(t, p, 1, false) // 5
	data, hwm, lso, err = p.ReadStable(0, 1<<20)
	if err != nil || hwm != 6 || lso != 6 || !slices.Equal(batchBases(t, data), []int64{0, 2, 4, 5}) {
		t.Fatalf("after the marker: batches %v, hwm %d lso %d, %v", batchBases(t, data), hwm, lso, err)
	}
}

func batchBases(t *testing.T, data []byte) []int64 {
	t.Helper()
	var bases []int64
	for len(data) > 0 {
		b, err := recordbatch.Parse(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, b.BaseOffset())
		data = data[b.Size():]
	}
	return bases
}

// TestOpenTransactions: a transactional batch opens its producer's
// transaction at its base offset, a later batch of the same transaction
// leaves the first offset as it is, and the producer's marker ends it;
// OpenTransaction answers the same as the map OpenTransactions returns,
// and that map is the caller's own.
func TestOpenTransactions(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "open", 0)
	want := func(what string, open map[int64]int64) {
		t.Helper()
		got := p.OpenTransactions()
		if !maps.Equal(got, open) {
			t.Fatalf("%s: OpenTransactions() = %v, want %v", what, got, open)
		}
		for _, pid := range []int64{1, 2, 3} {
			first, ok := p.OpenTransaction(pid)
			if wantFirst, wantOK := open[pid]; first != wantFirst || ok != wantOK {
				t.Fatalf("%s: OpenTransaction(%d) = %d, %v; want %d, %v", what, pid, first, ok, wantFirst, wantOK)
			}
		}
		clear(got)
	}
	want("empty", map[int64]int64{})
	mustAppend(t, p, producerBatch(-1, -1, -1, 1, recent)) // 0
	mustAppend(t, p, txnDataBatch(1, 0, 0, 2))             // 1..2
	mustAppend(t, p, txnDataBatch(2, 0, 0, 1))             // 3
	mustAppend(t, p, txnDataBatch(1, 0, 2, 1))             // 4
	want("two open", map[int64]int64{1: 1, 2: 3})
	mustMarker(t, p, 1, true) // 5
	want("1 committed", map[int64]int64{2: 3})
	mustAppend(t, p, txnDataBatch(1, 0, 3, 1)) // 6
	want("1 again", map[int64]int64{1: 6, 2: 3})
	mustMarker(t, p, 2, false)
	mustMarker(t, p, 1, false)
	want("both aborted", map[int64]int64{})
}
