package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/logstore/logstore/internal/kafkatest"
)

const (
	saramaClient   = "sarama"
	saramaClientID = "compat-sarama" // the client id of every sarama client
)

func init() {
	clientInfos = append(clientInfos, ClientInfo{
		Name:    saramaClient,
		Version: "github.com/IBM/sarama " + moduleVersion("github.com/IBM/sarama"),
		Source:  "Go module proxy (logstore's go.mod: imported by compat/ only, as the client under test)",
		Note:    "versions column: Config.Version = sarama.V0_11_0_0, V2_1_0_0, V2_8_0_0; newest: sarama.MaxVersion (" + sarama.MaxVersion.String() + ")",
	})
	cellSets = append(cellSets, saramaCells)
}

type saramaVersion struct {
	name string
	v    sarama.KafkaVersion
}

func saramaVersions() []saramaVersion {
	return []saramaVersion{
		{"0.11", sarama.V0_11_0_0},
		{"2.1", sarama.V2_1_0_0},
		{"2.8", sarama.V2_8_0_0},
		{"newest", sarama.MaxVersion},
	}
}

// Record counts of sarama's cells.
const (
	saramaRecords     = 200
	saramaIdemRecords = 300
	saramaWindow      = 8 // records per SendMessages: many small requests
	saramaTxns        = 6
	saramaPerTxn      = 10
	rcTxns            = 7 // odd: the log ends with a committed transaction
)

func saramaCells() []Cell {
	var cells []Cell
	for _, v := range saramaVersions() {
		add := func(feature string, run func(context.Context, *Env) Result) {
			cells = append(cells, Cell{Client: saramaClient, Version: v.name, Feature: feature, Run: run, ClientID: saramaClientID, SegmentBytes: smallSegmentBytes})
		}
		add(FeatureProduce, func(ctx context.Context, e *Env) Result { return saramaProduce(ctx, e, v) })
		add(FeatureIdempotent, func(ctx context.Context, e *Env) Result { return saramaIdempotent(ctx, e, v) })
		add(FeatureTransactions, func(ctx context.Context, e *Env) Result { return saramaTransactions(ctx, e, v) })
		add(FeatureReadCommitted, func(ctx context.Context, e *Env) Result { return saramaReadCommitted(ctx, e, v) })
		add(FeatureGroups, func(ctx context.Context, e *Env) Result { return saramaGroups(ctx, e, v) })
		for _, c := range []struct {
			feature string
			codec   sarama.CompressionCodec
		}{
			{FeatureGzip, sarama.CompressionGZIP},
			{FeatureSnappy, sarama.CompressionSnappy},
			{FeatureLZ4, sarama.CompressionLZ4},
			{FeatureZstd, sarama.CompressionZSTD},
		} {
			add(c.feature, func(ctx context.Context, e *Env) Result { return saramaCodec(ctx, e, v, c.feature, c.codec) })
		}
	}
	return cells
}

// config is the sarama configuration of every cell at the version:
// acks=all, the partition set on each message, short backoffs, many
// retries. The read timeout is long (20 s): the proxy's faults close
// connections, which sarama sees at once, and a plain producer that
// timed out on a slow fsync would write its batch twice.
func (v saramaVersion) config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = v.v
	c.ClientID = saramaClientID
	c.Net.DialTimeout = 2 * time.Second
	c.Net.ReadTimeout = 20 * time.Second
	c.Net.WriteTimeout = 20 * time.Second
	c.Metadata.Retry.Max = 50
	c.Metadata.Retry.Backoff = 20 * time.Millisecond
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 200
	c.Producer.Retry.Backoff = 20 * time.Millisecond
	c.Producer.Timeout = 10 * time.Second
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	return c
}

// idempotent makes c an idempotent producer: sarama requires Version >=
// 0.11, one request in flight per broker, acks=all and retries.
func idempotent(c *sarama.Config) {
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.RequiredAcks = sarama.WaitForAll
}

// saramaSend produces n records ("<prefix>-%08d", record i to partition
// i mod partitions) with a SyncProducer of brokers, window records per
// SendMessages, and returns what sarama acknowledged.
func saramaSend(ctx context.Context, cfg *sarama.Config, brokers []string, topic string, partitions int32, n, window int, prefix string) (*kafkatest.Result, error) {
	p, err := sarama.NewSyncProducer(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama producer: %w", err)
	}
	res := &kafkatest.Result{Topic: topic, Partitions: partitions, Records: make([]kafkatest.Ack, n)}
	for i := range res.Records {
		res.Records[i] = kafkatest.Ack{Value: fmt.Sprintf("%s-%08d", prefix, i), Partition: int32(i % int(partitions)), Offset: -1, ProducerID: -1, Epoch: -1}
	}
	for start := 0; start < n && ctx.Err() == nil; start += window {
		end := min(start+window, n)
		msgs := make([]*sarama.ProducerMessage, 0, end-start)
		for i := start; i < end; i++ {
			a := &res.Records[i]
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: a.Partition, Value: sarama.StringEncoder(a.Value), Metadata: i})
		}
		err := p.SendMessages(msgs)
		failed := map[int]error{}
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) {
			for _, pe := range perrs {
				failed[pe.Msg.Metadata.(int)] = pe.Err
			}
		} else if err != nil {
			for i := start; i < end; i++ {
				failed[i] = err
			}
		}
		for j, m := range msgs {
			i := start + j
			if ferr, ok := failed[i]; ok {
				res.Records[i].Err = ferr
				if res.Err == nil {
					res.Err = fmt.Errorf("record %d (%s): %w", i, res.Records[i].Value, ferr)
				}
				continue
			}
			res.Records[i].Offset = m.Offset
			res.Acked++
		}
	}
	if err := p.Close(); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("close: %w", err)
	}
	for i := range res.Records {
		if a := &res.Records[i]; a.Offset < 0 && a.Err == nil {
			a.Err = errors.New("never produced: the cell's bound ended first")
			if res.Err == nil {
				res.Err = a.Err
			}
		}
	}
	return res, nil
}

// saramaConsume reads each partition of topic from its start with a
// sarama consumer (ConsumePartition) until it has read the record just
// below ends[partition], then for quiet more (a record after that end
// is read too and returned: the caller's check finds it). The records
// carry no producer id (sarama's ConsumerMessage does not say it): -1.
func saramaConsume(ctx context.Context, cfg *sarama.Config, e *Env, topic string, ends map[int32]int64, quiet time.Duration) ([]kafkatest.Found, error) {
	c, err := sarama.NewConsumer(e.Bootstrap, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama consumer: %w", err)
	}
	defer c.Close()
	var (
		mu    sync.Mutex
		found []kafkatest.Found
		first error
		wg    sync.WaitGroup
	)
	for p, end := range ends {
		if end <= 0 {
			continue
		}
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, fmt.Errorf("sarama consume %s-%d: %w", topic, p, err)
		}
		wg.Go(func() {
			defer pc.AsyncClose()
			var deadline <-chan time.Time
			for {
				select {
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					mu.Lock()
					found = append(found, kafkatest.Found{Partition: m.Partition, Offset: m.Offset, Value: string(m.Value), ProducerID: -1, Sequence: -1})
					mu.Unlock()
					if m.Offset+1 >= end && deadline == nil {
						deadline = time.After(quiet)
					}
				case err := <-pc.Errors():
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("sarama consume %s-%d: %w", topic, p, err)
					}
					mu.Unlock()
					return
				case <-deadline:
					return
				case <-ctx.Done():
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("sarama consume %s-%d: short of offset %d: %w", topic, p, end, ctx.Err())
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return found, first
}

// highWatermarks are the partitions' ends (ListOffsets, read_uncommitted).
func highWatermarks(ctx context.Context, e *Env, topic string, partitions int32) (map[int32]int64, error) {
	return kafkatest.ListOffsetsAt(ctx, e.Bootstrap, topic, partitions, 0)
}

// saramaProduce: sarama's plain producer (not idempotent, acks=all), no
// faults; sarama's consumer reads the records back; the store scan
// agrees.
func saramaProduce(ctx context.Context, e *Env, v saramaVersion) Result {
	res, err := saramaSendReadBack(ctx, e, v, v.config(), "plain", 20)
	if err != nil {
		return fail("%v", err)
	}
	if err := e.storeScanPlain(res); err != nil {
		return fail("%v", err)
	}
	return pass("%d records acknowledged, read back by sarama's consumer once each at their offsets; the store scan agrees", res.Acked)
}

// saramaSendReadBack creates topic (3 partitions), produces
// saramaRecords records named after it with cfg, window records per
// SendMessages, and reads them back with sarama's consumer at the
// version: every record must be acknowledged and read once at its
// offset (verifyPlain: sarama's consumer does not say the producer id).
func saramaSendReadBack(ctx context.Context, e *Env, v saramaVersion, cfg *sarama.Config, topic string, window int) (*kafkatest.Result, error) {
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return nil, err
	}
	res, err := saramaSend(ctx, cfg, e.Bootstrap, topic, 3, saramaRecords, window, topic)
	if err != nil {
		return nil, err
	}
	if err := allAcked(res); err != nil {
		return nil, err
	}
	ends, err := highWatermarks(ctx, e, topic, 3)
	if err != nil {
		return nil, err
	}
	found, err := saramaConsume(ctx, v.config(), e, topic, ends, 0)
	if err != nil {
		return nil, err
	}
	if err := verifyPlain(res, found); err != nil {
		return nil, fmt.Errorf("consumed (%s): %w", e.produceText(), err)
	}
	return res, nil
}

// saramaIdempotent: sarama's idempotent producer through the standard
// faults, then VerifyProduce.
func saramaIdempotent(ctx context.Context, e *Env, v saramaVersion) Result {
	const topic = "idem"
	if err := e.CreateTopic(ctx, topic, 3); err != nil {
		return fail("%v", err)
	}
	cfg := v.config()
	idempotent(cfg)
	e.Faults()
	res, err := saramaSend(ctx, cfg, e.Bootstrap, topic, 3, saramaIdemRecords, saramaWindow, "idem")
	if err != nil {
		return fail("%v", err)
	}
	return verdict(e.VerifyProduce(ctx, res))
}

// saramaTransactions: sarama's transactional producer (Transaction.ID,
// BeginTxn, SendMessages, CommitTxn or AbortTxn as planned) through the
// standard faults; then VerifyTxn.
func saramaTransactions(ctx context.Context, e *Env, v saramaVersion) Result {
	const topic = "txn"
	if err := e.CreateTopic(ctx, topic, txnPartitions); err != nil {
		return fail("%v", err)
	}
	cfg := v.config()
	idempotent(cfg)
	cfg.Producer.Transaction.ID = "compat-sarama"
	cfg.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
	w := &kafkatest.TxnWorkload{Topic: topic, Partitions: txnPartitions, Transactions: saramaTxns, PerTxn: saramaPerTxn, Commit: txnPlan, Prefix: "sarama"}
	res := &kafkatest.TxnResult{Topic: topic, Partitions: txnPartitions, Txns: w.Plan()}
	e.Faults()
	p, err := sarama.NewSyncProducer(e.Bootstrap, cfg)
	if err != nil {
		return fail("sarama transactional producer: %v", err)
	}
	for t := range res.Txns {
		tx := &res.Txns[t]
		tx.TransactionalID = cfg.Producer.Transaction.ID
		if ctx.Err() != nil {
			tx.Outcome, tx.Err = kafkatest.TxnAborted, errors.New("never begun: the cell's bound ended first")
			continue
		}
		saramaTxn(p, topic, tx)
	}
	if err := p.Close(); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("close: %w", err)
	}
	for _, t := range res.Txns {
		countOutcome(res, t.Outcome)
	}
	return verdict(e.VerifyTxn(ctx, res))
}

// saramaTxn runs one transaction with p and says how it ended in tx.
func saramaTxn(p sarama.SyncProducer, topic string, tx *kafkatest.Txn) {
	if err := p.BeginTxn(); err != nil {
		tx.Outcome, tx.Err = kafkatest.TxnAborted, fmt.Errorf("begin: %w", err)
		return
	}
	msgs := make([]*sarama.ProducerMessage, len(tx.Records))
	for j, a := range tx.Records {
		msgs[j] = &sarama.ProducerMessage{Topic: topic, Partition: a.Partition, Value: sarama.StringEncoder(a.Value)}
	}
	serr := p.SendMessages(msgs)
	if serr != nil {
		// Which records sarama wrote is not known: their offsets stay -1.
		tx.Err = fmt.Errorf("send: %w", serr)
	} else {
		for j, m := range msgs {
			tx.Records[j].Offset = m.Offset
		}
	}
	if tx.Planned && serr == nil {
		if err := p.CommitTxn(); err != nil {
			tx.Outcome, tx.Err = kafkatest.TxnUncertain, fmt.Errorf("commit: %w", err)
			return
		}
		tx.Outcome = kafkatest.TxnCommitted
		return
	}
	tx.Outcome = kafkatest.TxnAborted
	if err := p.AbortTxn(); err != nil {
		tx.Err = errors.Join(tx.Err, fmt.Errorf("abort: %w", err))
	}
}

// saramaReadCommitted: kgo writes a log of committed and aborted
// transactions (WriteTxnLog, ending with a committed one); sarama's
// consumer at read_committed reads each partition to its last committed
// record and a little longer; CheckReadCommitted.
func saramaReadCommitted(ctx context.Context, e *Env, v saramaVersion) Result {
	res, err := e.WriteTxnLog(ctx, "rc", txnPartitions, rcTxns)
	if err != nil {
		return fail("%v", err)
	}
	ends, err := e.CommittedEnds(res.Topic)
	if err != nil {
		return fail("%v", err)
	}
	cfg := v.config()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	found, err := saramaConsume(ctx, cfg, e, res.Topic, ends, 300*time.Millisecond)
	if err != nil {
		return fail("%v", err)
	}
	return verdict(e.CheckReadCommitted(res, found))
}

// saramaGroups: two sarama ConsumerGroups join one group; once both
// hold partitions, half the records are produced (by kgo) and read;
// member 2 leaves (its session's Cleanup commits what it marked) and
// member 1 takes its partitions over and reads the other half. sarama's
// admin at the version fetches the committed offsets back; then
// checkHandover (CheckGroup, which fetches them with kgo too, and no
// record read twice).
func saramaGroups(ctx context.Context, e *Env, v saramaVersion) Result {
	const (
		topic      = "grp"
		group      = "compat-sarama"
		partitions = 4
	)
	if err := e.CreateTopic(ctx, topic, partitions); err != nil {
		return fail("%v", err)
	}
	cfg := v.config()
	cfg.Consumer.Group.Session.Timeout = 3 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	var (
		mu      sync.Mutex
		values  = map[string]bool{}
		members = make([]*saramaMember, 2)
		errs    []error
	)
	for i := range members {
		m, err := startSaramaMember(ctx, e.Bootstrap, cfg, i+1, group, topic, &mu, values, &errs)
		if err != nil {
			for _, o := range members[:i] {
				o.leave()
			}
			return fail("%v", err)
		}
		members[i] = m
		defer m.leave()
	}
	assigned := func(m *saramaMember) int {
		mu.Lock()
		defer mu.Unlock()
		return len(m.assigned)
	}
	if err := waitUntil(ctx, func() bool {
		a, b := assigned(members[0]), assigned(members[1])
		return a > 0 && b > 0 && a+b == partitions
	}); err != nil {
		return fail("the two members never shared the %d partitions: %v", partitions, err)
	}
	res, err := groupHandover(ctx, e, topic, partitions, saramaRecords, &mu, values, &errs, func() error {
		if err := members[1].leave(); err != nil {
			return err
		}
		return waitUntil(ctx, func() bool { return assigned(members[0]) == partitions })
	})
	if err != nil {
		return fail("%v", err)
	}
	if err := members[0].leave(); err != nil {
		return fail("%v", err)
	}
	// sarama's own OffsetFetch, at the version.
	admin, err := sarama.NewClusterAdmin(e.Bootstrap, v.config())
	if err != nil {
		return fail("sarama admin: %v", err)
	}
	defer admin.Close()
	ps := make([]int32, partitions)
	for p := range ps {
		ps[p] = int32(p)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		return fail("sarama ListConsumerGroupOffsets: %v", err)
	}
	ends, err := highWatermarks(ctx, e, topic, partitions)
	if err != nil {
		return fail("%v", err)
	}
	for _, p := range ps {
		b := resp.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset != ends[p] {
			return fail("sarama's OffsetFetch of partition %d: %+v, the partition ends at %d", p, b, ends[p])
		}
	}
	commits := members[0].commits + members[1].commits
	return checkHandover(ctx, e, group, res, [][]kafkatest.Found{members[0].read, members[1].read},
		fmt.Sprintf("; sarama's admin fetched the same offsets; %d commits", commits))
}

// saramaMember is one member of the sarama group cell: a
// ConsumerGroupHandler that keeps what it read and which partitions it
// holds, marks every message, and commits when its claim is drained and
// when its session ends.
type saramaMember struct {
	n        int
	g        sarama.ConsumerGroup
	mu       *sync.Mutex
	assigned map[int32]bool
	read     []kafkatest.Found
	values   map[string]bool // shared by the members
	commits  int
	stop     context.CancelFunc
	wg       sync.WaitGroup
	left     bool
}

// startSaramaMember starts member n: a ConsumerGroup of brokers, a loop calling
// Consume until the member leaves, and one draining its errors.
func startSaramaMember(ctx context.Context, brokers []string, cfg *sarama.Config, n int, group, topic string, mu *sync.Mutex, values map[string]bool, errs *[]error) (*saramaMember, error) {
	g, err := sarama.NewConsumerGroup(brokers, group, cfg)
	if err != nil {
		return nil, fmt.Errorf("member %d: %w", n, err)
	}
	m := &saramaMember{n: n, g: g, mu: mu, assigned: map[int32]bool{}, values: values}
	gctx, stop := context.WithCancel(ctx)
	m.stop = stop
	m.wg.Go(func() {
		for err := range g.Errors() {
			mu.Lock()
			*errs = append(*errs, fmt.Errorf("member %d: %w", n, err))
			mu.Unlock()
		}
	})
	m.wg.Go(func() {
		for gctx.Err() == nil {
			if err := g.Consume(gctx, []string{topic}, m); err != nil && gctx.Err() == nil {
				mu.Lock()
				*errs = append(*errs, fmt.Errorf("member %d: consume: %w", n, err))
				mu.Unlock()
				return
			}
		}
	})
	return m, nil
}

// leave ends the member's session (its Cleanup commits), closes its
// ConsumerGroup (which leaves the group) and waits for its loops;
// idempotent.
func (m *saramaMember) leave() error {
	if m.left {
		return nil
	}
	m.left = true
	m.stop()
	err := m.g.Close()
	m.wg.Wait()
	if err != nil {
		return fmt.Errorf("member %d: close: %w", m.n, err)
	}
	return nil
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ps := range s.Claims() {
		for _, p := range ps {
			m.assigned[p] = true
		}
	}
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	clear(m.assigned)
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.mu.Lock()
		m.read = append(m.read, kafkatest.Found{Partition: msg.Partition, Offset: msg.Offset, Value: string(msg.Value), ProducerID: -1, Sequence: -1})
		m.values[string(msg.Value)] = true
		m.mu.Unlock()
		s.MarkMessage(msg, "")
		if len(claim.Messages()) == 0 {
			s.Commit()
			m.mu.Lock()
			m.commits++
			m.mu.Unlock()
		}
	}
	return nil
}

// saramaCodec: sarama's plain producer with the codec (no faults),
// sarama's consumer reads the records back, and the store's batches
// carry the codec. sarama refuses zstd below Version 2.1.
func saramaCodec(ctx context.Context, e *Env, v saramaVersion, feature string, codec sarama.CompressionCodec) Result {
	cfg := v.config()
	cfg.Producer.Compression = codec
	if err := cfg.Validate(); err != nil && codec == sarama.CompressionZSTD && !v.v.IsAtLeast(sarama.V2_1_0_0) {
		return notSupported("zstd needs Produce v7 (Kafka 2.1); sarama refuses the configuration: %v", err)
	}
	topic := "codec-" + feature
	res, err := saramaSendReadBack(ctx, e, v, cfg, topic, 50)
	if err != nil {
		return fail("%v", err)
	}
	return checkCodecs(e, topic, feature, fmt.Sprintf("%d records produced and read back by sarama once each", res.Acked))
}
