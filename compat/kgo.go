package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logstore/logstore/internal/kafkatest"
)

const kgoClient = "franz-go (kgo)"

func init() {
	clientInfos = append(clientInfos, ClientInfo{
		Name:    kgoClient,
		Version: "github.com/twmb/franz-go " + moduleVersion("github.com/twmb/franz-go"),
		Source:  "Go module proxy (logstore's go.mod)",
		Note:    "versions column: kgo.MaxVersions(kversion.V0_11_0()) etc., the newest Kafka's request versions kgo may use; newest: no MaxVersions (kgo picks the highest version the server advertises)",
	})
	cellSets = append(cellSets, kgoCells)
}

// kgoVersion is one row of kgo's table: a MaxVersions cap, nil for none.
type kgoVersion struct {
	name string
	max  *kversion.Versions
	zstd bool // Produce v7 (Kafka 2.1), which zstd needs, is allowed
}

func kgoVersions() []kgoVersion {
	return []kgoVersion{
		{"0.11", kversion.V0_11_0(), false},
		{"2.1", kversion.V2_1_0(), true},
		{"2.8", kversion.V2_8_0(), true},
		{"3.9", kversion.V3_9_0(), true},
		{"newest", nil, true},
	}
}

// kgoClientID is the client id of the kgo clients under test; the
// checkers' kgo clients keep kgo's default.
const kgoClientID = "compat-kgo"

// opts are the options of a kgo client under test at the version. Its
// request timeouts are long (10 s; kafkatest's clients use 1 s): the
// proxy's faults close connections, which kgo notices at once, so the
// timeouts only matter when an fsync is slow on a loaded machine, and
// then a retry would only muddle what the cell measures (a plain
// producer's retry writes its batch twice, as Kafka documents).
func (v kgoVersion) opts() []kgo.Opt {
	opts := []kgo.Opt{kgo.ClientID(kgoClientID), kgo.RequestTimeoutOverhead(10 * time.Second), kgo.ProduceRequestTimeout(5 * time.Second)}
	if v.max != nil {
		opts = append(opts, kgo.MaxVersions(v.max))
	}
	return opts
}

// Record counts of kgo's cells: small, so the matrix stays within its
// few minutes.
const (
	kgoRecords     = 200
	kgoIdemRecords = 300
	kgoTxns        = 6
	txnPartitions  = 3
)

func kgoCells() []Cell {
	var cells []Cell
	for _, v := range kgoVersions() {
		add := func(feature string, run func(context.Context, *Env) Result) {
			cells = append(cells, Cell{Client: kgoClient, Version: v.name, Feature: feature, Run: run, ClientID: kgoClientID})
		}
		add(FeatureProduce, func(ctx context.Context, e *Env) Result { return kgoProduce(ctx, e, v) })
		add(FeatureIdempotent, func(ctx context.Context, e *Env) Result { return kgoIdempotent(ctx, e, v) })
		add(FeatureTransactions, func(ctx context.Context, e *Env) Result { return kgoTransactions(ctx, e, v) })
		add(FeatureReadCommitted, func(ctx context.Context, e *Env) Result { return kgoReadCommitted(ctx, e, v) })
		add(FeatureGroups, func(ctx context.Context, e *Env) Result { return kgoGroups(ctx, e, v) })
		for _, c := range []struct {
			feature string
			codec   kgo.CompressionCodec
		}{
			{FeatureGzip, kgo.GzipCompression()},
			{FeatureSnappy, kgo.SnappyCompression()},
			{FeatureLZ4, kgo.Lz4Compression()},
			{FeatureZstd, kgo.ZstdCompression()},
		} {
			add(c.feature, func(ctx context.Context, e *Env) Result { return kgoCodec(ctx, e, v, c.feature, c.codec) })
		}
	}
	return cells
}

// kgoProduce: a plain producer (idempotence disabled), acks=all, no
// faults, read back by a kgo consumer at the same version; the store
// scan must hold the same records.
func kgoProduce(ctx context.Context, e *Env, v kgoVersion) Result {
	w := &kafkatest.Workload{
		Brokers: e.Bootstrap, Topic: "plain", Records: kgoRecords, MaxBuffered: 16, CreateTopic: true,
		Opts: append(v.opts(), kgo.DisableIdempotentWrite()),
	}
	res, err := w.Run(ctx)
	if err != nil {
		return fail("%v", err)
	}
	if res.Acked != len(res.Records) {
		return fail("%d of %d records acknowledged: %v", res.Acked, len(res.Records), res.Err)
	}
	found, err := kafkatest.Consume(ctx, e.Bootstrap, res.Topic, res.Partitions, v.opts()...)
	if err != nil {
		return fail("consume: %v", err)
	}
	if err := verifyPlain(res, found); err != nil {
		return fail("consumed (%s): %v", e.produceText(), err)
	}
	if err := e.Stop(); err != nil {
		return fail("%v", err)
	}
	scanned, err := kafkatest.ScanStore(e.Dir, res.Topic, res.Partitions)
	if err != nil {
		return fail("%v", err)
	}
	if err := verifyPlain(res, scanned); err != nil {
		return fail("store scan (%s): %v", e.produceText(), err)
	}
	return pass("%d records acknowledged, read back once each at their offsets; the store scan agrees", res.Acked)
}

// verifyPlain is kafkatest.Verify for records of a plain producer, which
// carry no producer id (Verify's producer checks do not apply).
func verifyPlain(res *kafkatest.Result, found []kafkatest.Found) error {
	plain := make([]kafkatest.Found, len(found))
	for i, f := range found {
		if f.ProducerID >= 0 {
			return fmt.Errorf("partition %d offset %d (%q): producer id %d on a record of a plain producer", f.Partition, f.Offset, f.Value, f.ProducerID)
		}
		f.ProducerID, f.Sequence = 0, -1
		plain[i] = f
	}
	return kafkatest.Verify(res, plain)
}

// kgoIdempotent: kgo's idempotent producer through the standard faults,
// many small requests (at most 8 records buffered), then VerifyProduce.
func kgoIdempotent(ctx context.Context, e *Env, v kgoVersion) Result {
	if err := e.CreateTopic(ctx, "idem", 3); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	w := &kafkatest.Workload{Brokers: e.Bootstrap, Topic: "idem", Records: kgoIdemRecords, MaxBuffered: 8, Opts: v.opts()}
	res, err := w.Run(ctx)
	if err != nil {
		return fail("%v", err)
	}
	detail, err := e.VerifyProduce(ctx, res)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s", detail)
}

// kgoTransactions: kgo's transactional producer (kafkatest.TxnWorkload),
// commits and aborts alternating, through the standard faults; then
// VerifyTxn.
func kgoTransactions(ctx context.Context, e *Env, v kgoVersion) Result {
	if err := e.CreateTopic(ctx, "txn", txnPartitions); err != nil {
		return fail("%v", err)
	}
	e.Faults()
	w := &kafkatest.TxnWorkload{
		Brokers: e.Bootstrap, Topic: "txn", Partitions: txnPartitions, Transactions: kgoTxns, PerTxn: 20,
		Commit: txnPlan, Opts: append(v.opts(), kgo.MaxBufferedRecords(4)),
	}
	res, err := w.Run(ctx)
	if err != nil {
		return fail("%v", err)
	}
	detail, err := e.VerifyTxn(ctx, res)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s", detail)
}

// kgoReadCommitted: a log of committed and aborted transactions
// (WriteTxnLog), read by kgo at the version at read_uncommitted (the
// whole log: VerifyTxnLog) and at read_committed (VerifyTxnCommitted:
// exactly the committed records, and the markers).
func kgoReadCommitted(ctx context.Context, e *Env, v kgoVersion) Result {
	res, err := e.WriteTxnLog(ctx, "rc", txnPartitions, rcTxns)
	if err != nil {
		return fail("%v", err)
	}
	committed, err := kafkatest.ConsumeTxns(ctx, e.Bootstrap, res.Topic, res.Partitions, kgo.ReadCommitted(), v.opts()...)
	if err != nil {
		return fail("read_committed: %v", err)
	}
	var data []kafkatest.Found
	markers := 0
	for _, en := range committed {
		if en.Control {
			markers++
			continue
		}
		data = append(data, kafkatest.Found{Partition: en.Partition, Offset: en.Offset, Value: en.Value, ProducerID: en.ProducerID, Sequence: -1})
	}
	if err := kafkatest.VerifyTxnCommitted(res, e.verdicts[res.Topic], committed); err != nil {
		return fail("%v", err)
	}
	detail, err := e.CheckReadCommitted(res, data)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s; the %d markers where the log has them", detail, markers)
}

// kgoGroups: two kgo group consumers at the version join one group
// (kgo's default balancer), the records are produced once both have
// partitions, each member commits what it read after every poll (and on
// a revoke); then CheckGroup.
func kgoGroups(ctx context.Context, e *Env, v kgoVersion) Result {
	const (
		topic      = "grp"
		group      = "compat-kgo"
		partitions = 4
	)
	if err := e.CreateTopic(ctx, topic, partitions); err != nil {
		return fail("%v", err)
	}
	var (
		mu       sync.Mutex
		assigned = make([]map[int32]bool, 2)
		read     = make([][]kafkatest.Found, 2)
		values   = map[string]bool{}
	)
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	clients := make([]*kgo.Client, 2)
	for m := range clients {
		assigned[m] = map[int32]bool{}
		opts := append(kafkatest.ClientOpts(e.Bootstrap...),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				mu.Lock()
				for _, p := range ps[topic] {
					assigned[m][p] = true
				}
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				cl.CommitUncommittedOffsets(ctx)
				mu.Lock()
				for _, p := range ps[topic] {
					delete(assigned[m], p)
				}
				mu.Unlock()
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				mu.Lock()
				for _, p := range ps[topic] {
					delete(assigned[m], p)
				}
				mu.Unlock()
			}),
		)
		cl, err := kgo.NewClient(append(opts, v.opts()...)...)
		if err != nil {
			return fail("member %d: %v", m+1, err)
		}
		clients[m] = cl
		defer cl.Close()
	}
	var pollErr error
	for m, cl := range clients {
		wg.Go(func() {
			for mctx.Err() == nil {
				fs := cl.PollFetches(mctx)
				if mctx.Err() != nil {
					return
				}
				fs.EachError(func(t string, p int32, err error) {
					mu.Lock()
					if pollErr == nil {
						pollErr = fmt.Errorf("member %d: %s-%d: %w", m+1, t, p, err)
					}
					mu.Unlock()
				})
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					read[m] = append(read[m], kafkatest.Found{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
					values[string(r.Value)] = true
				})
				mu.Unlock()
				if err := cl.CommitUncommittedOffsets(mctx); err != nil && mctx.Err() == nil {
					mu.Lock()
					if pollErr == nil {
						pollErr = fmt.Errorf("member %d: commit: %w", m+1, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	// Both members must hold partitions before anything is produced.
	balanced := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(assigned[0]) > 0 && len(assigned[1]) > 0 && len(assigned[0])+len(assigned[1]) == partitions
	}
	if err := waitUntil(ctx, balanced); err != nil {
		stop()
		wg.Wait()
		return fail("the two members never shared the %d partitions: %v (assigned %v)", partitions, err, assigned)
	}
	w := &kafkatest.Workload{Brokers: e.Bootstrap, Topic: topic, Partitions: partitions, Records: kgoRecords, MaxBuffered: 16}
	res, err := w.Run(ctx)
	if err != nil {
		stop()
		wg.Wait()
		return fail("%v", err)
	}
	err = waitUntil(ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(values) >= res.Acked || pollErr != nil
	})
	stop()
	wg.Wait()
	if pollErr != nil {
		return fail("%v", pollErr)
	}
	if err != nil {
		return fail("%d of %d records read: %v", len(values), res.Acked, err)
	}
	for m, cl := range clients {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return fail("member %d: final commit: %v", m+1, err)
		}
		cl.Close() // leaves the group
	}
	detail, err := e.CheckGroup(ctx, group, res, read)
	if err != nil {
		return fail("%v", err)
	}
	return pass("%s", detail)
}

// waitUntil polls cond every 20 ms until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// kgoCodec: kgo produces idempotently with the codec (no faults), reads
// the records back at the same version, and the store's batches must all
// carry the codec.
func kgoCodec(ctx context.Context, e *Env, v kgoVersion, feature string, codec kgo.CompressionCodec) Result {
	if feature == FeatureZstd && !v.zstd {
		return notSupported("zstd needs Produce v7 (Kafka 2.1); kgo at this version refuses to send it")
	}
	topic := "codec-" + feature
	w := &kafkatest.Workload{
		Brokers: e.Bootstrap, Topic: topic, Records: kgoRecords, MaxBuffered: 50, CreateTopic: true,
		Opts: append(v.opts(), kgo.ProducerBatchCompression(codec)),
	}
	res, err := w.Run(ctx)
	if err != nil {
		return fail("%v", err)
	}
	if res.Acked != len(res.Records) {
		return fail("%d of %d records acknowledged: %v", res.Acked, len(res.Records), res.Err)
	}
	found, err := kafkatest.Consume(ctx, e.Bootstrap, res.Topic, res.Partitions, v.opts()...)
	if err != nil {
		return fail("consume: %v", err)
	}
	if err := kafkatest.Verify(res, found); err != nil {
		return fail("consumed (%s): %v", e.produceText(), err)
	}
	return checkCodecs(e, topic, feature, fmt.Sprintf("%d records produced and read back once each", res.Acked))
}

// checkCodecs stops the server and checks the codecs of topic's data
// batches in the store: every batch carries the codec (feature is its
// name) or none, and most carry it. A client may send a batch
// uncompressed when the codec does not shrink it (kgo does, and a batch
// of one short record does not shrink under gzip), which Kafka accepts
// as it is; any other codec fails.
func checkCodecs(e *Env, topic, codec, done string) Result {
	codecs, err := e.StoreCodecs(topic)
	if err != nil {
		return fail("%v", err)
	}
	n, none := codecs[codec], codecs["none"]
	if len(codecs) > 2 || len(codecs) == 2 && none == 0 || n <= none {
		return fail("%s, but the store's batches are %s, not %s", done, codecText(codecs), codec)
	}
	if none > 0 {
		return pass("%s; the store's batches are %d %s and %d uncompressed (the client sends a batch uncompressed when %s does not shrink it)", done, n, codec, none, codec)
	}
	return pass("%s; the store's %d batches are all %s", done, n, codec)
}

// codecText is "3 gzip, 1 none".
func codecText(codecs map[string]int) string {
	var parts []string
	for c, n := range codecs {
		parts = append(parts, fmt.Sprintf("%d %s", n, c))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none at all"
	}
	return strings.Join(parts, ", ")
}
