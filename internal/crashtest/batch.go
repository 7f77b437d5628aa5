package crashtest

import (
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testseam"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// ProducerBatch builds an idempotent client batch of n records at
// timestamp ts.
func ProducerBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, ts, false)
}

// PlainBatch builds a client batch without a producer, of the given
// values, one record each, with base offset 0 (Append stamps the real
// one). It panics on a builder error, which would be a bug of the test.
func PlainBatch(values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	for _, v := range values {
		if err := b.Append(Timestamp, nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// WithFS returns o with fs as the filesystem of the store directory and
// everything below it but the lock file (a crashfs.FS, or one that
// injects faults).
func WithFS(o logstore.Options, fs vfs.FS) logstore.Options { return testseam.WithFS(o, fs) }

// WithClock returns o with now as the store's clock.
func WithClock(o logstore.Options, now func() time.Time) logstore.Options {
	return testseam.WithClock(o, now)
}
