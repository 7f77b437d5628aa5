package kafkaserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// recentTS is the timestamp of the records these tests write: near the
// markers' (the store's clock), so that no segment rolls on time
// between them (a roll would end each fetch at the segment's end).
var recentTS = time.Now().UnixMilli()

// txnBatchOf is a transactional client batch of values.
func txnBatchOf(pid int64, epoch int16, seq int32, values ...string) []byte {
	return recentBatch(pid, epoch, seq, true, values...)
}

// recentBatch is a client batch of values at recentTS; pid < 0 makes it
// non-idempotent.
func recentBatch(pid int64, epoch int16, seq int32, transactional bool, values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	}
	b.Transactional = transactional
	for _, v := range values {
		if err := b.Append(recentTS, nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// txnLog writes batches and markers straight into a partition of the
// server's store, as a transaction coordinator and producers would.
type txnLog struct {
	t    testing.TB
	part *logstore.Partition
	seq  map[int64]int32
}

func (ts *testServer) txnLog(topic string, partition int32) *txnLog {
	ts.t.Helper()
	part, err := ts.store.ExistingPartition(topic, partition)
	if err != nil {
		ts.t.Fatal(err)
	}
	return &txnLog{t: ts.t, part: part, seq: map[int64]int32{}}
}

// data appends a transactional batch of pid's values and returns its
// base offset.
func (l *txnLog) data(pid int64, values ...string) int64 {
	l.t.Helper()
	res, err := l.part.Append(txnBatchOf(pid, 0, l.seq[pid], values...))
	if err != nil {
		l.t.Fatal(err)
	}
	l.seq[pid] += int32(len(values))
	return res.BaseOffset
}

// plain appends a batch without producer id.
func (l *txnLog) plain(values ...string) int64 {
	l.t.Helper()
	res, err := l.part.Append(recentBatch(-1, 0, 0, false, values...))
	if err != nil {
		l.t.Fatal(err)
	}
	return res.BaseOffset
}

// end writes pid's COMMIT or ABORT marker and returns its offset.
func (l *txnLog) end(pid int64, commit bool) int64 {
	l.t.Helper()
	res, err := l.part.AppendMarker(pid, 0, commit, 3)
	if err != nil {
		l.t.Fatal(err)
	}
	return res.BaseOffset
}

func readCommittedReq(topic string, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	r := fetchReq(12, topic, 0, offset, maxWait, minBytes)
	r.IsolationLevel = 1
	return r
}

// fetchedBases returns the base offsets of the batches of a fetch answer.
func fetchedBases(t *testing.T, data []byte) []int64 {
	t.Helper()
	var bases []int64
	for len(data) > 0 {
		b, err := recordbatch.Parse(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, b.BaseOffset())
		data = data[b.Size():]
	}
	return bases
}

type abortedTxn struct{ pid, first int64 }

func abortedOf(sp kmsg.FetchResponseTopicPartition) []abortedTxn {
	var out []abortedTxn
	for _, a := range sp.AbortedTransactions {
		out = append(out, abortedTxn{a.ProducerID, a.FirstOffset})
	}
	return out
}

// TestFetchReadCommitted: at IsolationLevel 1 a fetch returns batches
// only below the last stable offset (the first offset of the oldest open
// transaction), at least the one holding the fetch offset, and lists
// exactly the aborted transactions with data in what it returns (an
// empty list, not null, when there is none, also from the LSO up to the
// high watermark, where it returns nothing and no error); at
// IsolationLevel 0 it reads to the high watermark with a null list; both
// carry the LSO.
func TestFetchReadCommitted(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	l := ts.txnLog("t", 0)
	c := ts.dial()
	l.plain("a")                           // 0
	l.data(10, "t10a", "t10b")             // 1..2, pid 10 opens at 1
	l.data(11, "t11a")                     // 3, pid 11 opens at 3
	if off := l.end(10, false); off != 4 { // ABORT pid 10: LSO 3
		t.Fatalf("marker at %d", off)
	}
	l.data(12, "t12a") // 5, pid 12 opens at 5
	l.end(11, true)    // 6, COMMIT pid 11: LSO 5
	l.plain("b")       // 7; HWM 8

	type want struct {
		bases   []int64
		aborted []abortedTxn
	}
	check := func(name string, r *kmsg.FetchRequest, hwm, lso int64, w want) {
		t.Helper()
		sp := fetchPart(t, c, r)
		if sp.ErrorCode != 0 || sp.HighWatermark != hwm || sp.LastStableOffset != lso {
			t.Fatalf("%s: error %d, HWM %d, LSO %d; want 0, %d, %d", name, sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, hwm, lso)
		}
		if got := fetchedBases(t, sp.RecordBatches); !slices.Equal(got, w.bases) {
			t.Fatalf("%s: batches at %v, want %v", name, got, w.bases)
		}
		if r.IsolationLevel == 0 {
			if sp.AbortedTransactions != nil {
				t.Fatalf("%s: aborted transactions %v at read_uncommitted, want null", name, sp.AbortedTransactions)
			}
			return
		}
		if sp.AbortedTransactions == nil {
			t.Fatalf("%s: a null list of aborted transactions, want a list", name)
		}
		if got := abortedOf(sp); !slices.Equal(got, w.aborted) {
			t.Fatalf("%s: aborted transactions %v, want %v", name, got, w.aborted)
		}
	}
	check("committed from 0", readCommittedReq("t", 0, 0, 0), 8, 5, want{[]int64{0, 1, 3, 4}, []abortedTxn{{10, 1}}})
	check("uncommitted from 0", fetchReq(12, "t", 0, 0, 0, 0), 8, 5, want{bases: []int64{0, 1, 3, 4, 5, 6, 7}})
	for v := int16(4); v <= 12; v++ {
		r := readCommittedReq("t", 0, 0, 0)
		r.Version = v
		check(fmt.Sprintf("committed v%d", v), r, 8, 5, want{[]int64{0, 1, 3, 4}, []abortedTxn{{10, 1}}})
	}
	// One batch at a time: the list follows the data returned.
	one := func(offset int64) *kmsg.FetchRequest {
		r := readCommittedReq("t", offset, 0, 0)
		r.Topics[0].Partitions[0].PartitionMaxBytes = 1
		return r
	}
	check("batch 0 alone", one(0), 8, 5, want{[]int64{0}, []abortedTxn{}})
	check("batch 1 alone", one(2), 8, 5, want{[]int64{1}, []abortedTxn{{10, 1}}})
	check("batch 3 alone", one(3), 8, 5, want{[]int64{3}, []abortedTxn{{10, 1}}})
	check("marker 4 alone", one(4), 8, 5, want{[]int64{4}, []abortedTxn{{10, 1}}})
	for _, off := range []int64{5, 6, 7, 8} {
		check(fmt.Sprintf("committed at %d", off), readCommittedReq("t", off, 0, 0), 8, 5, want{nil, []abortedTxn{}})
	}
	if sp := fetchPart(t, c, readCommittedReq("t", 9, 0, 0)); sp.ErrorCode != errOffsetOutOfRange || sp.AbortedTransactions != nil {
		t.Fatalf("committed at 9: error %d, aborted %v; want OFFSET_OUT_OF_RANGE and null", sp.ErrorCode, sp.AbortedTransactions)
	}

	l.end(12, true)    // 8: LSO 9
	l.data(13, "t13a") // 9
	l.plain("c")       // 10
	l.end(13, false)   // 11: LSO 12
	check("committed all", readCommittedReq("t", 0, 0, 0), 12, 12, want{[]int64{0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11}, []abortedTxn{{10, 1}, {13, 9}}})
	check("committed from 5", readCommittedReq("t", 5, 0, 0), 12, 12, want{[]int64{5, 6, 7, 8, 9, 10, 11}, []abortedTxn{{13, 9}}})
	check("committed to 8", one(8), 12, 12, want{[]int64{8}, []abortedTxn{}})
}

// waitLongPolls waits until n fetches of ts are long-polling: a bound on
// a failure of the test, not a measure.
func waitLongPolls(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ts.srv.longPolls.Load() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d fetches long-polling, want %d", ts.srv.longPolls.Load(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// TestFetchReadCommittedLongPoll: a read_committed fetch at the last
// stable offset of an open transaction waits, though the high watermark
// is past it and moves on (MinBytes counts what read_committed returns),
// and is answered when the transaction's marker lands, with the
// transaction's data, the data after it and its marker.
func TestFetchReadCommittedLongPoll(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			ts := startServer(t, logstore.Options{}, Config{})
			ts.createTopic("t", 1)
			l := ts.txnLog("t", 0)
			fc := ts.dial()
			l.data(20, "x") // 0: LSO 0
			l.plain("y")    // 1: HWM 2
			r := readCommittedReq("t", 0, 60_000, 1)
			corr := fc.send(r)
			waitLongPolls(t, ts, 1)
			l.plain("z") // 2: the fetch wakes and waits on
			l.end(20, commit)
			resp := fc.read(r, corr).(*kmsg.FetchResponse)
			sp := resp.Topics[0].Partitions[0]
			if sp.ErrorCode != 0 || sp.LastStableOffset != 4 || sp.HighWatermark != 4 {
				t.Fatalf("answer: error %d, LSO %d, HWM %d; want 0, 4, 4", sp.ErrorCode, sp.LastStableOffset, sp.HighWatermark)
			}
			if got := fetchedBases(t, sp.RecordBatches); !slices.Equal(got, []int64{0, 1, 2, 3}) {
				t.Fatalf("answer: batches at %v, want [0 1 2 3]", got)
			}
			want := []abortedTxn{{20, 0}}
			if commit {
				want = nil
			}
			if got := abortedOf(sp); !slices.Equal(got, want) {
				t.Fatalf("aborted transactions %v, want %v", got, want)
			}
		})
	}
}

// TestListOffsetsReadCommitted: ListOffsets -1 answers the high
// watermark at read_uncommitted and the last stable offset at
// read_committed; a timestamp whose record is at or past the LSO answers
// no offset at read_committed.
func TestListOffsetsReadCommitted(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	l := ts.txnLog("t", 0)
	c := ts.dial()
	l.plain("a")    // 0
	l.data(30, "x") // 1: LSO 1
	l.plain("b")    // 2: HWM 3
	list := func(isolation int8, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		r := listOffsetsReq("t", 0, ts)
		r.IsolationLevel = isolation
		resp := c.do(r).(*kmsg.ListOffsetsResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			t.Fatalf("isolation %d, timestamp %d: error %d", isolation, ts, sp.ErrorCode)
		}
		return sp
	}
	for v := int16(2); v <= 8; v++ {
		r := listOffsetsReq("t", 0, -1)
		r.Version, r.IsolationLevel = v, 1
		if sp := c.do(r).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.Offset != 1 {
			t.Fatalf("v%d read_committed -1: %+v, want offset 1", v, sp)
		}
	}
	if sp := list(0, -1); sp.Offset != 3 {
		t.Fatalf("read_uncommitted -1: offset %d, want the HWM 3", sp.Offset)
	}
	if sp := list(1, -1); sp.Offset != 1 {
		t.Fatalf("read_committed -1: offset %d, want the LSO 1", sp.Offset)
	}
	if sp := list(0, recentTS); sp.Offset != 0 {
		t.Fatalf("read_uncommitted by time: offset %d, want 0", sp.Offset)
	}
	if sp := list(0, -3); sp.Offset != 0 {
		t.Fatalf("read_uncommitted max timestamp: offset %d, want 0", sp.Offset)
	}
	l.end(30, false) // 3: LSO 4
	if sp := list(1, -1); sp.Offset != 4 {
		t.Fatalf("read_committed -1 after the marker: offset %d, want 4", sp.Offset)
	}
	// A new transaction at 4 holds the LSO there while later data
	// arrives: a time whose first record is past the LSO finds none.
	l.data(31, "y") // 4
	// An hour ahead: later than the marker's timestamp (the store's
	// clock).
	late := time.Now().UnixMilli() + 3_600_000
	if _, err := l.part.Append(batchOfAt(late, "late")); err != nil { // 5
		t.Fatal(err)
	}
	if sp := list(0, late); sp.Offset != 5 {
		t.Fatalf("read_uncommitted by time: offset %d, want 5", sp.Offset)
	}
	if sp := list(0, -3); sp.Offset != 5 {
		t.Fatalf("read_uncommitted max timestamp: offset %d, want 5", sp.Offset)
	}
	if sp := list(1, late); sp.Offset != -1 || sp.Timestamp != -1 {
		t.Fatalf("read_committed by time past the LSO: offset %d timestamp %d, want -1 -1", sp.Offset, sp.Timestamp)
	}
	if sp := list(1, -3); sp.Offset != -1 {
		t.Fatalf("read_committed max timestamp past the LSO: offset %d, want -1", sp.Offset)
	}
}

// batchOfAt is a batch without producer id of one value at timestamp ts.
func batchOfAt(ts int64, value string) []byte {
	b := recordbatch.NewBuilder(0)
	if err := b.Append(ts, nil, []byte(value), nil); err != nil {
		panic(err)
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// TestDescribeProducers: every producer the partition's state holds,
// with its epoch, last sequence, last timestamp, coordinator epoch and
// open transaction's first offset (-1 when none); an unknown topic or
// partition answers UNKNOWN_TOPIC_OR_PARTITION for that partition.
func TestDescribeProducers(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 2)
	l := ts.txnLog("t", 0)
	c := ts.dial()
	if _, err := l.part.Append(recentBatch(5, 2, 0, false, "i0", "i1", "i2")); err != nil { // 0..2, idempotent
		t.Fatal(err)
	}
	l.data(6, "a", "b") // 3..4: pid 6's transaction open at 3
	l.data(7, "c")      // 5
	l.end(7, true)      // 6: pid 7's ended, coordinator epoch 3
	r := kmsg.NewPtrDescribeProducersRequest()
	for _, rt := range []struct {
		topic string
		parts []int32
	}{{"t", []int32{0, 1, 2}}, {"nope", []int32{0}}} {
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = rt.topic, rt.parts
		r.Topics = append(r.Topics, dt)
	}
	resp := c.do(r).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 3 || len(resp.Topics[1].Partitions) != 1 {
		t.Fatalf("answer: %+v", resp)
	}
	p0 := resp.Topics[0].Partitions[0]
	if p0.Partition != 0 || p0.ErrorCode != 0 {
		t.Fatalf("partition 0: %+v", p0)
	}
	type producer struct {
		pid              int64
		epoch, lastSeq   int32
		coordinatorEpoch int32
		txnStart         int64
	}
	var got []producer
	for _, ap := range p0.ActiveProducers {
		got = append(got, producer{ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset})
		if ap.LastTimestamp != recentTS && ap.ProducerID != 7 {
			t.Errorf("producer %d: last timestamp %d", ap.ProducerID, ap.LastTimestamp)
		}
	}
	want := []producer{
		{5, 2, 2, -1, -1},
		{6, 0, 1, -1, 3},
		{7, 0, 0, 3, -1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("producers %+v, want %+v", got, want)
	}
	if p1 := resp.Topics[0].Partitions[1]; p1.Partition != 1 || p1.ErrorCode != 0 || len(p1.ActiveProducers) != 0 {
		t.Fatalf("partition 1 (no producer): %+v", p1)
	}
	for _, p := range []kmsg.DescribeProducersResponseTopicPartition{resp.Topics[0].Partitions[2], resp.Topics[1].Partitions[0]} {
		if p.ErrorCode != errUnknownTopicOrPartition || len(p.ActiveProducers) != 0 {
			t.Fatalf("unknown partition: %+v", p)
		}
	}
}

// TestKgoReadCommitted: transactions of three producers committed and
// aborted at random, interleaved with each other and with plain data,
// over small segments, written through the store while two kgo
// consumers read from the start, fetching a little at a time: the one
// at read_committed (which drops the data of the aborted transactions
// the fetches list, and nothing else) reads every committed and plain
// record exactly once and no aborted one; the one at read_uncommitted
// reads every record.
func TestKgoReadCommitted(t *testing.T) {
	ts := startServer(t, logstore.Options{SegmentBytes: 4096}, Config{})
	ts.createTopic("t", 1)
	l := ts.txnLog("t", 0)
	type result struct {
		got []string
		err error
	}
	levels := []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()}
	results := make([]chan result, len(levels))
	for i, level := range levels {
		results[i] = make(chan result, 1)
		go func() {
			got, err := consumeUntil(ts.addr, "last", kgo.FetchIsolationLevel(level), kgo.FetchMaxPartitionBytes(300), kgo.FetchMaxWait(50*time.Millisecond))
			results[i] <- result{got, err}
		}()
	}

	var committed, all []string
	open := map[int64][]string{}
	rng := rand.New(rand.NewPCG(14, 1))
	end := func(pid int64, commit bool) {
		l.end(pid, commit)
		if commit {
			committed = append(committed, open[pid]...)
		}
		delete(open, pid)
	}
	for round := range 40 {
		for _, pid := range []int64{100, 101, 102} {
			v := fmt.Sprintf("p%d-r%d", pid, round)
			l.data(pid, v+"-a", v+"-b")
			open[pid] = append(open[pid], v+"-a", v+"-b")
			all = append(all, v+"-a", v+"-b")
			if rng.IntN(2) == 0 {
				p := fmt.Sprintf("plain-%d-%d", round, pid)
				l.plain(p)
				committed = append(committed, p)
				all = append(all, p)
			}
			if rng.IntN(3) == 0 {
				end(pid, rng.IntN(2) == 0)
			}
		}
	}
	for _, pid := range []int64{100, 101, 102} {
		if _, ok := open[pid]; ok {
			end(pid, pid != 101)
		}
	}
	l.plain("last")
	committed = append(committed, "last")
	all = append(all, "last")
	if l.part.LastStableOffset() != l.part.DurableEnd() {
		t.Fatalf("a transaction is still open: LSO %d, HWM %d", l.part.LastStableOffset(), l.part.DurableEnd())
	}
	if len(all) == len(committed) {
		t.Fatal("the workload aborted no transaction")
	}
	names := []string{"read_committed", "read_uncommitted"}
	for i, want := range [][]string{committed, all} {
		r := <-results[i]
		if r.err != nil {
			t.Fatalf("%s: %v", names[i], r.err)
		}
		slices.Sort(r.got)
		want = slices.Clone(want)
		slices.Sort(want)
		if !slices.Equal(r.got, want) {
			t.Fatalf("%s: read %d records, want %d; extra %v, missing %v", names[i], len(r.got), len(want), minus(r.got, want), minus(want, r.got))
		}
	}
}

// consumeUntil reads topic t from the start with kgo until the record
// whose value is last, and returns every value read. The timeout bounds
// a failure of the test.
func consumeUntil(addr, last string, opts ...kgo.Opt) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got []string
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return got, fmt.Errorf("after %d records: %w", len(got), err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return got, fmt.Errorf("fetch %s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			done = done || string(r.Value) == last
		})
		if done {
			return got, nil
		}
	}
}

// minus returns the values of a (sorted) not in b (sorted), with
// multiplicity.
func minus(a, b []string) []string {
	var out []string
	for _, v := range a {
		if i, ok := slices.BinarySearch(b, v); ok {
			b = slices.Delete(slices.Clone(b), i, i+1)
			continue
		}
		out = append(out, v)
	}
	return out
}
