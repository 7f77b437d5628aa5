package snapshot_test

import (
	"math"

	"github.com/logstore/logstore/producerstate"
)

// v1Snapshot is what testdata/value-v1.bin holds, written by the build
// that wrote format version 1 (before seen times were kept), as it
// decodes now: no seen times, and as last applied offset the last offset
// of each producer's newest batch.
var v1Snapshot = producerstate.Snapshot{Offset: 4242, Producers: []producerstate.Entry{
	{ProducerID: -1, Epoch: -1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: -1, LastApplied: -1},
	{ProducerID: 31, Epoch: 2, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 1700000000013, LastApplied: 4213,
		Batches: []producerstate.BatchMeta{
			{FirstSeq: 2147483645, LastSeq: 2147483647, FirstOffset: 4200, LastOffset: 4202, Timestamp: 1700000000010},
			{FirstSeq: 0, LastSeq: 0, FirstOffset: 4203, LastOffset: 4203, Timestamp: 1700000000011},
			{FirstSeq: 1, LastSeq: 4, FirstOffset: 4210, LastOffset: 4213, Timestamp: 1700000000013},
		}},
	{ProducerID: 1 << 40, Epoch: math.MaxInt16, CoordinatorEpoch: 7, TxnFirstOffset: 4100, LastTimestamp: -1, LastApplied: 4199,
		Batches: []producerstate.BatchMeta{{FirstSeq: 0, LastSeq: 99, FirstOffset: 4100, LastOffset: 4199, Timestamp: -1}}},
}}
