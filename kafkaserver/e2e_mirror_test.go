package kafkaserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
)

// mirror copies topic from the source brokers into the same partitions
// of the target brokers, as a consume-produce loop (what MirrorMaker 2 or
// any Kafka client does against logstore serve). It resumes from the
// target's end offsets (ListOffsets), not from a consumer group: the
// target's log is the mirror's progress, and it moves only when the
// target acknowledges a produce, so nothing is committed before it is
// written. The producer is idempotent (kgo's default, acks=all), so its
// retries across a restart of the target are deduplicated by the target.
//
// A round copies until total records are copied or the source's end (as
// of the round's start) is reached, calls between(copied) after each
// fetch, then flushes and closes its client: the next round is a restart
// of the mirror itself, with a new client and a new producer id, and
// starts where the target ends. That resume is exact because a round's
// produces are all answered (Flush) before it ends; a mirror that could
// die with produces in flight must make sure the old producer's
// requests can no longer land (its connections are gone) before the new
// one reads the target's ends, or write transactionally.
// mirrorSegmentBytes is segment.bytes of both stores of TestE2EMirror:
// small, so the mirror crosses many rolls.
const mirrorSegmentBytes = 4096

func mirrorRound(ctx context.Context, src, dst []string, topic string, partitions int32, limit int, between func(copied int)) (int, error) {
	starts, err := kafkatest.ListOffsetsAt(ctx, dst, topic, partitions, 0)
	if err != nil {
		return 0, err
	}
	ends, err := kafkatest.ListOffsetsAt(ctx, src, topic, partitions, 1)
	if err != nil {
		return 0, err
	}
	offsets := map[int32]kgo.Offset{}
	left := 0
	for p := range partitions {
		offsets[p] = kgo.NewOffset().At(starts[p])
		if starts[p] < ends[p] {
			left++
		}
	}
	consumer, err := kgo.NewClient(append(kafkatest.ClientOpts(src...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	if err != nil {
		return 0, err
	}
	defer consumer.Close()
	producer, err := kgo.NewClient(append(kafkatest.ClientOpts(dst...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(time.Second),
		kgo.StopProducerOnDataLossDetected(),
		// The target's segments are tiny (mirrorSegmentBytes), and a
		// batch larger than a segment is refused, as Kafka refuses it.
		kgo.ProducerBatchMaxBytes(mirrorSegmentBytes),
	)...)
	if err != nil {
		return 0, err
	}
	defer producer.Close()

	copied := 0
	var produceErr error
	errs := make(chan error, 1)
	next := map[int32]int64{}
	for p := range partitions {
		next[p] = starts[p]
	}
	for left > 0 && copied < limit {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return copied, fmt.Errorf("mirror: %w", err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("mirror: fetch %s-%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return copied, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if copied >= limit || r.Offset >= ends[r.Partition] {
				return
			}
			if r.Offset != next[r.Partition] {
				ferr = fmt.Errorf("mirror: %s-%d: got offset %d, expected %d", topic, r.Partition, r.Offset, next[r.Partition])
				return
			}
			next[r.Partition] = r.Offset + 1
			producer.Produce(ctx, &kgo.Record{
				Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value,
				Headers: r.Headers, Timestamp: r.Timestamp,
			}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
			copied++
			if next[r.Partition] == ends[r.Partition] {
				left--
			}
		})
		if ferr != nil {
			return copied, ferr
		}
		if between != nil {
			between(copied)
		}
	}
	if err := producer.Flush(ctx); err != nil {
		return copied, fmt.Errorf("mirror: flush: %w", err)
	}
	select {
	case produceErr = <-errs:
	default:
	}
	if produceErr != nil {
		return copied, fmt.Errorf("mirror: produce: %w", produceErr)
	}
	return copied, nil
}

// TestE2EMirror mirrors a topic from one logstore serve into another with
// a kgo consume-produce loop (mirrorRound) in three rounds: the source is
// restarted during the first, the target during the second (with produces
// in flight), and each new round is a restart of the mirror, which
// resumes from the target's end offsets. The target must then hold every
// record of the source exactly once, at the same offsets, in order per
// partition: checked by consuming it and by scanning its store (producer
// ids and contiguous sequences included).
func TestE2EMirror(t *testing.T) {
	t.Parallel()
	const topic = "mirrored"
	src := newInProcess(t, logstore.Options{SegmentBytes: mirrorSegmentBytes}, kafkaserver.Config{})
	dst := newInProcess(t, logstore.Options{SegmentBytes: mirrorSegmentBytes}, kafkaserver.Config{})
	srcB, dstB := []string{src.addr}, []string{dst.addr}
	n := e2eRecords()
	res := produce(t, srcB, &kafkatest.Workload{Topic: topic, Records: n})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, dstB, topic, res.Partitions, nil); err != nil {
		t.Fatal(err)
	}
	restartOnce := func(s *inProcess, at int) func(int) {
		done := false
		return func(copied int) {
			if done || copied < at {
				return
			}
			done = true
			if err := s.restart(nil); err != nil {
				t.Errorf("restart: %v", err)
			}
		}
	}
	total := 0
	rounds := []struct {
		limit   int
		between func(int)
	}{
		{n / 3, restartOnce(src, n/6)},
		{n / 3, restartOnce(dst, n/6)},
		{n, nil},
	}
	for i, r := range rounds {
		copied, err := mirrorRound(ctx, srcB, dstB, topic, res.Partitions, r.limit, r.between)
		if err != nil {
			t.Fatalf("round %d (after %d records): %v", i, total+copied, err)
		}
		total += copied
		t.Logf("round %d copied %d records", i, copied)
	}
	if src.starts != 2 || dst.starts != 2 {
		t.Fatalf("starts: source %d, target %d; want a restart of each", src.starts, dst.starts)
	}
	if total != n {
		t.Fatalf("copied %d records, want %d", total, n)
	}
	checkBoth(t, dst, dstB, nil, res)
}
