package txncoord_test

import (
	"bytes"
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
	f.Add([]byte{})
	f.Add([]byte{1})
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
