package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// Found is one data record as a checker found it in the log.
type Found struct {
	Partition  int32
	Offset     int64
	Value      string
	ProducerID int64
	Epoch      int16
	// Sequence is the record's sequence number, -1 when the checker
	// does not know it (a consumer does not see it).
	Sequence int32
}

// Consume reads every partition of topic from its start to the end it
// has when Consume begins (its last stable offset, which is the high
// watermark when no transaction is open) with a kgo consumer
// (ConsumePartitions, read_committed; consumeTo), and returns every data
// record.
func Consume(ctx context.Context, brokers []string, topic string, partitions int32, opts ...kgo.Opt) ([]Found, error) {
	ends, err := ListOffsetsAt(ctx, brokers, topic, partitions, 1)
	if err != nil {
		return nil, err
	}
	var found []Found
	err = consumeTo(ctx, brokers, topic, ends, kgo.ReadCommitted(), opts, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() {
			found = append(found, Found{
				Partition: r.Partition, Offset: r.Offset, Value: string(r.Value),
				ProducerID: r.ProducerID, Epoch: r.ProducerEpoch, Sequence: -1,
			})
		}
		return nil
	})
	return found, err
}

// consumeTo reads every partition of topic from its start up to its end
// in ends with a kgo consumer at isolation level iso (with the extra
// options opts), keeping control records, and calls fn with every record
// and marker below the end, in order per partition. A consumer never
// gets a marker's offset as a data record, so the end is known from the
// records and markers together: a partition is done at the record or
// marker just below its end.
func consumeTo(ctx context.Context, brokers []string, topic string, ends map[int32]int64, iso kgo.IsolationLevel, opts []kgo.Opt, fn func(*kgo.Record) error) error {
	offsets := make(map[int32]kgo.Offset, len(ends))
	left := 0
	for p, end := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
		if end > 0 {
			left++
		}
	}
	if left == 0 {
		return nil
	}
	all := append(ClientOpts(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
	)
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		return fmt.Errorf("kafkatest: consumer: %w", err)
	}
	defer cl.Close()
	done := make(map[int32]bool, len(ends))
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("kafkatest: consume %s: %d partitions short of their end %v: %w", topic, left, ends, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("kafkatest: consume %s-%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil || r.Offset >= ends[r.Partition] {
				return // produced after the consumer began
			}
			ferr = fn(r)
			if r.Offset+1 >= ends[r.Partition] && !done[r.Partition] {
				done[r.Partition] = true
				left--
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// ScanStore opens the store in dir (no process may have it open: run it
// after the server is closed), reads every batch of the topic's
// partitions with Partition.Read, checks each batch's CRC and decodes its
// records with recordbatch. Control batches are skipped.
func ScanStore(dir, topic string, partitions int32) ([]Found, error) {
	st, err := logstore.Open(dir, logstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("kafkatest: scan: %w", err)
	}
	found, err := scanOpen(st, topic, partitions)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("kafkatest: scan: close: %w", cerr)
	}
	return found, err
}

func scanOpen(st *logstore.Store, topic string, partitions int32) ([]Found, error) {
	ids, err := st.Partitions()
	if err != nil {
		return nil, fmt.Errorf("kafkatest: scan: %w", err)
	}
	exists := make(map[int32]bool)
	for _, id := range ids {
		if id.Topic == topic {
			exists[id.Partition] = true
		}
	}
	var found []Found
	for pn := int32(0); pn < partitions; pn++ {
		if !exists[pn] {
			continue // the verdict says which values are missing
		}
		p, err := st.Partition(topic, pn)
		if err != nil {
			return found, fmt.Errorf("kafkatest: scan: %w", err)
		}
		err = scanRecords(p, func(b recordbatch.Batch, r *recordbatch.Record) error {
			if !b.Attributes().Control() {
				found = append(found, Found{
					Partition: pn, Offset: r.Offset, Value: string(r.Value),
					ProducerID: b.ProducerID(), Epoch: b.ProducerEpoch(), Sequence: r.Sequence,
				})
			}
			return nil
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

// scanRecords calls fn with every record of p from its start to its end
// (control records included) and the batch that holds it, each batch's
// CRC checked; Read may return a batch that begins before the offset
// asked for, which is skipped when already seen.
func scanRecords(p *logstore.Partition, fn func(recordbatch.Batch, *recordbatch.Record) error) error {
	name := p.ID().String()
	var rr recordbatch.RecordReader
	end := p.EndOffset()
	for off := p.StartOffset(); off < end; {
		data, err := p.Read(off, 1<<20)
		if err != nil {
			return fmt.Errorf("kafkatest: scan %s at offset %d: %w", name, off, err)
		}
		if len(data) == 0 {
			return fmt.Errorf("kafkatest: scan %s: nothing read at offset %d below the end %d", name, off, end)
		}
		for len(data) > 0 {
			b, err := recordbatch.Parse(data, 0)
			if err != nil {
				return fmt.Errorf("kafkatest: scan %s at offset %d: %w", name, off, err)
			}
			data = data[b.Size():]
			if err := b.Validate(); err != nil {
				return fmt.Errorf("kafkatest: scan %s batch at %d: %w", name, b.BaseOffset(), err)
			}
			if b.LastOffset() < off {
				continue // a batch Read returned whole, before off
			}
			off = b.LastOffset() + 1
			if err := rr.Reset(b, recordbatch.DefaultMaxRecordsBytes); err != nil {
				return fmt.Errorf("kafkatest: scan %s batch at %d: %w", name, b.BaseOffset(), err)
			}
			for rr.Next() {
				if err := fn(b, rr.Record()); err != nil {
					return err
				}
			}
			if err := rr.Err(); err != nil {
				return fmt.Errorf("kafkatest: scan %s batch at %d: %w", name, b.BaseOffset(), err)
			}
		}
	}
	return nil
}

// ConsumeAndVerify consumes every partition of res's topic through
// brokers (Consume, with the consumer's extra options opts) and checks
// what it read against res (Verify).
func ConsumeAndVerify(ctx context.Context, brokers []string, res *Result, opts ...kgo.Opt) error {
	found, err := Consume(ctx, brokers, res.Topic, res.Partitions, opts...)
	if err != nil {
		return err
	}
	return Verify(res, found)
}

// ScanAndVerify scans res's topic in the store in dir (ScanStore: no
// process may have it open) and checks what it read against res
// (Verify).
func ScanAndVerify(dir string, res *Result) error {
	found, err := ScanStore(dir, res.Topic, res.Partitions)
	if err != nil {
		return err
	}
	return Verify(res, found)
}

// ErrVerify is what Verify's error matches.
var ErrVerify = errors.New("kafkatest: the log does not hold what was acknowledged")

// VerifyError lists the problems Verify found.
type VerifyError struct {
	Problems []string // the first few
	Total    int
}

func (e *VerifyError) Error() string {
	more := ""
	if e.Total > len(e.Problems) {
		more = fmt.Sprintf("\n  ... and %d more", e.Total-len(e.Problems))
	}
	return fmt.Sprintf("%v: %d problems:\n  %s%s", ErrVerify, e.Total, strings.Join(e.Problems, "\n  "), more)
}

func (e *VerifyError) Unwrap() error { return ErrVerify }

// Verify compares what a checker found with what the workload produced:
//   - every record found holds a value of the workload, in the partition
//     it was produced to, and no value is found twice;
//   - every acknowledged value is found, at the offset kgo acknowledged;
//   - per partition, values appear in production order;
//   - with producer fields (Sequence >= 0, as ScanStore gives): every
//     record has a producer id >= 0, and per (partition, producer id,
//     epoch) the sequences are contiguous from 0 when the partition's log
//     starts at offset 0.
func Verify(res *Result, found []Found) error {
	e := &VerifyError{}
	add := func(format string, args ...any) {
		e.Total++
		if len(e.Problems) < 20 {
			e.Problems = append(e.Problems, fmt.Sprintf(format, args...))
		}
	}
	index := make(map[string]int, len(res.Records))
	for i, a := range res.Records {
		index[a.Value] = i
	}
	sorted := append([]Found(nil), found...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	type pkey struct {
		partition int32
		pid       int64
		epoch     int16
	}
	seen := make(map[string]Found, len(sorted))
	lastIndex := make(map[int32]int)     // per partition: the production index of the last value
	lastOffset := make(map[int32]int64)  // per partition
	firstOffset := make(map[int32]int64) // per partition
	nextSeq := make(map[pkey]int32)
	for _, f := range sorted {
		if lo, ok := lastOffset[f.Partition]; ok && f.Offset <= lo {
			add("partition %d: offset %d after offset %d", f.Partition, f.Offset, lo)
		}
		if _, ok := firstOffset[f.Partition]; !ok {
			firstOffset[f.Partition] = f.Offset
		}
		lastOffset[f.Partition] = f.Offset
		if f.Sequence >= 0 || f.ProducerID < 0 {
			if f.ProducerID < 0 {
				add("partition %d offset %d (%q): producer id %d", f.Partition, f.Offset, f.Value, f.ProducerID)
			} else {
				k := pkey{f.Partition, f.ProducerID, f.Epoch}
				want, ok := nextSeq[k]
				switch {
				case ok && f.Sequence != want:
					add("partition %d offset %d: producer %d epoch %d sequence %d, expected %d", f.Partition, f.Offset, f.ProducerID, f.Epoch, f.Sequence, want)
				case !ok && f.Sequence != 0 && firstOffset[f.Partition] == 0:
					add("partition %d offset %d: producer %d epoch %d starts at sequence %d, not 0", f.Partition, f.Offset, f.ProducerID, f.Epoch, f.Sequence)
				}
				nextSeq[k] = recordbatch.IncrementSequence(f.Sequence, 1)
			}
		}
		i, ok := index[f.Value]
		if !ok {
			add("partition %d offset %d: value %q was never produced", f.Partition, f.Offset, f.Value)
			continue
		}
		if prev, dup := seen[f.Value]; dup {
			add("value %q (record %d) twice: partition %d offset %d and partition %d offset %d", f.Value, i, prev.Partition, prev.Offset, f.Partition, f.Offset)
			continue
		}
		seen[f.Value] = f
		a := res.Records[i]
		if f.Partition != a.Partition {
			add("value %q (record %d) in partition %d, produced to %d", f.Value, i, f.Partition, a.Partition)
		}
		if a.Err == nil && f.Offset != a.Offset {
			add("value %q (record %d) at offset %d, acknowledged at %d", f.Value, i, f.Offset, a.Offset)
		}
		if li, ok := lastIndex[f.Partition]; ok && i <= li {
			add("partition %d offset %d: record %d after record %d: out of production order", f.Partition, f.Offset, i, li)
		}
		lastIndex[f.Partition] = i
	}
	for i, a := range res.Records {
		if a.Err != nil {
			continue
		}
		if _, ok := seen[a.Value]; !ok {
			add("value %q (record %d) acknowledged at partition %d offset %d, not found", a.Value, i, a.Partition, a.Offset)
		}
	}
	if e.Total > 0 {
		return e
	}
	return nil
}
