package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workload is N records with unique values produced by one idempotent kgo
// client (acks=all) over a few partitions, each value sent to the
// partition its index picks (index mod Partitions), so production order
// per partition is the order of the indexes.
type Workload struct {
	Brokers    []string
	Topic      string
	Partitions int32 // 0 is 3
	Records    int
	// Prefix starts every value, so values of different runs differ;
	// "" is "v".
	Prefix string
	// MaxBuffered bounds the records handed to kgo and not yet answered
	// (kgo.MaxBufferedRecords): a small window makes many small
	// requests. 0 is 64.
	MaxBuffered int
	// BatchMaxBytes bounds one partition's batch (kgo's
	// ProducerBatchMaxBytes); 0 leaves kgo's default.
	BatchMaxBytes int32
	// CreateTopic creates the topic first with CreateTopics (an existing
	// topic is fine), with TopicConfigs.
	CreateTopic  bool
	TopicConfigs map[string]string
	// OnDataLoss, when set, replaces kgo's StopProducerOnDataLossDetected
	// with ProducerOnDataLossDetected(OnDataLoss): kgo then answers an
	// OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID by bumping its
	// epoch and resending instead of failing the records. Only the
	// producer-expiry scenario wants that.
	OnDataLoss func(topic string, partition int32)
	// Before, when set, is called before record i is produced, with the
	// producing client (to flush and pause, or switch a fault on
	// mid-run). It must return promptly or honour ctx.
	Before func(ctx context.Context, cl *kgo.Client, i int)
	// Opts are more kgo options, applied after the workload's own.
	Opts []kgo.Opt
}

// Ack is what kgo answered for one record.
type Ack struct {
	Value      string
	Partition  int32 // the partition it was produced to
	Offset     int64 // the offset kgo acknowledged; -1 when not acknowledged
	ProducerID int64
	Epoch      int16
	Err        error // nil when acknowledged
}

// Result is a workload's outcome: every record in production order.
type Result struct {
	Topic      string
	Partitions int32
	Records    []Ack // index i is the i-th value produced
	Acked      int
	// Err is the first record's error, or the client's.
	Err error
	// DataLoss counts kgo's calls of Workload.OnDataLoss.
	DataLoss int64
}

// ClientOpts are the kgo options of every test client: retry EOF (a
// proxy's closed connection is a retry, not a configuration error), a
// short backoff, and timeouts of a second so a silently dropped answer
// costs a few seconds, not kgo's default 20.
func ClientOpts(brokers ...string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.AlwaysRetryEOF(),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.RequestTimeoutOverhead(time.Second),
		kgo.DialTimeout(time.Second),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}
}

// Value is the workload's value of record i.
func (w *Workload) Value(i int) string {
	prefix := w.Prefix
	if prefix == "" {
		prefix = "v"
	}
	return fmt.Sprintf("%s-%08d", prefix, i)
}

// Run produces the records and waits for every answer, or until ctx ends;
// records not answered by then are failed by closing the client. It
// returns an error only when the client cannot start; record failures are
// in the Result.
func (w *Workload) Run(ctx context.Context) (*Result, error) {
	parts := w.Partitions
	if parts == 0 {
		parts = 3
	}
	window := w.MaxBuffered
	if window == 0 {
		window = 64
	}
	res := &Result{Topic: w.Topic, Partitions: parts, Records: make([]Ack, w.Records)}
	if w.CreateTopic {
		if err := CreateTopic(ctx, w.Brokers, w.Topic, parts, w.TopicConfigs); err != nil {
			return nil, err
		}
	}
	var dataLoss atomic.Int64
	opts := append(ClientOpts(w.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(window),
		kgo.ProduceRequestTimeout(time.Second),
		kgo.DefaultProduceTopic(w.Topic),
	)
	if w.OnDataLoss != nil {
		opts = append(opts, kgo.ProducerOnDataLossDetected(func(t string, p int32) {
			dataLoss.Add(1)
			w.OnDataLoss(t, p)
		}))
	} else {
		opts = append(opts, kgo.StopProducerOnDataLossDetected())
	}
	if w.BatchMaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(w.BatchMaxBytes))
	}
	opts = append(opts, w.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: workload client: %w", err)
	}

	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
	)
	setErr := func(err error) {
		errMu.Lock()
		if res.Err == nil {
			res.Err = err
		}
		errMu.Unlock()
	}
	for i := range res.Records {
		res.Records[i] = Ack{Value: w.Value(i), Partition: int32(i % int(parts)), Offset: -1, ProducerID: -1, Epoch: -1}
	}
	for i := range res.Records {
		if ctx.Err() != nil {
			break
		}
		if w.Before != nil {
			w.Before(ctx, cl, i)
		}
		a := &res.Records[i]
		rec := &kgo.Record{Topic: w.Topic, Partition: a.Partition, Value: []byte(a.Value)}
		wg.Add(1)
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				a.Err = err
				setErr(fmt.Errorf("record %d (%s): %w", i, a.Value, err))
				return
			}
			a.Offset, a.ProducerID, a.Epoch = r.Offset, r.ProducerID, r.ProducerEpoch
		})
	}
	// Flush returns when every record is answered or ctx ends; Close
	// then fails what is left, so every promise has run after it.
	if err := cl.Flush(ctx); err != nil {
		setErr(fmt.Errorf("flush: %w", err))
	}
	cl.Close()
	wg.Wait()
	for i := range res.Records {
		a := &res.Records[i]
		if a.Err == nil && a.Offset < 0 {
			a.Err = errors.New("never produced: the run ended first")
			setErr(fmt.Errorf("record %d (%s): %w", i, a.Value, a.Err))
		}
		if a.Err == nil {
			res.Acked++
		}
	}
	res.DataLoss = dataLoss.Load()
	return res, nil
}

// CreateTopic creates topic with partitions and configs through
// CreateTopics; a topic that exists already is fine.
func CreateTopic(ctx context.Context, brokers []string, topic string, partitions int32, configs map[string]string) error {
	cl, err := kgo.NewClient(ClientOpts(brokers...)...)
	if err != nil {
		return fmt.Errorf("kafkatest: create topic: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions = partitions
	t.ReplicationFactor = 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		c.Value = kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("kafkatest: create topic %s: %w", topic, err)
		}
	}
	return nil
}
