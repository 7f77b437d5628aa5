package segment_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/segment"
)

// TestKafkaDirectory opens a copy of a partition directory that Kafka's
// own classes wrote (an untrimmed, preallocated index included): it is
// recovered like any unclean directory, reads return its batches, and
// appends continue at its log end, 21, across its offset gap 16 → 20.
func TestKafkaDirectory(t *testing.T) {
	dir := copyShared(t, "kafka-golden/foo-0", "00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex")
	l, rep := open(t, dir, segment.Config{})
	if rep.Clean || rep.TruncatedBytes != 0 || len(rep.ScannedSegments) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if l.StartOffset() != 0 || l.EndOffset() != 21 {
		t.Fatalf("offsets [%d, %d), want [0, 21)", l.StartOffset(), l.EndOffset())
	}
	got := readAll(t, l)
	if len(got) != 11 || got[10].BaseOffset() != 20 {
		t.Fatalf("read %d batches", len(got))
	}
	data, err := l.Read(17, 1)
	if err != nil || len(data) == 0 {
		t.Fatalf("read in the gap: %v", err)
	}
	info, err := l.Append(batch(t, 2, 10, 1700000000100))
	if err != nil || info.BaseOffset != 21 || info.LastOffset != 22 {
		t.Fatalf("append: %+v %v", info, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rep = open(t, dir, segment.Config{})
	defer l.Close()
	if !rep.Clean || l.EndOffset() != 23 {
		t.Fatalf("reopen: %+v end %d", rep, l.EndOffset())
	}
}

// TestIndexesMatchKafka rebuilds the indexes of Kafka's golden log with an
// index interval that reproduces Kafka's golden .index (any of 97..149
// bytes does) and compares both index files entry for entry with Kafka's,
// whose preallocated zero tails are not entries.
func TestIndexesMatchKafka(t *testing.T) {
	wantIndex := readTrimmed(t, "kafka-golden/foo-0/00000000000000000000.index", 8)
	wantTime := readTrimmed(t, "kafka-golden/foo-0/00000000000000000000.timeindex", 12)
	if len(wantIndex) != 5*8 || len(wantTime) != 4*12 {
		t.Fatalf("golden: %d index bytes, %d time index bytes", len(wantIndex), len(wantTime))
	}
	for _, interval := range []int{97, 120, 149} {
		dir := copyShared(t, "kafka-golden/foo-0", "00000000000000000000.log")
		l, _ := open(t, dir, segment.Config{IndexIntervalBytes: interval})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			suffix string
			want   []byte
		}{{".index", wantIndex}, {".timeindex", wantTime}} {
			got, err := os.ReadFile(filepath.Join(dir, "00000000000000000000"+c.suffix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("interval %d: %s\n got %x\nwant %x", interval, c.suffix, got, c.want)
			}
		}
	}
}

// readTrimmed reads a Kafka index file and drops its preallocated tail:
// the entries after the first whose relative offset is 0.
func readTrimmed(t *testing.T, rel string, entry int) []byte {
	data, err := os.ReadFile(testutil.SharedFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	offAt := entry - 4 // the relative offset is the last 4 bytes of a time entry, the first 4 of an offset entry
	if entry == 8 {
		offAt = 0
	}
	for i := entry; i+entry <= len(data); i += entry {
		if bytes.Equal(data[i+offAt:i+offAt+4], []byte{0, 0, 0, 0}) {
			return data[:i]
		}
	}
	return data
}
