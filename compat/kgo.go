package main

import (
	"context"
	"errors"
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
			cells = append(cells, Cell{Client: kgoClient, Version: v.name, Feature: feature, Run: run, ClientID: kgoClientID, SegmentBytes: smallSegmentBytes})
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
	res, found, err := kgoProduceReadBack(ctx, e, v, "plain", 16, kgo.DisableIdempotentWrite())
	if err != nil {
		return fail("%v", err)
	}
	if err := verifyPlain(res, found); err != nil {
		return fail("consumed (%s): %v", e.produceText(), err)
	}
	if err := e.storeScanPlain(res); err != nil {
		return fail("%v", err)
	}
	return pass("%d records acknowledged, read back once each at their offsets; the store scan agrees", res.Acked)
}

// kgoProduceReadBack produces kgoRecords records to topic (created, no
// faults) with a kgo client at the version, opt added and at most
// maxBuffered records buffered, and reads them back with a kgo consumer
// at the same version. Every record must have been acknowledged; the
// caller checks what was read.
func kgoProduceReadBack(ctx context.Context, e *Env, v kgoVersion, topic string, maxBuffered int, opt kgo.Opt) (*kafkatest.Result, []kafkatest.Found, error) {
	w := &kafkatest.Workload{
		Brokers: e.Bootstrap, Topic: topic, Records: kgoRecords, MaxBuffered: maxBuffered, CreateTopic: true,
		Opts: append(v.opts(), opt),
	}
	res, err := w.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := allAcked(res); err != nil {
		return nil, nil, err
	}
	found, err := kafkatest.Consume(ctx, e.Bootstrap, res.Topic, res.Partitions, v.opts()...)
	if err != nil {
		return nil, nil, fmt.Errorf("consume: %w", err)
	}
	return res, found, nil
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
	return verdict(e.VerifyProduce(ctx, res))
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
	return verdict(e.VerifyTxn(ctx, res))
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
// (kgo's default balancer); once both hold partitions, half the records
// are produced and read; member 2 commits what it read and leaves, and
// member 1, which takes over its partitions from their committed
// offsets, reads the other half. Each member commits what it read after
// every poll (and on a revoke). Then CheckGroup, and no record may be
// read twice: every record read was committed before its partition
// changed hands.
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
		mu     sync.Mutex
		values = map[string]bool{}
		errs   []error
	)
	members := make([]*kgoMember, 2)
	for m := range members {
		km, err := startKgoMember(ctx, e, v, m+1, group, topic, &mu, values, &errs)
		if err != nil {
			for _, o := range members[:m] {
				o.leave(ctx)
			}
			return fail("%v", err)
		}
		members[m] = km
		defer km.leave(ctx)
	}
	assigned := func(m *kgoMember) int {
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
	res, err := groupHandover(ctx, e, topic, partitions, kgoRecords, &mu, values, &errs, func() error {
		if err := members[1].leave(ctx); err != nil {
			return err
		}
		return waitUntil(ctx, func() bool { return assigned(members[0]) == partitions })
	})
	if err != nil {
		return fail("%v", err)
	}
	if err := members[0].leave(ctx); err != nil {
		return fail("%v", err)
	}
	return checkHandover(ctx, e, group, res, [][]kafkatest.Found{members[0].read, members[1].read}, "")
}

// groupHandover produces half of n records (kgo, idempotent) to topic,
// waits until the members have read them, calls handover (member 2
// leaves), produces the other half and waits until they are read; it
// returns what was produced, as one Result.
func groupHandover(ctx context.Context, e *Env, topic string, partitions int32, n int, mu *sync.Mutex, values map[string]bool, errs *[]error, handover func() error) (*kafkatest.Result, error) {
	all := &kafkatest.Result{Topic: topic, Partitions: partitions}
	for half, prefix := range []string{"before", "after"} {
		if half == 1 {
			if err := handover(); err != nil {
				return nil, fmt.Errorf("member 2 leaving: %w", err)
			}
		}
		w := &kafkatest.Workload{Brokers: e.Bootstrap, Topic: topic, Partitions: partitions, Records: n / 2, MaxBuffered: 16, Prefix: prefix}
		res, err := w.Run(ctx)
		if err != nil {
			return nil, err
		}
		if err := allAcked(res); err != nil {
			return nil, err
		}
		all.Records = append(all.Records, res.Records...)
		all.Acked += res.Acked
		err = waitUntil(ctx, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(values) >= all.Acked || len(*errs) > 0
		})
		mu.Lock()
		read, gerr := len(values), errors.Join(*errs...)
		mu.Unlock()
		if gerr != nil {
			return nil, gerr
		}
		if err != nil {
			return nil, fmt.Errorf("%d of %d records read (%s member 2 left): %w", read, all.Acked, prefix, err)
		}
	}
	return all, nil
}

// checkHandover is CheckGroup, and no record read twice: member 2
// committed everything it read before it left. more is added to the
// detail.
func checkHandover(ctx context.Context, e *Env, group string, res *kafkatest.Result, members [][]kafkatest.Found, more string) Result {
	detail, err := e.CheckGroup(ctx, group, res, members)
	if err != nil {
		return fail("%v", err)
	}
	seen := map[string]bool{}
	var twice []string
	for _, read := range members {
		for _, f := range read {
			if seen[f.Value] && len(twice) < 5 {
				twice = append(twice, fmt.Sprintf("%q (partition %d offset %d)", f.Value, f.Partition, f.Offset))
			}
			seen[f.Value] = true
		}
	}
	if len(twice) > 0 {
		return fail("read twice although every record read was committed before its partition changed hands: %s; %s", strings.Join(twice, ", "), detail)
	}
	return pass("%s; member 2 committed and left halfway, member 1 took its partitions over from the committed offsets%s", detail, more)
}

// kgoMember is one kgo group consumer of kgoGroups.
type kgoMember struct {
	n        int
	cl       *kgo.Client
	mu       *sync.Mutex
	assigned map[int32]bool
	read     []kafkatest.Found
	stop     context.CancelFunc
	done     chan struct{}
	left     bool
}

// startKgoMember starts member n's client and its poll loop, which
// records what it reads (in values too), then commits it.
func startKgoMember(ctx context.Context, e *Env, v kgoVersion, n int, group, topic string, mu *sync.Mutex, values map[string]bool, errs *[]error) (*kgoMember, error) {
	m := &kgoMember{n: n, mu: mu, assigned: map[int32]bool{}, done: make(chan struct{})}
	note := func(ps map[string][]int32, add bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps[topic] {
			if add {
				m.assigned[p] = true
			} else {
				delete(m.assigned, p)
			}
		}
	}
	fault := func(err error) {
		mu.Lock()
		*errs = append(*errs, fmt.Errorf("member %d: %w", n, err))
		mu.Unlock()
	}
	opts := append(kafkatest.ClientOpts(e.Bootstrap...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { note(ps, true) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				fault(fmt.Errorf("commit on revoke: %w", err))
			}
			note(ps, false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { note(ps, false) }),
	)
	cl, err := kgo.NewClient(append(opts, v.opts()...)...)
	if err != nil {
		return nil, fmt.Errorf("member %d: %w", n, err)
	}
	m.cl = cl
	pctx, stop := context.WithCancel(ctx)
	m.stop = stop
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			fs := cl.PollFetches(pctx)
			if pctx.Err() != nil {
				return
			}
			fs.EachError(func(t string, p int32, err error) { fault(fmt.Errorf("%s-%d: %w", t, p, err)) })
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				m.read = append(m.read, kafkatest.Found{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
				values[string(r.Value)] = true
			})
			mu.Unlock()
			if err := cl.CommitUncommittedOffsets(pctx); err != nil && pctx.Err() == nil {
				fault(fmt.Errorf("commit: %w", err))
			}
		}
	}()
	return m, nil
}

// leave stops the member's poll loop, commits what it read and closes
// its client, which leaves the group; idempotent.
func (m *kgoMember) leave(ctx context.Context) error {
	if m.left {
		return nil
	}
	m.left = true
	m.stop()
	<-m.done
	err := m.cl.CommitUncommittedOffsets(ctx)
	m.cl.Close()
	if err != nil {
		return fmt.Errorf("member %d: final commit: %w", m.n, err)
	}
	return nil
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
// carry the codec. zstd below Kafka 2.1 is n/a, as measured: kgo then
// sends the batches uncompressed.
func kgoCodec(ctx context.Context, e *Env, v kgoVersion, feature string, codec kgo.CompressionCodec) Result {
	topic := "codec-" + feature
	res, found, err := kgoProduceReadBack(ctx, e, v, topic, 50, kgo.ProducerBatchCompression(codec))
	if err != nil {
		return fail("%v", err)
	}
	if err := kafkatest.Verify(res, found); err != nil {
		return fail("consumed (%s): %v", e.produceText(), err)
	}
	done := fmt.Sprintf("%d records produced and read back once each", res.Acked)
	if feature == FeatureZstd && !v.zstd {
		// kgo skips zstd below Produce v7 and sends the batches
		// uncompressed; a zstd batch in the store would be one the
		// server took on a Produce version that cannot carry it.
		codecs, err := e.StoreCodecs(topic)
		if err != nil {
			return fail("%v", err)
		}
		if len(codecs) != 1 || codecs["none"] == 0 {
			return fail("%s, and the store's batches are %s: zstd on a Produce version below 7", done, codecText(codecs))
		}
		return notSupported("zstd needs Produce v7 (Kafka 2.1): kgo, asked for zstd at this version, sent its %d records in %d uncompressed batches (read back once each)", res.Acked, codecs["none"])
	}
	return checkCodecs(e, topic, feature, done)
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
