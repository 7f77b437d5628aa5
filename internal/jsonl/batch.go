package jsonl

import (
	"errors"
	"fmt"

	"github.com/logstore/logstore/recordbatch"
)

// MaxLineBytes bounds one line. A batch is at most about 1 MiB
// (segment.DefaultMaxBatchBytes), so even with base64 and JSON escapes a
// real line stays well below it; a longer line is refused, not buffered.
const MaxLineBytes = 16 << 20

// Batch is one batch to append: where it goes and what it holds.
type Batch struct {
	Topic         string
	Partition     int32
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Codec         recordbatch.Codec
	Transactional bool
	Records       []Record
	// inBuilder says the records are in the builder already: ParseLine
	// appends a line's records to it as it decodes them.
	inBuilder bool
}

// Record is one record. A nil key or value is null; an empty one is
// not.
type Record struct {
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []recordbatch.RecordHeader
}

// Build appends the batch, as a producer sends it, to dst. The base
// offset is 0: Partition.Append stamps the real one. A batch from
// ParseLine must be built with the builder ParseLine filled.
func (s *Batch) Build(bld *recordbatch.Builder, dst []byte) ([]byte, error) {
	if !s.inBuilder {
		if len(s.Records) == 0 {
			return dst, errors.New("no records")
		}
		bld.Reset(0)
		for i, r := range s.Records {
			if err := bld.Append(r.Timestamp, r.Key, r.Value, r.Headers); err != nil {
				return dst, fmt.Errorf("record %d: %w", i+1, err)
			}
		}
	}
	bld.Compression = s.Codec
	bld.Transactional = s.Transactional
	bld.ProducerID = s.ProducerID
	bld.ProducerEpoch = s.ProducerEpoch
	bld.BaseSequence = s.BaseSequence
	return bld.AppendTo(dst)
}

// CheckTimestamp accepts what Kafka accepts from a producer: a time in
// milliseconds since the epoch, or -1 for none.
func CheckTimestamp(ts int64) error {
	if ts < recordbatch.NoTimestamp {
		return fmt.Errorf("timestamp %d is negative (give milliseconds since the epoch, or -1 for none)", ts)
	}
	return nil
}

// ParseCodec maps a codec name (a line's "compression", or a
// --compression flag) to a codec.
func ParseCodec(name string) (recordbatch.Codec, error) {
	c, ok := recordbatch.ParseCodec(name)
	if !ok {
		return 0, fmt.Errorf("unknown compression %q: want none, gzip, snappy, lz4 or zstd", name)
	}
	return c, nil
}

// Defaults is what a JSON line leaves out: topic, partition and codec
// come from the flags, the timestamp from --timestamp or the clock.
type Defaults struct {
	Topic     string
	Partition int32
	Codec     recordbatch.Codec
	Timestamp int64
}
