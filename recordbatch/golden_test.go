package recordbatch_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/logstore/logstore/recordbatch"
)

const goldenT = 1700000000000 // base timestamp of the kafka-golden fixtures

// goldenSection returns the lines of one "=== title ===" section of
// kafka-golden/golden-output.txt.
func goldenSection(t *testing.T, title string) []string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(readShared(t, "kafka-golden/golden-output.txt")))
	var lines []string
	in := false
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "=== ") {
			if in {
				break
			}
			in = strings.HasPrefix(l, "=== "+title+" ")
			continue
		}
		if in {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("section %q not found in golden-output.txt", title)
	}
	return lines
}

// goldenHex decodes a HEX section ("0000: 00 11 ..." lines).
func goldenHex(t *testing.T, title string) []byte {
	t.Helper()
	var out []byte
	for _, l := range goldenSection(t, title) {
		_, rest, ok := strings.Cut(l, ": ")
		if !ok || len(l) < 4 || strings.ContainsAny(l[:4], " .") {
			continue
		}
		b, err := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		if err != nil {
			t.Fatalf("hex line %q: %v", l, err)
		}
		out = append(out, b...)
	}
	return out
}

// describe prints a batch and its records the way kafka-dump-log.sh
// --print-data-log does, from the fields this package decodes. It lets
// the test compare every decoded field with what Kafka's own code printed.
func describe(t *testing.T, b recordbatch.Batch, pos int) []string {
	t.Helper()
	a := b.Attributes()
	valid := b.Validate() == nil
	lines := []string{fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: OptionalLong.empty position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t",
		b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(), b.PartitionLeaderEpoch(),
		a.Transactional(), a.Control(), pos, a.TimestampType(), b.MaxTimestamp(), b.Size(), b.Magic(), a.Codec(), b.CRC(), valid)}
	var r recordbatch.RecordReader
	if err := r.Reset(b, 0); err != nil {
		t.Fatalf("batch at %d: %v", pos, err)
	}
	for r.Next() {
		rec := r.Record()
		var keys []string
		for _, h := range rec.Headers {
			keys = append(keys, string(h.Key))
		}
		l := fmt.Sprintf("| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			rec.Offset, a.TimestampType(), rec.Timestamp, size(rec.Key), size(rec.Value), rec.Sequence, strings.Join(keys, ","))
		if a.Control() {
			m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
			if err != nil {
				t.Fatalf("marker at offset %d: %v", rec.Offset, err)
			}
			l += fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", m.Type, m.CoordinatorEpoch)
		} else {
			if rec.Key != nil {
				l += " key: " + string(rec.Key)
			}
			if rec.Value != nil {
				l += " payload: " + string(rec.Value)
			}
		}
		lines = append(lines, l)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("batch at %d: %v", pos, err)
	}
	return lines
}

func size(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// TestGoldenDecode decodes the 11 batches Kafka's own classes wrote and
// checks every header field, record, header key, marker and sequence
// against the text Kafka's dump tool printed for them.
func TestGoldenDecode(t *testing.T) {
	want := goldenSection(t, "dump --print-data-log")
	want = want[2:] // "Dumping ..." and "Log starting offset: 0"
	for len(want) > 0 && strings.HasPrefix(want[len(want)-1], "[stderr]") {
		want = want[:len(want)-1]
	}
	batches, positions := splitBatches(t, readShared(t, "kafka-golden/foo-0/00000000000000000000.log"))
	if len(batches) != 11 {
		t.Fatalf("got %d batches, want 11", len(batches))
	}
	var got []string
	for i, b := range batches {
		if err := b.Validate(); err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
		got = append(got, describe(t, b, positions[i])...)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestGoldenEncode builds batches 0, 3, 5, 7 and 8 from the same inputs
// Kafka's MemoryRecordsBuilder got and expects exactly its bytes.
func TestGoldenEncode(t *testing.T) {
	type rec struct {
		ts         int64
		key, value []byte
		headers    []recordbatch.RecordHeader
	}
	cases := []struct {
		title   string
		setup   func(b *recordbatch.Builder)
		records []rec
	}{
		{"batch 0", func(b *recordbatch.Builder) { b.PartitionLeaderEpoch = 0 },
			[]rec{{goldenT, nil, []byte("a"), nil}, {goldenT + 1, nil, []byte("b"), nil}}},
		{"batch 3", func(b *recordbatch.Builder) {
			b.BaseOffset, b.PartitionLeaderEpoch = 7, 3
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = 29342342, 15, 234123
		}, []rec{{goldenT + 7, nil, []byte("h"), nil}}},
		{"batch 7", func(b *recordbatch.Builder) { b.BaseOffset, b.PartitionLeaderEpoch = 14, 7 },
			[]rec{{goldenT + 14, []byte("k"), []byte("v"), []recordbatch.RecordHeader{{Key: []byte("h1"), Value: []byte("x")}, {Key: []byte("h2")}}}}},
		{"batch 8", func(b *recordbatch.Builder) {
			b.BaseOffset, b.PartitionLeaderEpoch = 15, 7
			b.TimestampType, b.LogAppendTime = recordbatch.LogAppendTime, goldenT+100
		}, []rec{{goldenT + 15, []byte("la"), []byte("lv"), nil}}},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			b := recordbatch.NewBuilder(0)
			c.setup(b)
			for _, r := range c.records {
				if err := b.Append(r.ts, r.key, r.value, r.headers); err != nil {
					t.Fatal(err)
				}
			}
			got, err := b.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := goldenHex(t, "HEX "+c.title); !bytes.Equal(got, want) {
				t.Errorf("bytes differ\n got %x\nwant %x", got, want)
			}
		})
	}
	t.Run("batch 5", func(t *testing.T) {
		got, err := recordbatch.AppendEndTxnBatch(nil, 10, goldenT+10, 7, 98323, 99,
			recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit, CoordinatorEpoch: 100})
		if err != nil {
			t.Fatal(err)
		}
		if want := goldenHex(t, "HEX batch 5"); !bytes.Equal(got, want) {
			t.Errorf("bytes differ\n got %x\nwant %x", got, want)
		}
	})
}

// TestReencodeUncompressed rebuilds every uncompressed batch of every
// segment written by Kafka or a Kafka client from its decoded fields and
// expects the original bytes: the encoder writes what Kafka writes.
func TestReencodeUncompressed(t *testing.T) {
	for _, file := range allSharedLogs(t) {
		// sarama's vectors are hand-written in its tests (maxTimestamp 0,
		// for one), not what any builder produces.
		if isKnownAnomaly(file) || strings.Contains(file, "vectors/sarama/") {
			continue
		}
		batches, positions := splitBatchesLenient(t, readShared(t, file))
		n := 0
		for i, b := range batches {
			// Builder makes batches of records; an empty batch (what
			// compaction may leave) has nothing to rebuild.
			if b.Attributes().Codec() != recordbatch.CodecNone || b.Validate() != nil || b.NumRecords() == 0 {
				continue
			}
			got := rebuild(t, b)
			if !bytes.Equal(got, b) {
				t.Errorf("%s batch at %d: re-encoded bytes differ\n got %x\nwant %x", file, positions[i], got, []byte(b))
			}
			n++
		}
		t.Logf("%s: %d uncompressed batches re-encoded", file, n)
	}
}

// rebuild decodes b and encodes it again with Builder and the same codec.
func rebuild(t *testing.T, b recordbatch.Batch) []byte {
	t.Helper()
	recs, err := b.DecodeRecords(0)
	if err != nil {
		t.Fatal(err)
	}
	bl := recordbatch.NewBuilder(b.BaseOffset())
	a := b.Attributes()
	bl.PartitionLeaderEpoch = b.PartitionLeaderEpoch()
	bl.Compression = a.Codec()
	bl.TimestampType = a.TimestampType()
	bl.LogAppendTime = b.MaxTimestamp()
	bl.Transactional, bl.Control = a.Transactional(), a.Control()
	bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	for _, r := range recs {
		if err := bl.AppendWithOffset(r.Offset, b.BaseTimestamp()+r.TimestampDelta, r.Key, r.Value, r.Headers); err != nil {
			t.Fatal(err)
		}
	}
	out, err := bl.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLeaderEpochOutsideCRC: restamping the partition leader epoch or the
// base offset keeps a batch valid; flipping any byte from 21 on breaks it.
func TestLeaderEpochOutsideCRC(t *testing.T) {
	data := readShared(t, "kafka-golden/foo-0/00000000000000000000.log")
	batches, _ := splitBatches(t, bytes.Clone(data))
	for i, b := range batches {
		b.SetPartitionLeaderEpoch(b.PartitionLeaderEpoch() + 1000)
		b.SetBaseOffset(b.BaseOffset() + 1<<40)
		if err := b.Validate(); err != nil {
			t.Fatalf("batch %d after restamping: %v", i, err)
		}
		for pos := 21; pos < len(b); pos++ {
			b[pos] ^= 0x01
			err := b.Validate()
			b[pos] ^= 0x01
			if !errors.Is(err, recordbatch.ErrCRC) || !errors.Is(err, recordbatch.ErrCorrupt) {
				t.Fatalf("batch %d, byte %d flipped: got %v, want ErrCRC", i, pos, err)
			}
			var ce *recordbatch.CorruptionError
			if !errors.As(err, &ce) || ce.Offset != 17 {
				t.Fatalf("batch %d, byte %d flipped: want a CorruptionError at byte 17, got %#v", i, pos, err)
			}
		}
	}
}

// TestGoldenBadCRC: in crc-0 a value byte of batch 0 was flipped after
// Kafka wrote it; batch 1 is intact.
func TestGoldenBadCRC(t *testing.T) {
	batches, _ := splitBatches(t, readShared(t, "kafka-golden/crc-0/00000000000000000000.log"))
	if len(batches) != 2 {
		t.Fatalf("got %d batches, want 2", len(batches))
	}
	err := batches[0].Validate()
	if !errors.Is(err, recordbatch.ErrCRC) {
		t.Fatalf("batch 0: got %v, want ErrCRC", err)
	}
	if want := "stored crc = 655565938"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if err := batches[1].Validate(); err != nil {
		t.Fatalf("batch 1: %v", err)
	}
}

// TestGoldenTornTail: the torn copy of the log parses up to its last batch,
// which is reported as truncated.
func TestGoldenTornTail(t *testing.T) {
	data := readShared(t, "kafka-golden/torn-0/00000000000000000000.log")
	pos, n := 0, 0
	for {
		b, err := recordbatch.Parse(data[pos:], 0)
		if err != nil {
			if !errors.Is(err, recordbatch.ErrTruncated) {
				t.Fatalf("at byte %d: got %v, want ErrTruncated", pos, err)
			}
			break
		}
		pos += b.Size()
		n++
	}
	if n != 10 || len(data)-pos != 35 {
		t.Fatalf("got %d whole batches and %d trailing bytes, want 10 and 35", n, len(data)-pos)
	}
}
