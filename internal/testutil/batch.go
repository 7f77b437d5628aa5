package testutil

import (
	"fmt"

	"github.com/logstore/logstore/recordbatch"
)

// ClientBatch is a client batch of n records at timestamp ts from the
// idempotent producer pid (epoch, base sequence seq), transactional or
// not, each value naming producer, epoch, sequence and index
// ("p<pid>-e<epoch>-s<seq>-<i>").
func ClientBatch(pid int64, epoch int16, seq int32, n int, ts int64, transactional bool) []byte {
	b := recordbatch.NewBuilder(0)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	b.Transactional = transactional
	for i := range n {
		if err := b.Append(ts, nil, fmt.Appendf(nil, "p%d-e%d-s%d-%d", pid, epoch, seq, i), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}
