package txncoord_test

import (
	"bytes"
	"maps"
	"testing"

	"github.com/logstore/logstore/txncoord"
)

// FuzzDecodeRecord: a record value from the file never panics the
// decoder, and whatever decodes encodes back to the same bytes (the
// decoder accepts exactly what the encoder writes).
func FuzzDecodeRecord(f *testing.F) {
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "Empty", ProducerID: 1, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: -1}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "Ongoing", ProducerID: 9, Epoch: 4, PrevProducerID: 3, LastEpoch: 3, TimeoutMs: 1, StartMs: 1700000000000,
		Partitions: []txncoord.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 7}, {Topic: "topic-b", Partition: 2}}}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "PrepareAbort", ProducerID: 9, Epoch: 32767, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 900000, StartMs: 0,
		Partitions: []txncoord.TopicPartition{{Topic: "x", Partition: 2147483647}}}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "CompleteAbort", ProducerID: 9, Epoch: 5, PrevProducerID: -1, LastEpoch: 4, TimeoutMs: 60000, StartMs: -1, LastUpdateMs: 1700000000000}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "CompleteCommit", ProducerID: 9, Epoch: 5, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: 1700000000000, LastUpdateMs: 1700000000001}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "Ongoing", ProducerID: 9, Epoch: 4, PrevProducerID: 3, LastEpoch: 3, TimeoutMs: 1, StartMs: 1700000000000, LastUpdateMs: 1700000000001,
		Partitions: []txncoord.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "topic-b", Partition: 2}}}))
	f.Add(txncoord.EncodeSeed(txncoord.SeedRecord{State: "PrepareCommit", ProducerID: 9, Epoch: 4, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 1, StartMs: 1700000000000, LastUpdateMs: 1700000000001,
		Partitions: []txncoord.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "topic-b", Partition: 2}}, FirstOffsets: []int64{-1, 1 << 40}}))
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add([]byte{3})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := txncoord.DecodeRecord(b)
		if err != nil {
			return
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("decoded and encoded again:\n%x\nwas\n%x", out, b)
		}
	})
}

// FuzzDecodeLog: the bytes of a record file never panic the replay nor
// make it allocate what a length claims; whatever replays (a torn tail
// dropped) is written anew by a compaction that replays to the same
// state, whole.
func FuzzDecodeLog(f *testing.F) {
	recs := map[string][]byte{
		"a": txncoord.EncodeSeed(txncoord.SeedRecord{State: "Empty", ProducerID: 1, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: -1}),
		"bb": txncoord.EncodeSeed(txncoord.SeedRecord{State: "Ongoing", ProducerID: 9, Epoch: 4, PrevProducerID: 3, LastEpoch: 3, TimeoutMs: 1, StartMs: 1700000000000,
			Partitions: []txncoord.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 7}}}),
	}
	img := txncoord.LogImage(3, recs)
	f.Add(img)
	f.Add(img[:len(img)-5])
	f.Add(txncoord.LogImage(0, nil))
	f.Add(append(bytes.Clone(img), txncoord.Frame(append([]byte{2, 0, 1, 'z', 0, 0, 0, byte(len(recs["a"]))}, recs["a"]...))...))
	f.Add(append(bytes.Clone(img), txncoord.Frame([]byte{1, 0, 0, 0, 4})...))
	// Tombstones (record length 0): of a live id, of an unknown one,
	// then a put of the id again, in one commit.
	f.Add(append(bytes.Clone(img), txncoord.Frame([]byte{2, 0, 1, 'a', 0, 0, 0, 0})...))
	f.Add(append(bytes.Clone(img), txncoord.Frame(append([]byte{2, 0, 2, 'b', 'b', 0, 0, 0, 0, 0, 1, 'q', 0, 0, 0, 0, 0, 2, 'b', 'b', 0, 0, 0, byte(len(recs["a"]))}, recs["a"]...))...))
	v2 := txncoord.EncodeSeed(txncoord.SeedRecord{State: "CompleteCommit", ProducerID: 2, PrevProducerID: -1, LastEpoch: -1, TimeoutMs: 60000, StartMs: -1, LastUpdateMs: 1700000000000})
	f.Add(append(bytes.Clone(img), txncoord.Frame(append([]byte{2, 0, 1, 'c', 0, 0, 0, byte(len(v2))}, v2...))...))
	f.Add(append(bytes.Clone(img), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0))
	// The close record, last and not last.
	f.Add(append(bytes.Clone(img), txncoord.Frame([]byte{3})...))
	f.Add(append(append(bytes.Clone(img), txncoord.Frame([]byte{3})...), txncoord.Frame([]byte{1, 0, 0, 0, 4})...))
	f.Add([]byte("LSTXNLOG"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := txncoord.DecodeLog(b)
		if err != nil {
			return
		}
		if st.End > int64(len(b)) || (st.Tail == "") != (st.End == int64(len(b))) {
			t.Fatalf("end %d of %d bytes, tail %q", st.End, len(b), st.Tail)
		}
		again := txncoord.LogImage(st.Epoch, st.Records)
		st2, err := txncoord.DecodeLog(again)
		if err != nil || st2.Tail != "" || st2.Epoch != st.Epoch || !maps.EqualFunc(st.Records, st2.Records, bytes.Equal) {
			t.Fatalf("compacted image replays to %+v, %v; was %+v", st2, err, st)
		}
	})
}
