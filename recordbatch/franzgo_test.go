package recordbatch_test

// Cross-checks against franz-go, a Kafka client written independently of
// this package: its producer (kgo) writes batches that we decode, its
// in-process broker (kfake) stores batches that we encode, and its decoders
// (kmsg and the kgo consumer) read both. Every field is compared, not only
// record counts. The same generators write the golden segments under
// testdata/segments (go test ./recordbatch -run TestGoldenSegments -update).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/recordbatch"
)

var update = flag.Bool("update", false, "rewrite testdata/segments from the generators")

const (
	fgTopic   = "logstore"
	fgT       = int64(1764000000000) // base of every record timestamp here
	fgTimeout = 45 * time.Second     // per test; nothing may wait longer

	// fgSegmentName is the name Kafka gives the first segment of a log.
	fgSegmentName = "00000000000000000000.log"
	// fgMaxGolden bounds every committed golden segment.
	fgMaxGolden = 64 << 10
)

var fgCodecs = []recordbatch.Codec{
	recordbatch.CodecNone, recordbatch.CodecGzip, recordbatch.CodecSnappy,
	recordbatch.CodecLZ4, recordbatch.CodecZstd,
}

// ---------------------------------------------------------------------------
// Inputs

// fgRec is one record as a producer hands it over.
type fgRec struct {
	ts         int64
	key, value []byte
	headers    []recordbatch.RecordHeader
}

// fgStep is a group of records produced together and flushed at once; in
// a transactional run it is one transaction, which end closes.
type fgStep struct {
	recs []fgRec
	end  recordbatch.ControlType // ControlCommit or ControlAbort (transactional runs only)
}

// fgRun is one franz-go producer session against a fresh broker.
type fgRun struct {
	codec recordbatch.Codec // requested; franz-go sends a batch uncompressed when compressing does not shrink it
	txnID string            // "" for the default idempotent producer
	steps []fgStep
}

// fgSmallRecs returns n deterministic records numbered first..first+n-1:
// null, empty and plain keys and values, headers with null and empty
// values and an empty key, and now and then a timestamp below the previous
// one (a negative delta when it is not the first of its batch).
func fgSmallRecs(prefix string, first, n int) []fgRec {
	recs := make([]fgRec, n)
	for i := range recs {
		g := first + i
		r := fgRec{ts: fgT + int64(g)*10}
		if g%7 == 3 {
			r.ts -= 25
		}
		switch g % 4 {
		case 0: // null key
		case 1:
			r.key = []byte{}
		default:
			r.key = fmt.Appendf(nil, "%s-key-%d", prefix, g%3)
		}
		switch g % 6 {
		case 2: // null value
		case 5:
			r.value = []byte{}
		default:
			r.value = []byte(strings.Repeat(fmt.Sprintf("%s-value-%d ", prefix, g), 2+g%5))
		}
		switch g % 3 {
		case 1:
			r.headers = []recordbatch.RecordHeader{
				{Key: []byte("trace"), Value: fmt.Appendf(nil, "t-%d", g)},
				{Key: []byte("null"), Value: nil},
			}
		case 2:
			r.headers = []recordbatch.RecordHeader{
				{Key: []byte("empty"), Value: []byte{}},
				{Key: []byte{}, Value: []byte("no key")},
			}
		}
		recs[i] = r
	}
	return recs
}

// fgCodecRun is an idempotent producer asking for codec. large adds
// records with ~100 KiB values: two compressible ones in one batch, and an
// incompressible one alone, which franz-go sends uncompressed.
func fgCodecRun(codec recordbatch.Codec, large bool) fgRun {
	prefix := "fg-" + codec.String()
	run := fgRun{codec: codec, steps: []fgStep{
		{recs: fgSmallRecs(prefix, 0, 12)},
		{recs: fgSmallRecs(prefix, 12, 5)},
	}}
	if large {
		big := bytes.Repeat([]byte("logstore franz-go "), 100<<10/18)
		noise := make([]byte, 100<<10)
		rand.NewChaCha8([32]byte{'l', 'o', 'g'}).Read(noise)
		run.steps = append(run.steps,
			fgStep{recs: []fgRec{
				{ts: fgT + 1000, key: []byte("big-0"), value: big, headers: []recordbatch.RecordHeader{{Key: []byte("size"), Value: []byte("100KiB")}}},
				{ts: fgT + 1001, value: big[1:]},
				{ts: fgT + 1002, key: []byte("small"), value: []byte("after the big ones")},
			}},
			fgStep{recs: []fgRec{{ts: fgT + 2000, key: []byte("noise"), value: noise}}},
		)
	}
	return run
}

// fgTxnRun is a transactional producer: a committed, an aborted and
// another committed transaction.
func fgTxnRun(codec recordbatch.Codec) fgRun {
	return fgRun{codec: codec, txnID: "logstore-txn", steps: []fgStep{
		{recs: fgSmallRecs("txn-a", 0, 4), end: recordbatch.ControlCommit},
		{recs: fgSmallRecs("txn-b", 4, 3), end: recordbatch.ControlAbort},
		{recs: fgSmallRecs("txn-c", 7, 2), end: recordbatch.ControlCommit},
	}}
}

func fgKgoCodec(c recordbatch.Codec) kgo.CompressionCodec {
	switch c {
	case recordbatch.CodecGzip:
		return kgo.GzipCompression()
	case recordbatch.CodecSnappy:
		return kgo.SnappyCompression()
	case recordbatch.CodecLZ4:
		return kgo.Lz4Compression()
	case recordbatch.CodecZstd:
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}

// ---------------------------------------------------------------------------
// The in-process broker

// fgCluster is one kfake broker holding one single-partition topic, and a
// client for raw requests. Both close when the test ends.
type fgCluster struct {
	addrs   []string
	admin   *kgo.Client
	topicID [16]byte
}

func fgNewCluster(t *testing.T, ctx context.Context) *fgCluster {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(1, fgTopic),
		// Kafka 3.9's API: the classic transaction protocol, as logstore
		// speaks it. Kafka 4's transaction.version 2 (KIP-890: an epoch
		// bump at every EndTxn, which kgo opts in to as it notices)
		// once made kgo's second transaction fail with
		// OUT_OF_ORDER_SEQUENCE_NUMBER from kfake, in a race run of the
		// whole suite.
		kfake.MaxVersions(kversion.V3_9_0()),
		// Room for a batch holding a 1 MiB value uncompressed.
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(8 << 20)}),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	fc := &fgCluster{addrs: c.ListenAddrs()}
	fc.admin = fgClient(t, kgo.SeedBrokers(fc.addrs...))

	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(fgTopic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, fc.admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %+v", fgTopic, resp.Topics)
	}
	fc.topicID = resp.Topics[0].TopicID
	return fc
}

func fgClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce runs one kgo producer session. Records are flushed by hand, step
// by step, so the batch boundaries depend on the inputs only.
func (fc *fgCluster) produce(t *testing.T, ctx context.Context, run fgRun) {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(fc.addrs...),
		kgo.DefaultProduceTopic(fgTopic),
		kgo.ManualFlushing(),
		kgo.ProducerBatchCompression(fgKgoCodec(run.codec)),
	}
	if run.txnID != "" {
		opts = append(opts, kgo.TransactionalID(run.txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, st := range run.steps {
		if run.txnID != "" {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatalf("step %d: begin transaction: %v", i, err)
			}
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for _, r := range st.recs {
			kr := &kgo.Record{Key: r.key, Value: r.value, Timestamp: time.UnixMilli(r.ts)}
			for _, h := range r.headers {
				kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: string(h.Key), Value: h.Value})
			}
			wg.Add(1)
			cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("step %d: flush: %v", i, err)
		}
		wg.Wait() // Flush returned: every record is done; this orders the reads of errs after the promises
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("step %d: produce: %v", i, err)
		}
		if run.txnID != "" {
			end := kgo.TryAbort
			if st.end == recordbatch.ControlCommit {
				end = kgo.TryCommit
			}
			if err := cl.EndTransaction(ctx, end); err != nil {
				t.Fatalf("step %d: end transaction (%s): %v", i, st.end, err)
			}
		}
	}
}

// produceRaw sends one batch as it is in a ProduceRequest (acks -1) and
// returns the partition's answer: error code and base offset.
func (fc *fgCluster) produceRaw(t *testing.T, ctx context.Context, batch []byte) (int16, int64) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = fgTopic, fc.topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, fc.admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// fetchSegment fetches the partition from offset 0 to the high watermark
// with raw Fetch requests (read_uncommitted: transactional data, aborted
// data and markers alike) and returns the batches concatenated, as Kafka
// lays them out in a segment.
func (fc *fgCluster) fetchSegment(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	var seg []byte
	next, hwm := int64(0), int64(-1)
	for hwm < 0 || next < hwm {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MinBytes = 1
		req.MaxBytes = 64 << 20
		req.IsolationLevel = 0 // read_uncommitted
		req.SessionEpoch = -1  // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = fgTopic, fc.topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rp.FetchOffset = next
		rp.PartitionMaxBytes = 64 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, fc.admin)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch response: %+v", resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("fetch at %d: %v", next, err)
		}
		hwm = p.HighWatermark
		before := next
		data := p.RecordBatches
		for pos := 0; pos < len(data); {
			b, err := recordbatch.Parse(data[pos:], 0)
			if errors.Is(err, recordbatch.ErrTruncated) {
				break // a partial batch ends a response when the size limit cuts it
			}
			if err != nil {
				t.Fatalf("fetch at %d, batch at byte %d: %v", next, pos, err)
			}
			if b.LastOffset() >= next {
				seg = append(seg, b...)
				next = b.LastOffset() + 1
			}
			pos += b.Size()
		}
		if next == before && next < hwm {
			t.Fatalf("fetch at %d made no progress (high watermark %d)", next, hwm)
		}
	}
	return seg
}

// consume reads offsets 0..upTo-1 with a kgo consumer, read_uncommitted,
// control records kept.
func (fc *fgCluster) consume(t *testing.T, ctx context.Context, upTo int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(fc.addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{fgTopic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(64<<20),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for next := int64(0); next < upTo; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming at offset %d of %d: %v", next, upTo, err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			next = r.Offset + 1
		})
	}
	return recs
}

// ---------------------------------------------------------------------------
// Comparisons

// fgCmp names what is compared in failure messages.
type fgCmp struct {
	t     *testing.T
	where string
	other string // who the second value comes from
}

func fgEq[T comparable](c fgCmp, field string, ours, other T) {
	c.t.Helper()
	if ours != other {
		c.t.Errorf("%s: %s: ours %v, %s %v", c.where, field, ours, c.other, other)
	}
}

// fgEqBytes compares contents and null-ness: nil is null, []byte{} empty.
func fgEqBytes(c fgCmp, field string, ours, other []byte) {
	c.t.Helper()
	if (ours == nil) != (other == nil) || !bytes.Equal(ours, other) {
		c.t.Errorf("%s: %s: ours %s, %s %s", c.where, field, fgShow(ours), c.other, fgShow(other))
	}
}

func fgShow(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 40:
		return fmt.Sprintf("%q... (%d bytes)", b[:40], len(b))
	default:
		return fmt.Sprintf("%q", b)
	}
}

func fgEqHeaders(c fgCmp, ours, other []recordbatch.RecordHeader) {
	c.t.Helper()
	if len(ours) != len(other) {
		c.t.Errorf("%s: %d headers, %s %d", c.where, len(ours), c.other, len(other))
		return
	}
	for j := range ours {
		fgEq(c, fmt.Sprintf("header %d key", j), string(ours[j].Key), string(other[j].Key))
		fgEqBytes(c, fmt.Sprintf("header %d value", j), ours[j].Value, other[j].Value)
	}
}

func fgKgoHeaders(hs []kgo.RecordHeader) []recordbatch.RecordHeader {
	var out []recordbatch.RecordHeader
	for _, h := range hs {
		out = append(out, recordbatch.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return out
}

// fgSeq is base advanced by delta with Kafka's wrap past 2147483647 to 0,
// computed independently of the package.
func fgSeq(base, delta int32) int32 { return int32((int64(base) + int64(delta)) % (1 << 31)) }

// fgCompareKmsg decodes b with kmsg and franz-go's decompressor and
// compares every header field, the raw and the decompressed records
// section, and every field of every record with ours.
func fgCompareKmsg(t *testing.T, where string, b recordbatch.Batch) {
	t.Helper()
	c := fgCmp{t, where, "kmsg"}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Errorf("%s: kmsg.RecordBatch.ReadFrom: %v", where, err)
		return
	}
	h := b.Header()
	fgEq(c, "BaseOffset/FirstOffset", h.BaseOffset, kb.FirstOffset)
	fgEq(c, "BatchLength/Length", h.BatchLength, kb.Length)
	fgEq(c, "PartitionLeaderEpoch", h.PartitionLeaderEpoch, kb.PartitionLeaderEpoch)
	fgEq(c, "Magic", h.Magic, kb.Magic)
	fgEq(c, "CRC", h.CRC, uint32(kb.CRC))
	fgEq(c, "Attributes", int16(h.Attributes), kb.Attributes)
	fgEq(c, "LastOffsetDelta", h.LastOffsetDelta, kb.LastOffsetDelta)
	fgEq(c, "BaseTimestamp/FirstTimestamp", h.BaseTimestamp, kb.FirstTimestamp)
	fgEq(c, "MaxTimestamp", h.MaxTimestamp, kb.MaxTimestamp)
	fgEq(c, "ProducerID", h.ProducerID, kb.ProducerID)
	fgEq(c, "ProducerEpoch", h.ProducerEpoch, kb.ProducerEpoch)
	fgEq(c, "BaseSequence/FirstSequence", h.BaseSequence, kb.FirstSequence)
	fgEq(c, "NumRecords", h.NumRecords, kb.NumRecords)
	fgEq(c, "Size", b.Size(), len(kb.AppendTo(nil)))
	fgEqBytes(c, "records section", b.Records(), kb.Records)

	codec := h.Attributes.Codec()
	theirs, err := kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(codec))
	if err != nil {
		t.Errorf("%s: franz-go cannot decompress %s: %v", where, codec, err)
		return
	}
	ours, err := recordbatch.Decompress(nil, codec, b.Records(), recordbatch.DefaultMaxRecordsBytes)
	if err != nil {
		t.Errorf("%s: Decompress %s: %v", where, codec, err)
		return
	}
	if !bytes.Equal(ours, theirs) {
		t.Errorf("%s: decompressed %s records differ: ours %d bytes, franz-go %d", where, codec, len(ours), len(theirs))
		return
	}
	var r recordbatch.RecordReader
	if err := r.Reset(b, 0); err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	in := theirs
	for i := 0; r.Next(); i++ {
		rec := r.Record()
		c := fgCmp{t, fmt.Sprintf("%s record %d", where, i), "kmsg"}
		l, n := binary.Varint(in) // Kafka's varints are zig-zag, as encoding/binary's
		if n <= 0 || l < 0 || int64(len(in)-n) < l {
			t.Errorf("%s: bad length prefix", c.where)
			return
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(in[:n+int(l)]); err != nil {
			t.Errorf("%s: kmsg.Record.ReadFrom: %v", c.where, err)
			return
		}
		in = in[n+int(l):]
		fgEq(c, "Attributes", rec.Attributes, kr.Attributes)
		fgEq(c, "TimestampDelta", rec.TimestampDelta, kr.TimestampDelta64)
		fgEq(c, "OffsetDelta", rec.OffsetDelta, kr.OffsetDelta)
		fgEqBytes(c, "Key", rec.Key, kr.Key)
		fgEqBytes(c, "Value", rec.Value, kr.Value)
		var hs []recordbatch.RecordHeader
		for _, h := range kr.Headers {
			hs = append(hs, recordbatch.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		fgEqHeaders(c, rec.Headers, hs)
	}
	if err := r.Err(); err != nil {
		t.Errorf("%s: %v", where, err)
	}
	if len(in) != 0 {
		t.Errorf("%s: kmsg has %d bytes left after our last record", where, len(in))
	}
}

// fgCompareKgo compares every record we decode from batches with the
// record the kgo consumer returned at the same offset.
func fgCompareKgo(t *testing.T, batches []recordbatch.Batch, krecs []*kgo.Record) {
	t.Helper()
	byOff := make(map[int64]*kgo.Record, len(krecs))
	for _, kr := range krecs {
		if _, dup := byOff[kr.Offset]; dup {
			t.Errorf("kgo returned offset %d twice", kr.Offset)
		}
		byOff[kr.Offset] = kr
	}
	var r recordbatch.RecordReader
	for bi, b := range batches {
		if err := r.Reset(b, 0); err != nil {
			t.Errorf("batch %d: %v", bi, err)
			continue
		}
		a := b.Attributes()
		for r.Next() {
			rec := r.Record()
			c := fgCmp{t, fmt.Sprintf("batch %d offset %d", bi, rec.Offset), "kgo"}
			kr := byOff[rec.Offset]
			if kr == nil {
				t.Errorf("%s: kgo returned no record there", c.where)
				continue
			}
			delete(byOff, rec.Offset)
			fgEq(c, "Offset", rec.Offset, kr.Offset)
			fgEq(c, "Timestamp", rec.Timestamp, kr.Timestamp.UnixMilli())
			fgEqBytes(c, "Key", rec.Key, kr.Key)
			fgEqBytes(c, "Value", rec.Value, kr.Value)
			fgEqHeaders(c, rec.Headers, fgKgoHeaders(kr.Headers))
			fgEq(c, "ProducerID", b.ProducerID(), kr.ProducerID)
			fgEq(c, "ProducerEpoch", b.ProducerEpoch(), kr.ProducerEpoch)
			fgEq(c, "LeaderEpoch", b.PartitionLeaderEpoch(), kr.LeaderEpoch)
			fgEq(c, "codec", uint8(a.Codec()), kr.Attrs.CompressionType())
			fgEq(c, "timestamp type", int8(a.TimestampType()), kr.Attrs.TimestampType())
			fgEq(c, "transactional", a.Transactional(), kr.Attrs.IsTransactional())
			fgEq(c, "control", a.Control(), kr.Attrs.IsControl())
			// kgo does not expose a record's sequence: check ours against
			// the batch header, wrapping as Kafka does.
			want := recordbatch.NoSequence
			if b.BaseSequence() >= 0 {
				want = fgSeq(b.BaseSequence(), rec.OffsetDelta)
			}
			fgEq(fgCmp{t, c.where, "header"}, "Sequence", rec.Sequence, want)
		}
		if err := r.Err(); err != nil {
			t.Errorf("batch %d: %v", bi, err)
		}
	}
	for off := range byOff {
		t.Errorf("kgo returned offset %d, which we did not decode", off)
	}
}

// fgCheckRun checks a segment franz-go produced against the run's inputs:
// batch layout (contiguous offsets, one producer, sequences from 0 and
// contiguous per producer epoch, the codec asked for or none), every
// record's fields, and one marker of the right type after each
// transaction. It returns the number of data batches per codec.
func fgCheckRun(t *testing.T, batches []recordbatch.Batch, run fgRun) map[recordbatch.Codec]int {
	t.Helper()
	type item struct {
		rec  fgRec
		step int
	}
	var want []item
	stepEnd := make([]int, len(run.steps)) // index in want just past each step
	for si, st := range run.steps {
		for _, r := range st.recs {
			want = append(want, item{r, si})
		}
		stepEnd[si] = len(want)
	}
	txn := run.txnID != ""
	codecs := map[recordbatch.Codec]int{}
	type producerEpoch struct {
		id    int64
		epoch int16
	}
	nextSeq := map[producerEpoch]int32{}
	nextOff, di, step, pid := int64(0), 0, 0, int64(-2)
	for bi, b := range batches {
		where := fmt.Sprintf("batch %d (offset %d)", bi, b.BaseOffset())
		c := fgCmp{t, where, "want"}
		if err := b.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", where, err)
			continue
		}
		a := b.Attributes()
		fgEq(c, "BaseOffset", b.BaseOffset(), nextOff)
		nextOff = b.LastOffset() + 1
		fgEq(c, "Magic", b.Magic(), int8(2))
		fgEq(c, "TimestampType", a.TimestampType(), recordbatch.CreateTime)
		fgEq(c, "Transactional", a.Transactional(), txn)
		if pid == -2 {
			pid = b.ProducerID()
		}
		fgEq(c, "ProducerID (one producer per run)", b.ProducerID(), pid)
		if !b.HasProducerID() {
			t.Errorf("%s: no producer id; franz-go is idempotent by default", where)
		}
		recs, err := b.DecodeRecords(0)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		fgEq(c, "decoded records", len(recs), int(b.NumRecords()))
		if a.Control() {
			if !txn || step >= len(run.steps) || len(recs) != 1 {
				t.Errorf("%s: unexpected control batch (%d records, %d of %d transactions ended)", where, len(recs), step, len(run.steps))
				continue
			}
			fgEq(c, "marker codec", a.Codec(), recordbatch.CodecNone)
			fgEq(c, "marker BaseSequence", b.BaseSequence(), recordbatch.NoSequence)
			m, err := recordbatch.ParseEndTxnMarker(recs[0].Key, recs[0].Value)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			}
			fgEq(c, "marker type", m.Type, run.steps[step].end)
			fgEq(c, "records before the marker", di, stepEnd[step])
			step++
			continue
		}
		if err := b.ValidateClient(); err != nil {
			t.Errorf("%s: ValidateClient: %v", where, err)
		}
		codecs[a.Codec()]++
		if a.Codec() != recordbatch.CodecNone && a.Codec() != run.codec {
			t.Errorf("%s: codec %s, asked for %s", where, a.Codec(), run.codec)
		}
		k := producerEpoch{b.ProducerID(), b.ProducerEpoch()}
		if seq, ok := nextSeq[k]; ok {
			fgEq(c, "BaseSequence (continuing)", b.BaseSequence(), seq)
		} else {
			fgEq(c, "BaseSequence (first of producer epoch)", b.BaseSequence(), int32(0))
		}
		nextSeq[k] = fgSeq(b.BaseSequence(), b.LastOffsetDelta()+1)
		var maxTS int64 = -1
		for i, rec := range recs {
			if di >= len(want) {
				t.Errorf("%s: more records than were produced", where)
				break
			}
			w := want[di]
			di++
			rc := fgCmp{t, fmt.Sprintf("%s record %d", where, i), "want"}
			if txn {
				fgEq(rc, "transaction", step, w.step)
			}
			if i == 0 {
				fgEq(c, "BaseTimestamp", b.BaseTimestamp(), w.rec.ts)
			}
			maxTS = max(maxTS, w.rec.ts)
			fgEq(rc, "OffsetDelta", rec.OffsetDelta, int32(i))
			fgEq(rc, "Offset", rec.Offset, b.BaseOffset()+int64(i))
			fgEq(rc, "Timestamp", rec.Timestamp, w.rec.ts)
			fgEq(rc, "TimestampDelta", rec.TimestampDelta, w.rec.ts-b.BaseTimestamp())
			fgEq(rc, "Attributes", rec.Attributes, int8(0))
			fgEq(rc, "Sequence", rec.Sequence, fgSeq(b.BaseSequence(), int32(i)))
			fgEqBytes(rc, "Key", rec.Key, w.rec.key)
			fgEqBytes(rc, "Value", rec.Value, w.rec.value)
			fgEqHeaders(rc, rec.Headers, w.rec.headers)
		}
		fgEq(c, "MaxTimestamp", b.MaxTimestamp(), maxTS)
	}
	if di != len(want) {
		t.Errorf("decoded %d data records, %d were produced", di, len(want))
	}
	if txn && step != len(run.steps) {
		t.Errorf("found %d end-transaction markers, want %d", step, len(run.steps))
	}
	return codecs
}

// fgCheckCodecUsed fails unless at least one data batch carries the codec
// the run asked for (franz-go falls back to none per batch).
func fgCheckCodecUsed(t *testing.T, run fgRun, codecs map[recordbatch.Codec]int) {
	t.Helper()
	if run.codec != recordbatch.CodecNone && codecs[run.codec] == 0 {
		t.Errorf("franz-go compressed no batch with %s (data batches by codec: %v)", run.codec, codecs)
	}
}

// ---------------------------------------------------------------------------
// franz-go writes, we read

// TestFranzGoDecode: kgo produces to kfake with every codec and in
// transactions (commit and abort); the fetched segment must decode, with
// every batch header field equal to kmsg's, every record field equal to
// kmsg's and to what the kgo consumer returns, every record equal to the
// producer's input, and the markers of the right type.
func TestFranzGoDecode(t *testing.T) {
	type tc struct {
		name string
		run  fgRun
	}
	var cases []tc
	for _, c := range fgCodecs {
		cases = append(cases, tc{c.String(), fgCodecRun(c, true)})
	}
	cases = append(cases,
		tc{"transactions", fgTxnRun(recordbatch.CodecNone)},
		tc{"transactions-lz4", fgTxnRun(recordbatch.CodecLZ4)},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), fgTimeout)
			defer cancel()
			fc := fgNewCluster(t, ctx)
			fc.produce(t, ctx, c.run)
			seg := fc.fetchSegment(t, ctx)
			batches, positions := splitBatches(t, seg)
			if len(batches) == 0 {
				t.Fatal("no batches fetched")
			}
			for i, b := range batches {
				fgCompareKmsg(t, fmt.Sprintf("batch %d at byte %d", i, positions[i]), b)
			}
			codecs := fgCheckRun(t, batches, c.run)
			fgCheckCodecUsed(t, c.run, codecs)
			last := batches[len(batches)-1]
			fgCompareKgo(t, batches, fc.consume(t, ctx, last.LastOffset()+1))
			t.Logf("%d batches, %d bytes; data batches by codec: %v", len(batches), len(seg), codecs)
		})
	}
}

// ---------------------------------------------------------------------------
// We write, franz-go reads

// lsBatch is the input of one batch our Builder writes.
type lsBatch struct {
	codec         recordbatch.Codec
	leaderEpoch   int32
	logAppendTime int64 // > 0: a LogAppendTime batch stamped with this time
	transactional bool
	pid           int64
	epoch         int16
	seq           int32
	marker        *recordbatch.EndTxnMarker // non-nil: an AppendEndTxnBatch marker at markerTS
	markerTS      int64
	recs          []fgRec
}

// lsPlain is a batch with no producer.
func lsPlain(codec recordbatch.Codec, recs []fgRec) lsBatch {
	return lsBatch{codec: codec, pid: -1, epoch: -1, seq: -1, recs: recs}
}

// lsBuild writes specs as consecutive batches from offset first.
func lsBuild(t testing.TB, specs []lsBatch, first int64) []byte {
	t.Helper()
	var out []byte
	off := first
	for i, s := range specs {
		var err error
		if s.marker != nil {
			out, err = recordbatch.AppendEndTxnBatch(out, off, s.markerTS, s.leaderEpoch, s.pid, s.epoch, *s.marker)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			off++
			continue
		}
		bl := recordbatch.NewBuilder(off)
		bl.PartitionLeaderEpoch = s.leaderEpoch
		bl.Compression = s.codec
		if s.logAppendTime > 0 {
			bl.TimestampType, bl.LogAppendTime = recordbatch.LogAppendTime, s.logAppendTime
		}
		bl.Transactional = s.transactional
		bl.ProducerID, bl.ProducerEpoch, bl.BaseSequence = s.pid, s.epoch, s.seq
		for _, r := range s.recs {
			if err := bl.Append(r.ts, r.key, r.value, r.headers); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		if out, err = bl.AppendTo(out); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		off += int64(len(s.recs))
	}
	return out
}

// lsWant is one record as a reader must see it, derived from the inputs.
type lsWant struct {
	batch      int
	offset     int64
	delta      int32
	ts         int64 // the record's timestamp: the append time for LogAppendTime
	tsDelta    int64
	key, value []byte
	headers    []recordbatch.RecordHeader
	seq        int32
}

func lsExpect(specs []lsBatch, first int64) []lsWant {
	var out []lsWant
	off := first
	for bi, s := range specs {
		if s.marker != nil {
			key := []byte{0, 0, 0, byte(s.marker.Type)} // version 0, type
			value := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(s.marker.CoordinatorEpoch))
			out = append(out, lsWant{batch: bi, offset: off, ts: s.markerTS, key: key, value: value, seq: -1})
			off++
			continue
		}
		for i, r := range s.recs {
			w := lsWant{batch: bi, offset: off, delta: int32(i), ts: r.ts, tsDelta: r.ts - s.recs[0].ts,
				key: r.key, value: r.value, headers: r.headers, seq: -1}
			if s.logAppendTime > 0 {
				w.ts = s.logAppendTime
			}
			if s.seq >= 0 {
				w.seq = fgSeq(s.seq, int32(i))
			}
			out = append(out, w)
			off++
		}
	}
	return out
}

// lsCheckDecoded decodes data and checks every header and record field
// against the inputs the batches were built from.
func lsCheckDecoded(t *testing.T, data []byte, specs []lsBatch, first int64) {
	t.Helper()
	batches, _ := splitBatches(t, data)
	if len(batches) != len(specs) {
		t.Fatalf("%d batches, want %d", len(batches), len(specs))
	}
	want := lsExpect(specs, first)
	wi := 0
	for bi, b := range batches {
		s := specs[bi]
		where := fmt.Sprintf("batch %d", bi)
		c := fgCmp{t, where, "want"}
		if err := b.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", where, err)
			continue
		}
		if s.marker == nil {
			if err := b.ValidateClient(); err != nil {
				t.Errorf("%s: ValidateClient: %v", where, err)
			}
		}
		recs, err := b.DecodeRecords(0)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		n := len(s.recs)
		baseTS, maxTS := s.markerTS, s.markerTS
		if s.marker != nil {
			n = 1
		} else {
			baseTS, maxTS = s.recs[0].ts, s.recs[0].ts
			for _, r := range s.recs {
				maxTS = max(maxTS, r.ts)
			}
		}
		if s.logAppendTime > 0 {
			maxTS = s.logAppendTime
		}
		a := b.Attributes()
		fgEq(c, "BaseOffset", b.BaseOffset(), want[wi].offset)
		fgEq(c, "PartitionLeaderEpoch", b.PartitionLeaderEpoch(), s.leaderEpoch)
		fgEq(c, "Magic", b.Magic(), int8(2))
		fgEq(c, "Codec", a.Codec(), s.codec)
		fgEq(c, "TimestampType", a.TimestampType() == recordbatch.LogAppendTime, s.logAppendTime > 0)
		fgEq(c, "Transactional", a.Transactional(), s.transactional || s.marker != nil)
		fgEq(c, "Control", a.Control(), s.marker != nil)
		fgEq(c, "LastOffsetDelta", b.LastOffsetDelta(), int32(n-1))
		fgEq(c, "NumRecords", b.NumRecords(), int32(n))
		fgEq(c, "BaseTimestamp", b.BaseTimestamp(), baseTS)
		fgEq(c, "MaxTimestamp", b.MaxTimestamp(), maxTS)
		fgEq(c, "ProducerID", b.ProducerID(), s.pid)
		fgEq(c, "ProducerEpoch", b.ProducerEpoch(), s.epoch)
		wantSeq := s.seq
		if s.marker != nil {
			wantSeq = recordbatch.NoSequence
		}
		fgEq(c, "BaseSequence", b.BaseSequence(), wantSeq)
		if len(recs) != n {
			t.Errorf("%s: %d records, want %d", where, len(recs), n)
			continue
		}
		for i, rec := range recs {
			w := want[wi]
			wi++
			rc := fgCmp{t, fmt.Sprintf("%s record %d", where, i), "want"}
			fgEq(rc, "Offset", rec.Offset, w.offset)
			fgEq(rc, "OffsetDelta", rec.OffsetDelta, w.delta)
			fgEq(rc, "Timestamp", rec.Timestamp, w.ts)
			fgEq(rc, "TimestampDelta", rec.TimestampDelta, w.tsDelta)
			fgEq(rc, "Attributes", rec.Attributes, int8(0))
			fgEq(rc, "Sequence", rec.Sequence, w.seq)
			fgEqBytes(rc, "Key", rec.Key, w.key)
			fgEqBytes(rc, "Value", rec.Value, w.value)
			fgEqHeaders(rc, rec.Headers, w.headers)
			if s.marker != nil {
				m, err := recordbatch.ParseEndTxnMarker(rec.Key, rec.Value)
				if err != nil {
					t.Errorf("%s: %v", rc.where, err)
				}
				fgEq(rc, "marker", m, *s.marker)
			}
		}
	}
}

// lsCompareKgo compares the kgo consumer's records with the inputs.
func lsCompareKgo(t *testing.T, krecs []*kgo.Record, specs []lsBatch, want []lsWant, leaderEpoch int32) {
	t.Helper()
	if len(krecs) != len(want) {
		t.Errorf("kgo returned %d records, we wrote %d", len(krecs), len(want))
	}
	for i := range min(len(krecs), len(want)) {
		kr, w := krecs[i], want[i]
		s := specs[w.batch]
		c := fgCmp{t, fmt.Sprintf("batch %d offset %d", w.batch, w.offset), "kgo"}
		fgEq(c, "Offset", w.offset, kr.Offset)
		fgEq(c, "Timestamp", w.ts, kr.Timestamp.UnixMilli())
		fgEqBytes(c, "Key", w.key, kr.Key)
		fgEqBytes(c, "Value", w.value, kr.Value)
		fgEqHeaders(c, w.headers, fgKgoHeaders(kr.Headers))
		fgEq(c, "ProducerID", s.pid, kr.ProducerID)
		fgEq(c, "ProducerEpoch", s.epoch, kr.ProducerEpoch)
		fgEq(c, "LeaderEpoch (the broker's)", leaderEpoch, kr.LeaderEpoch)
		fgEq(c, "codec", uint8(s.codec), kr.Attrs.CompressionType())
		fgEq(c, "timestamp type", s.logAppendTime > 0, kr.Attrs.TimestampType() == 1)
		fgEq(c, "transactional", s.transactional || s.marker != nil, kr.Attrs.IsTransactional())
		fgEq(c, "control", s.marker != nil, kr.Attrs.IsControl())
	}
}

// lsCompareKmsgEncode parses our batch with kmsg, re-encodes it with kmsg
// and expects our bytes back, with the CRC-32C kmsg's fields give.
func lsCompareKmsgEncode(t *testing.T, where string, b recordbatch.Batch) {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Errorf("%s: kmsg.RecordBatch.ReadFrom: %v", where, err)
		return
	}
	enc := kb.AppendTo(nil)
	if !bytes.Equal(enc, b) {
		t.Errorf("%s: kmsg re-encodes our batch differently:\n ours %x\n kmsg %x", where, []byte(b), enc)
	}
	crc := crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli))
	if crc != uint32(kb.CRC) || crc != b.CRC() {
		t.Errorf("%s: CRC-32C over bytes 21.. of kmsg's encoding %#x, kmsg's CRC field %#x, ours %#x", where, crc, uint32(kb.CRC), b.CRC())
	}
}

// lsSendSpecs are the batches TestFranzGoReadsOurBatches sends: every
// codec without a producer (with a 1 MiB value), every codec from one
// idempotent producer, then a sequence that wraps past 2147483647.
//
// kfake accepts a raw idempotent (non-transactional) produce from a
// producer id it never issued: it creates the producer state on the first
// batch, as Kafka 2.5+ does, and then checks sequences.
//
// No LogAppendTime batch is sent: kfake overwrites both the base and the
// max timestamp of such a batch with its clock but keeps the client's
// CRC, so the stored batch fails its CRC check (ours and kgo's alike).
// Kafka sets only the max timestamp and recomputes the CRC.
func lsSendSpecs() (specs []lsBatch, wrapFollowUp int) {
	mib := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range mib {
		mib[i] = 'a' + byte(rng.Uint32()%16) // compresses, but not to nothing
	}
	edge := func(prefix string, g int) []fgRec {
		recs := fgSmallRecs(prefix, g, 6)
		recs[0].key, recs[0].value = nil, nil
		recs[1].key, recs[1].value = []byte{}, []byte{}
		recs[2].headers = []recordbatch.RecordHeader{{Key: []byte("a"), Value: nil}, {Key: []byte("b"), Value: []byte{}}, {Key: []byte{}, Value: []byte("c")}}
		recs[4].ts = recs[0].ts - 500 // a negative timestamp delta
		return recs
	}
	for i, codec := range fgCodecs {
		recs := edge("raw-"+codec.String(), i*6)
		recs[3].value = mib
		specs = append(specs, lsPlain(codec, recs))
	}
	seq := int32(0)
	for i, codec := range fgCodecs {
		recs := edge("idem-"+codec.String(), 100+i*6)
		specs = append(specs, lsBatch{codec: codec, pid: 7001, epoch: 3, seq: seq, recs: recs})
		seq += int32(len(recs))
	}
	wrap := fgSmallRecs("wrap", 200, 3)
	specs = append(specs, lsBatch{codec: recordbatch.CodecNone, pid: 7002, epoch: 0, seq: 2147483646, recs: wrap})
	wrapFollowUp = len(specs)
	specs = append(specs, lsBatch{codec: recordbatch.CodecZstd, pid: 7002, epoch: 0, seq: 1, recs: fgSmallRecs("wrap", 203, 2)})
	return specs, wrapFollowUp
}

// TestFranzGoReadsOurBatches: batches our Builder writes (every codec,
// null and empty keys and values, null header values, a 1 MiB value,
// producer id -1 and an idempotent producer) are parsed and re-encoded by
// kmsg to the same bytes, accepted by kfake (which checks CRC, lengths,
// attributes and sequences) from raw Produce requests, stored unchanged but
// for the base offset and leader epoch the broker stamps, and read back by
// the kgo consumer field for field as we encoded them.
func TestFranzGoReadsOurBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), fgTimeout)
	defer cancel()
	fc := fgNewCluster(t, ctx)
	specs, wrapFollowUp := lsSendSpecs()

	var sent []lsBatch
	for i, s := range specs {
		where := fmt.Sprintf("batch %d (%s, producer %d)", i, s.codec, s.pid)
		one := lsBuild(t, specs[i:i+1], 0) // a producer's batch starts at offset 0
		b, err := recordbatch.Parse(one, 0)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := b.ValidateClient(); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		lsCompareKmsgEncode(t, where, b)
		fgCompareKmsg(t, where, b)

		code, base := fc.produceRaw(t, ctx, one)
		if i == wrapFollowUp && code == kerr.OutOfOrderSequenceNumber.Code {
			// kfake computes the next expected sequence modulo
			// 2147483647 (math.MaxInt32) instead of 2^31, so after
			// 2147483646+3 it expects 2, where Kafka (and this package)
			// continue at 1. Kafka would accept this batch.
			t.Logf("%s: kfake rejects the batch that continues a wrapped sequence at 1 with OUT_OF_ORDER_SEQUENCE_NUMBER (it wraps modulo 2147483647); left out", where)
			continue
		}
		if err := kerr.ErrorForCode(code); err != nil {
			t.Fatalf("%s: kfake rejected our batch: %v", where, err)
		}
		var want int64
		for _, p := range sent {
			want += int64(len(p.recs))
		}
		if base != want {
			t.Errorf("%s: stored at offset %d, want %d", where, base, want)
		}
		sent = append(sent, s)
	}

	// kfake keeps the batch as it came and stamps the base offset and its
	// leader epoch, both outside the CRC: restamp the epoch and expect our
	// own bytes.
	seg := fc.fetchSegment(t, ctx)
	batches, _ := splitBatches(t, bytes.Clone(seg))
	if len(batches) != len(sent) {
		t.Fatalf("fetched %d batches, sent %d", len(batches), len(sent))
	}
	leaderEpoch := batches[0].PartitionLeaderEpoch()
	var restamped []byte
	for i, b := range batches {
		if e := b.PartitionLeaderEpoch(); e != leaderEpoch {
			t.Errorf("batch %d: leader epoch %d, batch 0 has %d", i, e, leaderEpoch)
		}
		b.SetPartitionLeaderEpoch(sent[i].leaderEpoch)
		restamped = append(restamped, b...)
	}
	built := lsBuild(t, sent, 0)
	if !bytes.Equal(restamped, built) {
		wantBatches, _ := splitBatches(t, built)
		for i := range min(len(batches), len(wantBatches)) {
			if !bytes.Equal(batches[i], wantBatches[i]) {
				t.Errorf("batch %d: kfake stored other bytes than we sent (first 80 bytes):\n sent %x\n kept %x", i, wantBatches[i][:80], batches[i][:80])
			}
		}
	}
	lsCheckDecoded(t, restamped, sent, 0)
	for i, b := range batches {
		fgCompareKmsg(t, fmt.Sprintf("fetched batch %d", i), b)
	}
	last := batches[len(batches)-1]
	lsCompareKgo(t, fc.consume(t, ctx, last.LastOffset()+1), sent, lsExpect(sent, 0), leaderEpoch)
	t.Logf("%d batches, %d bytes; kfake leader epoch %d", len(batches), len(seg), leaderEpoch)
}

// ---------------------------------------------------------------------------
// Golden segments

// lsAllCodecs: one batch per codec, plain records.
func lsAllCodecs() []lsBatch {
	var specs []lsBatch
	for i, codec := range fgCodecs {
		s := lsPlain(codec, fgSmallRecs("ls-"+codec.String(), i*4, 4))
		specs = append(specs, s)
	}
	return specs
}

// lsEdgeRecords: null and empty keys and values, headers with null values,
// a negative timestamp delta, a sequence that wraps, a LogAppendTime
// batch, and a committed and an aborted transaction with their markers.
func lsEdgeRecords() []lsBatch {
	commit := recordbatch.EndTxnMarker{Type: recordbatch.ControlCommit, CoordinatorEpoch: 7}
	abort := recordbatch.EndTxnMarker{Type: recordbatch.ControlAbort, CoordinatorEpoch: 7}
	return []lsBatch{
		lsPlain(recordbatch.CodecNone, []fgRec{
			{ts: fgT, key: nil, value: nil},
			{ts: fgT + 1, key: []byte{}, value: []byte{}},
			{ts: fgT + 2, key: []byte("key only"), value: nil},
			{ts: fgT + 3, key: nil, value: []byte("value only")},
			{ts: fgT + 4, key: []byte("h"), value: []byte("headers"), headers: []recordbatch.RecordHeader{
				{Key: []byte("null"), Value: nil},
				{Key: []byte("empty"), Value: []byte{}},
				{Key: []byte{}, Value: []byte("empty key")},
				{Key: []byte("dup"), Value: []byte("1")},
				{Key: []byte("dup"), Value: nil},
			}},
			{ts: fgT - 1000, key: []byte("past"), value: []byte("negative timestamp delta")},
		}),
		// Sequences 2147483646, 2147483647, 0: last sequence 0.
		{codec: recordbatch.CodecNone, pid: 1000, epoch: 2, seq: 2147483646, recs: []fgRec{
			{ts: fgT + 10, key: []byte("w"), value: []byte("seq 2147483646")},
			{ts: fgT + 11, key: []byte("w"), value: []byte("seq 2147483647")},
			{ts: fgT + 12, key: []byte("w"), value: []byte("seq 0")},
		}},
		{codec: recordbatch.CodecNone, pid: -1, epoch: -1, seq: -1, logAppendTime: fgT + 5000, recs: []fgRec{
			{ts: fgT + 20, key: []byte("lat"), value: []byte("create time fgT+20, read as fgT+5000")},
			{ts: fgT + 21, key: []byte("lat"), value: []byte("create time fgT+21, read as fgT+5000")},
		}},
		{codec: recordbatch.CodecNone, transactional: true, pid: 2000, epoch: 0, seq: 0, recs: []fgRec{
			{ts: fgT + 30, key: []byte("t1"), value: []byte("committed 0")},
			{ts: fgT + 31, key: []byte("t1"), value: []byte("committed 1")},
		}},
		{pid: 2000, epoch: 0, marker: &commit, markerTS: fgT + 32},
		{codec: recordbatch.CodecNone, transactional: true, pid: 2001, epoch: 0, seq: 0, recs: []fgRec{
			{ts: fgT + 40, key: []byte("t2"), value: []byte("aborted 0")},
			{ts: fgT + 41, key: []byte("t2"), value: []byte("aborted 1")},
		}},
		{pid: 2001, epoch: 0, marker: &abort, markerTS: fgT + 42},
	}
}

type fgGolden struct {
	name  string
	franz *fgRun    // made by kgo through kfake
	ours  []lsBatch // made by our Builder
}

func fgGoldens() []fgGolden {
	run := func(r fgRun) *fgRun { return &r }
	return []fgGolden{
		{name: "franz-go-gzip", franz: run(fgCodecRun(recordbatch.CodecGzip, false))},
		{name: "franz-go-snappy", franz: run(fgCodecRun(recordbatch.CodecSnappy, false))},
		{name: "franz-go-lz4", franz: run(fgCodecRun(recordbatch.CodecLZ4, false))},
		{name: "franz-go-zstd", franz: run(fgCodecRun(recordbatch.CodecZstd, false))},
		{name: "franz-go-transactions", franz: run(fgTxnRun(recordbatch.CodecNone))},
		{name: "logstore-all-codecs", ours: lsAllCodecs()},
		{name: "logstore-edge-records", ours: lsEdgeRecords()},
	}
}

// TestGoldenSegments checks the committed segments under testdata/segments
// decode to exactly the records their generators were given; with -update
// it writes them again. franz-go's are compared by decoded fields only
// (compressed bytes may change with the library version); ours are also
// compared byte for byte with a fresh build.
func TestGoldenSegments(t *testing.T) {
	root := filepath.Join(testutil.RepoDir(t), "testdata", "segments")
	for _, g := range fgGoldens() {
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join(root, g.name, fgSegmentName)
			if *update {
				var data []byte
				if g.franz != nil {
					ctx, cancel := context.WithTimeout(t.Context(), fgTimeout)
					defer cancel()
					fc := fgNewCluster(t, ctx)
					fc.produce(t, ctx, *g.franz)
					data = fc.fetchSegment(t, ctx)
				} else {
					data = lsBuild(t, g.ours, 0)
				}
				if len(data) >= fgMaxGolden {
					t.Fatalf("%d bytes, the limit is %d", len(data), fgMaxGolden)
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with: go test ./recordbatch -run TestGoldenSegments -update)", err)
			}
			if len(data) >= fgMaxGolden {
				t.Errorf("%d bytes, the limit is %d", len(data), fgMaxGolden)
			}
			batches, _ := splitBatches(t, data)
			if g.franz != nil {
				for i, b := range batches {
					fgCompareKmsg(t, fmt.Sprintf("batch %d", i), b)
				}
				codecs := fgCheckRun(t, batches, *g.franz)
				fgCheckCodecUsed(t, *g.franz, codecs)
				return
			}
			lsCheckDecoded(t, data, g.ours, 0)
			for i, b := range batches {
				fgCompareKmsg(t, fmt.Sprintf("batch %d", i), b)
			}
			fresh, _ := splitBatches(t, lsBuild(t, g.ours, 0))
			if len(fresh) != len(batches) {
				t.Fatalf("%d batches committed, a fresh build has %d", len(batches), len(fresh))
			}
			for i := range batches {
				if bytes.Equal(batches[i], fresh[i]) {
					continue
				}
				switch codec := batches[i].Attributes().Codec(); codec {
				case recordbatch.CodecGzip, recordbatch.CodecZstd:
					// The compressor's output may change with its version;
					// the decoded fields were checked above.
					t.Logf("batch %d (%s): bytes differ from a fresh build; decoded fields match", i, codec)
				default:
					t.Errorf("batch %d (%s): bytes differ from a fresh build:\n committed %x\n fresh     %x", i, codec, []byte(batches[i]), []byte(fresh[i]))
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Benchmarks

// BenchmarkRecords: reading every record of the same batch with our
// decoder and with franz-go's, per codec. The batches are built once with
// our Builder (benchBatch: 100 records, each a 16-byte key, a JSON-ish
// value of about 135 bytes and one header). Each iteration reads one
// batch from its bytes and touches the key, value and header lengths of
// every record:
//
//   - ours: Parse, RecordReader.Reset (which decompresses) and Next;
//   - franz-go: kmsg.RecordBatch.ReadFrom, then for a compressed batch the
//     Decompress of kgo.DefaultDecompressor, the decompressor the kgo
//     consumer uses, on the Records bytes, then kmsg.Record.ReadFrom per
//     record (the consumer itself decodes records with an unexported loop
//     of the same kbin calls, straight into kgo.Record).
//
// Neither side checks the CRC: Parse and kmsg.RecordBatch.ReadFrom do not
// (the kgo consumer does, before decompressing; our CRC check is
// BenchmarkParseValidate). Bytes are the uncompressed records section, the
// same for every codec, so MB/s compare across codecs and sides.
//
// Both sides reuse their decompression output buffer across iterations,
// as each library allows, so that neither pays for growing one:
//
//   - ours allocates nothing once warm: the RecordReader keeps its
//     decompression buffer and its header slice, and the decoders are
//     pooled (gzip, lz4) or shared (zstd);
//   - franz-go's decompressor is given a PoolDecompressBytes that hands
//     back the slice of the previous iteration, as a consumer's pool does
//     once a batch's records are recycled (here without the zeroing the
//     client does then), so snappy and zstd decode into it and gzip and
//     lz4 stream into it; its gzip, lz4 and zstd decoders are pooled
//     inside the decompressor. One kmsg.Record is reused for every record,
//     so its Headers slice is too, but ReadFrom copies each header key
//     into a new string: one small allocation per record, 100 per
//     iteration (UnsafeReadFrom would alias it instead, as ours does).
func BenchmarkRecords(b *testing.B) {
	const n = 100
	plain := benchBatch(b, recordbatch.CodecNone, n)
	size := len(plain) - recordbatch.HeaderSize
	wantSum := 0
	keys, values, headers := benchRecords(n)
	for i := range n {
		wantSum += len(keys[i]) + len(values[i])
		for _, h := range headers {
			wantSum += len(h.Key) + len(h.Value)
		}
	}
	for _, c := range fgCodecs {
		raw := benchBatch(b, c, n)
		if c == recordbatch.CodecNone {
			raw = plain
		}
		// Both sides must see every record before they are timed.
		check := func(b *testing.B, side string, got, sum int, err error) {
			if err != nil || got != n || sum != wantSum {
				b.Fatalf("%s, %s: %d records, %d bytes touched, err %v; want %d records, %d bytes", side, c, got, sum, err, n, wantSum)
			}
		}
		b.Run("ours/codec="+c.String(), func(b *testing.B) {
			var r recordbatch.RecordReader
			got, sum, err := fgBenchOurs(&r, raw)
			check(b, "ours", got, sum, err)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, sum, err = fgBenchOurs(&r, raw); err != nil {
					b.Fatal(err)
				}
				fgSink += sum
			}
		})
		b.Run("franz-go/codec="+c.String(), func(b *testing.B) {
			pool := new(fgDecompressBuf)
			dec := kgo.DefaultDecompressor(pool)
			var kr kmsg.Record
			got, sum, err := fgBenchFranzGo(dec, pool, &kr, raw)
			check(b, "franz-go", got, sum, err)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, sum, err = fgBenchFranzGo(dec, pool, &kr, raw); err != nil {
					b.Fatal(err)
				}
				fgSink += sum
			}
		})
	}
}

// fgSink keeps what the benchmarks touch alive.
var fgSink int

// fgBenchOurs reads every record of the batch at the start of raw with r
// and returns how many there were and the sum of their key, value and
// header lengths.
func fgBenchOurs(r *recordbatch.RecordReader, raw []byte) (n, sum int, err error) {
	batch, err := recordbatch.Parse(raw, 0)
	if err != nil {
		return 0, 0, err
	}
	if err := r.Reset(batch, 0); err != nil {
		return 0, 0, err
	}
	for r.Next() {
		rec := r.Record()
		sum += len(rec.Key) + len(rec.Value)
		for _, h := range rec.Headers {
			sum += len(h.Key) + len(h.Value)
		}
		n++
	}
	return n, sum, r.Err()
}

// fgBenchFranzGo is fgBenchOurs with franz-go: kmsg reads the batch, dec
// decompresses the records into the slice pool holds, which goes back to
// pool when the records are done with, and kmsg reads each record into kr.
// It splits the records section as the kgo consumer does: a zig-zag varint
// length, then the record.
func fgBenchFranzGo(dec kgo.Decompressor, pool *fgDecompressBuf, kr *kmsg.Record, raw []byte) (n, sum int, err error) {
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(raw); err != nil {
		return 0, 0, err
	}
	in := kb.Records
	if codec := kgo.CompressionCodecType(kb.Attributes & 0x0007); codec != kgo.CodecNone {
		if in, err = dec.Decompress(in, codec); err != nil {
			return 0, 0, err
		}
		defer pool.PutDecompressBytes(in)
	}
	for range kb.NumRecords {
		l, used := binary.Varint(in)
		end := used + int(l)
		if used <= 0 || l < 0 || end > len(in) {
			return n, sum, fmt.Errorf("record %d: bad length", n)
		}
		if err := kr.ReadFrom(in[:end]); err != nil {
			return n, sum, fmt.Errorf("record %d: %w", n, err)
		}
		sum += len(kr.Key) + len(kr.Value)
		for _, h := range kr.Headers {
			sum += len(h.Key) + len(h.Value)
		}
		n++
		in = in[end:]
	}
	if len(in) != 0 {
		return n, sum, fmt.Errorf("%d bytes after the last record", len(in))
	}
	return n, sum, nil
}

// fgDecompressBuf is a kgo.PoolDecompressBytes holding one slice: the
// decompressor decodes into it and it is put back afterwards, so that a
// warm benchmark reuses one buffer as our RecordReader does. Unlike a
// pool given to a client, it is not safe for concurrent use.
type fgDecompressBuf struct{ buf []byte }

func (p *fgDecompressBuf) GetDecompressBytes([]byte, kgo.CompressionCodecType) []byte {
	return p.buf
}

func (p *fgDecompressBuf) PutDecompressBytes(b []byte) { p.buf = b }
