package logstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/kafkaexport"
)

// TestLeaderEpochsNative: a partition of logstore's own has no epochs
// while empty and then epoch 0 from the log start, which DeleteRecords
// moves.
func TestLeaderEpochsNative(t *testing.T) {
	s := openStore(t, t.TempDir(), logstore.Options{})
	p := openPartition(t, s, "t", 0)
	if got := p.LeaderEpochs(); got != nil {
		t.Fatalf("empty partition: epochs %v", got)
	}
	if e, o := p.EndOffsetForEpoch(0); e != -1 || o != -1 {
		t.Fatalf("empty partition, epoch 0: (%d, %d), want (-1, -1)", e, o)
	}
	for range 5 {
		if _, err := p.Append(batchOf("a")); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := p.LeaderEpochs(), []logstore.EpochEntry{{0, 0}}; !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if got := p.EpochOf(4); got != 0 {
		t.Errorf("EpochOf(4) = %d, want 0", got)
	}
	if _, err := p.DeleteRecords(3); err != nil {
		t.Fatal(err)
	}
	if got, want := p.LeaderEpochs(), []logstore.EpochEntry{{0, 3}}; !slices.Equal(got, want) {
		t.Fatalf("after DeleteRecords(3): epochs %v, want %v", got, want)
	}
	for _, c := range []struct {
		ask, epoch int32
		end        int64
	}{{-1, -1, -1}, {0, 0, 5}, {1, -1, -1}, {-5, -5, 3}} { // below every epoch: itself, the first start
		if e, o := p.EndOffsetForEpoch(c.ask); e != c.epoch || o != c.end {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.ask, e, o, c.epoch, c.end)
		}
	}
}

// adoptedPartition writes ten one-record batches into t-0 of a store in
// dir, closes it, puts checkpoint into the partition directory, and
// opens the store again.
func adoptedPartition(t *testing.T, checkpoint []byte) (*logstore.Store, *logstore.Partition, error) {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir, logstore.Options{})
	p := openPartition(t, s, "t", 0)
	for range 10 {
		if _, err := p.Append(batchOf("a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "t-0", logstore.LeaderEpochCheckpointName)
	if err := os.WriteFile(name, checkpoint, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, logstore.Options{})
	p, err := s.ExistingPartition("t", 0)
	return s, p, err
}

// TestLeaderEpochsAdopted: the checkpoint kafkaexport writes (Kafka's
// format) gives the epochs, and EndOffsetForEpoch answers each case of
// Kafka's LeaderEpochFileCache.endOffsetFor, also once DeleteRecords
// has cut the first epochs away.
func TestLeaderEpochsAdopted(t *testing.T) {
	cp := kafkaexport.EncodeLeaderEpochCheckpoint([]kafkaexport.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 3}, {Epoch: 5, StartOffset: 7}})
	_, p, err := adoptedPartition(t, cp)
	if err != nil {
		t.Fatal(err)
	}
	want := []logstore.EpochEntry{{0, 0}, {2, 3}, {5, 7}}
	if got := p.LeaderEpochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	for _, c := range []struct {
		ask, epoch int32
		end        int64
	}{
		{-1, -1, -1}, // undefined
		{0, 0, 3},    // the floor entry's epoch, the next one's start
		{1, 0, 3},
		{2, 2, 7},
		{4, 2, 7},
		{5, 5, 10}, // the latest: the end
		{6, -1, -1},
	} {
		if e, o := p.EndOffsetForEpoch(c.ask); e != c.epoch || o != c.end {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.ask, e, o, c.epoch, c.end)
		}
	}
	for off, want := range map[int64]int32{0: 0, 2: 0, 3: 2, 6: 2, 7: 5, 9: 5, 10: 5} {
		if got := p.EpochOf(off); got != want {
			t.Errorf("EpochOf(%d) = %d, want %d", off, got, want)
		}
	}
	if _, err := p.DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	if got, want := p.LeaderEpochs(), []logstore.EpochEntry{{2, 4}, {5, 7}}; !slices.Equal(got, want) {
		t.Fatalf("after DeleteRecords(4): epochs %v, want %v", got, want)
	}
	if got := p.EpochOf(1); got != 2 {
		t.Errorf("EpochOf(1) below every epoch left = %d, want the first, 2", got)
	}
	// Below every epoch left: the requested epoch and the first start.
	if e, o := p.EndOffsetForEpoch(0); e != 0 || o != 4 {
		t.Errorf("epoch 0 after DeleteRecords(4): (%d, %d), want (0, 4)", e, o)
	}

	// An empty checkpoint (an export of an empty partition) leaves
	// epoch 0 from the start.
	_, p, err = adoptedPartition(t, []byte("0\n0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.LeaderEpochs(), []logstore.EpochEntry{{0, 0}}; !slices.Equal(got, want) {
		t.Fatalf("empty checkpoint: epochs %v, want %v", got, want)
	}

	// An entry at or past the end is left out.
	_, p, err = adoptedPartition(t, []byte("0\n2\n0 0\n3 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.LeaderEpochs(), []logstore.EpochEntry{{0, 0}}; !slices.Equal(got, want) {
		t.Fatalf("entry at the end: epochs %v, want %v", got, want)
	}
}

// TestLeaderEpochsBadCheckpoint: a checkpoint that does not parse fails
// the partition's open with an error naming the file and the line.
func TestLeaderEpochsBadCheckpoint(t *testing.T) {
	_, _, err := adoptedPartition(t, []byte("0\n2\n0 0\n1 x\n"))
	if !errors.Is(err, logstore.ErrBadLeaderEpochCheckpoint) {
		t.Fatalf("open: %v, want ErrBadLeaderEpochCheckpoint", err)
	}
	for _, s := range []string{filepath.Join("t-0", logstore.LeaderEpochCheckpointName), "line 4"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func TestDecodeLeaderEpochCheckpoint(t *testing.T) {
	good := []struct {
		in   string
		want []logstore.EpochEntry
	}{
		{"0\n0\n", []logstore.EpochEntry{}},
		{"0\n1\n0 0\n", []logstore.EpochEntry{{0, 0}}},
		{"0\n2\n3 10\n7  10", []logstore.EpochEntry{{3, 10}, {7, 10}}}, // runs of spaces, no last newline
		{"0\r\n1\r\n4 2\r\n", []logstore.EpochEntry{{4, 2}}},
	}
	for _, c := range good {
		got, err := logstore.DecodeLeaderEpochCheckpoint([]byte(c.in))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, line string }{
		{"", "line 1"},
		{"1\n0\n", "line 1"},
		{"0\n", "line 2"},
		{"0\n-1\n", "line 2"},
		{"0\n3\n0 0\n", "line 4"},          // fewer entries than the count
		{"0\n1\n0 0\n1 1\n", "line 4"},     // more
		{"0\n1\n0\n", "line 3"},            // one field
		{"0\n1\n-1 0\n", "line 3"},         // negative epoch
		{"0\n1\n0 -5\n", "line 3"},         // negative offset
		{"0\n1\n2147483648 0\n", "line 3"}, // epoch past int32
		{"0\n2\n1 0\n1 5\n", "line 4"},     // epoch not rising
		{"0\n2\n1 5\n2 4\n", "line 4"},     // offset falling
		{"0\n99999999999\n", "line 3"},     // a count no file has: no allocation by it
	}
	for _, c := range bad {
		_, err := logstore.DecodeLeaderEpochCheckpoint([]byte(c.in))
		if !errors.Is(err, logstore.ErrBadLeaderEpochCheckpoint) || !strings.Contains(err.Error(), c.line+":") {
			t.Errorf("%q: %v, want ErrBadLeaderEpochCheckpoint at %s", c.in, err, c.line)
		}
	}
}

// FuzzDecodeLeaderEpochCheckpoint: any bytes decode or fail without a
// panic, and what decodes encodes (as kafkaexport writes it) to bytes
// that decode to the same entries.
func FuzzDecodeLeaderEpochCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n5 100\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\n 3\t7 \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := logstore.DecodeLeaderEpochCheckpoint(data)
		if err != nil {
			if !errors.Is(err, logstore.ErrBadLeaderEpochCheckpoint) {
				t.Fatalf("error %v does not wrap ErrBadLeaderEpochCheckpoint", err)
			}
			return
		}
		var ke []kafkaexport.EpochEntry
		for _, e := range entries {
			ke = append(ke, kafkaexport.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
		}
		again, err := logstore.DecodeLeaderEpochCheckpoint(kafkaexport.EncodeLeaderEpochCheckpoint(ke))
		if err != nil || !slices.Equal(again, entries) {
			t.Fatalf("re-encoded: %v, %v; want %v", again, err, entries)
		}
	})
}
