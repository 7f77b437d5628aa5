package kafkaserver

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// BenchmarkManyPartitions: the per-request paths whose cost grows with
// the partitions a request names (the catalog lookup of each partition,
// the long poll's wait over all of them), on a server of one topic of
// 1,000 or 2,500 partitions, or 25 topics of 100 partitions, under
// SyncNever, each topic with one config (retention.ms), over loopback.
// A raw client pre-encodes its requests and reads the responses into one
// reused buffer, so allocs/op are the server's (and the client's few):
//   - produce: a Produce (acks=1) of one 1-record batch to each of 100
//     partitions, the next 100 each op; MB/s counts the batch bytes;
//   - fetch: a Fetch from offset 0 of every partition (PartitionMaxBytes
//     1, so one batch of each), answered at once; MB/s counts the
//     response bytes;
//   - longpoll: a Fetch at the end of every partition (MinBytes 1,
//     MaxWaitMillis 10 s), woken by an in-process append to one of them,
//     the next one each op. wake-us is the time from the append to the
//     response read whole; ns/op is the whole round (the request, the
//     server's first build, its wait and the wake).
//
// cpu-us/op is the process's CPU time per op (the server's, the kernel's
// loopback, the client's; in longpoll also the re-encoding of the
// request, outside ns/op), steadier than ns/op on a loaded machine.
//
// Setup (the partitions' directories, then their first open) is outside
// the timings. 2,500 is about the most partitions one process can hold
// open under a limit of 20,000 open files: an open partition holds
// about 7 (its segment's files and its producer snapshot database).
func BenchmarkManyPartitions(b *testing.B) {
	for _, shape := range []struct{ topics, parts int }{{1, 1000}, {1, 2500}, {25, 100}} {
		b.Run(fmt.Sprintf("topics=%d/partitions=%d", shape.topics, shape.parts), func(b *testing.B) {
			m := newManyParts(b, shape.topics, shape.parts)
			b.Run("produce", m.benchProduce)
			b.Run("fetch", m.benchFetch)
			b.Run("longpoll", m.benchLongPoll)
		})
	}
}

// manyConfigs are the configs each topic is created with: Kafka's
// default retention, as a client that sets it explicitly creates it.
var manyConfigs = map[string]string{"retention.ms": "604800000"}

// manyParts is a server holding topics × parts partitions, each with
// one batch in it.
type manyParts struct {
	ts     *testServer
	names  []string
	parts  int
	batch  []byte
	ends   [][]int64 // per topic, per partition: the log end offset
	handle [][]*logstore.Partition
}

func newManyParts(b *testing.B, topics, parts int) *manyParts {
	b.Helper()
	start := time.Now()
	ts := startServer(b, logstore.Options{Sync: logstore.SyncNever}, Config{Logger: quietLogger()})
	m := &manyParts{ts: ts, parts: parts, batch: batchOf(-1, 0, 0, "v")}
	for t := range topics {
		name := fmt.Sprintf("many%d", t)
		if topics == 1 {
			name = "many"
		}
		if _, err := ts.srv.cat.CreateTopic(name, int32(parts), manyConfigs, false); err != nil {
			b.Fatal(err)
		}
		m.names = append(m.names, name)
		ends := make([]int64, parts)
		handles := make([]*logstore.Partition, parts)
		for p := range parts {
			part, err := ts.store.ExistingPartition(name, int32(p))
			if err != nil {
				b.Fatal(err)
			}
			res, err := part.Append(append([]byte(nil), m.batch...))
			if err != nil {
				b.Fatal(err)
			}
			ends[p], handles[p] = res.LastOffset+1, part
		}
		m.ends = append(m.ends, ends)
		m.handle = append(m.handle, handles)
	}
	b.Logf("setup of %d×%d partitions: %v", topics, parts, time.Since(start).Round(time.Millisecond))
	return m
}

// quietLogger drops the server's logs: connection ends are not news.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cpuMeter reports the process's CPU time (user and system: the
// server's, the kernel's loopback and the client's) per op, as
// cpu-us/op: steadier than ns/op on a machine other jobs load.
type cpuMeter struct {
	b     *testing.B
	began time.Duration
	known bool
}

func startCPU(b *testing.B) *cpuMeter {
	began, known := processCPU()
	return &cpuMeter{b: b, began: began, known: known}
}

func (m *cpuMeter) report() {
	if now, ok := processCPU(); ok && m.known {
		m.b.ReportMetric(float64((now-m.began).Microseconds())/float64(m.b.N), "cpu-us/op")
	}
}

// total is the number of partitions.
func (m *manyParts) total() int { return len(m.names) * m.parts }

// at is the topic and partition of the i-th partition, counted across
// topics.
func (m *manyParts) at(i int) (int, int32) { return i / m.parts, int32(i % m.parts) }

// roundTrip writes frame and reads the response into buf (grown when
// short), returning it.
func roundTrip(b *testing.B, c *rawClient, frame []byte, buf []byte) []byte {
	if _, err := c.nc.Write(frame); err != nil {
		b.Fatal(err)
	}
	return readFrame(b, c, buf)
}

func readFrame(b *testing.B, c *rawClient, buf []byte) []byte {
	if _, err := io.ReadFull(c.nc, buf[:4]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(buf))
	if n > cap(buf) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		b.Fatal(err)
	}
	return buf
}

// decode checks that a response frame read by roundTrip decodes as
// req's response, and returns it.
func decode(b *testing.B, req kmsg.Request, buf []byte) kmsg.Response {
	resp := req.ResponseKind()
	body := buf[4:]
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		b.Fatal(err)
	}
	return resp
}

const manyPerProduce = 100 // partitions per Produce request

func (m *manyParts) benchProduce(b *testing.B) {
	c := m.ts.dial()
	// One frame per window of manyPerProduce partitions.
	var frames [][]byte
	var reqs []*kmsg.ProduceRequest
	for first := 0; first+manyPerProduce <= m.total(); first += manyPerProduce {
		r := kmsg.NewPtrProduceRequest()
		r.Version, r.Acks, r.TimeoutMillis = 9, 1, 5000
		for i := first; i < first+manyPerProduce; i++ {
			t, p := m.at(i)
			if len(r.Topics) == 0 || r.Topics[len(r.Topics)-1].Topic != m.names[t] {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = m.names[t]
				r.Topics = append(r.Topics, rt)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, m.batch
			rt := &r.Topics[len(r.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		reqs = append(reqs, r)
		frames = append(frames, frame(r, 1))
	}
	buf := make([]byte, 64<<10)
	buf = roundTrip(b, c, frames[0], buf)
	resp := decode(b, reqs[0], buf).(*kmsg.ProduceResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("produce to %s-%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	b.SetBytes(int64(manyPerProduce * len(m.batch)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for i := range b.N {
		buf = roundTrip(b, c, frames[i%len(frames)], buf)
	}
	b.StopTimer()
	cpu.report()
	for i, ends := range m.ends {
		for p := range ends {
			ends[p] = m.handle[i][p].EndOffset()
		}
	}
}

// fetchAll is a Fetch v12 of every partition, from offsets (nil: 0).
func (m *manyParts) fetchAll(maxWait, minBytes int32, offsets [][]int64) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.ReplicaID = 12, -1
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes = maxWait, minBytes, 50<<20
	r.SessionEpoch = -1
	for t, name := range m.names {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = name
		for p := range m.parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = int32(p)
			if offsets != nil {
				rp.FetchOffset = offsets[t][p]
			}
			// One batch of each: the answer's size stays the same
			// however many batches the produce benchmark added.
			rp.PartitionMaxBytes = 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func (m *manyParts) benchFetch(b *testing.B) {
	c := m.ts.dial()
	r := m.fetchAll(0, 1, nil)
	f := frame(r, 1)
	buf := roundTrip(b, c, f, make([]byte, 1<<20))
	resp := decode(b, r, buf).(*kmsg.FetchResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				b.Fatalf("fetch of %s-%d: error %d, %d bytes", t.Topic, p.Partition, p.ErrorCode, len(p.RecordBatches))
			}
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for range b.N {
		buf = roundTrip(b, c, f, buf)
	}
	b.StopTimer()
	cpu.report()
}

func (m *manyParts) benchLongPoll(b *testing.B) {
	c := m.ts.dial()
	r := m.fetchAll(10_000, 1, m.ends)
	buf := make([]byte, 1<<20)
	var f []byte
	var wake time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for i := range b.N {
		b.StopTimer()
		f = r.AppendTo(frameHeader(f[:0], r))
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
		b.StartTimer()
		if _, err := c.nc.Write(f); err != nil {
			b.Fatal(err)
		}
		for m.ts.srv.longPolls.Load() == 0 {
			// Sleep, not spin: the server has the CPU to itself.
			time.Sleep(20 * time.Microsecond)
		}
		t, p := m.at(i % m.total())
		began := time.Now()
		res, err := m.handle[t][p].Append(append([]byte(nil), m.batch...))
		if err != nil {
			b.Fatal(err)
		}
		buf = readFrame(b, c, buf)
		wake += time.Since(began)
		b.StopTimer()
		if i == 0 {
			resp := decode(b, r, buf).(*kmsg.FetchResponse)
			got := 0
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					got += len(p.RecordBatches)
				}
			}
			if got != len(m.batch) {
				b.Fatalf("long poll answered %d record bytes, want %d", got, len(m.batch))
			}
		}
		r.Topics[t].Partitions[p].FetchOffset = res.LastOffset + 1
		b.StartTimer()
	}
	b.StopTimer()
	cpu.report()
	b.ReportMetric(float64(wake.Microseconds())/float64(b.N), "wake-us")
	for t := range m.names {
		for p := range m.parts {
			m.ends[t][p] = r.Topics[t].Partitions[p].FetchOffset
		}
	}
}

// frameHeader appends a request header (correlation id 1, client id
// "test") for req to dst, after the 4 bytes of the frame's length.
func frameHeader(dst []byte, req kmsg.Request) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, 4)
	dst = append(dst, "test"...)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	return dst
}

// TestLongPollManyPartitions: a long poll over the 64 partitions of two
// topics is answered by an append to any one of them, with that
// partition's batch and every other partition as it is; with MinBytes of
// two batches only by the second append (to another partition); at
// read_committed by the marker that moves one partition's LSO; by the
// deletion of one topic, with UNKNOWN_TOPIC_OR_PARTITION for each of its
// partitions; and, with nothing, at MaxWaitMillis.
func TestLongPollManyPartitions(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	const per = 32
	names := []string{"a", "b"}
	for _, name := range names {
		ts.createTopic(name, per)
	}
	fc, pc := ts.dial(), ts.dial()
	offsets := map[string][]int64{"a": make([]int64, per), "b": make([]int64, per)}
	req := func(minBytes, maxWait int32, isolation int8) *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.Version, r.ReplicaID, r.SessionEpoch = 12, -1, -1
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.IsolationLevel = maxWait, minBytes, 50<<20, isolation
		for _, name := range names {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = name
			for p := range per {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), offsets[name][p], 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	// check checks that the answer has every partition in request order:
	// those in want with want's record bytes and a high watermark past
	// their fetch offset, the others empty with a high watermark at it.
	// It moves the offsets to the high watermarks.
	check := func(resp *kmsg.FetchResponse, want map[string]int) {
		t.Helper()
		if resp.ErrorCode != 0 || len(resp.Topics) != len(names) {
			t.Fatalf("answer: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
		}
		for ti, st := range resp.Topics {
			if st.Topic != names[ti] || len(st.Partitions) != per {
				t.Fatalf("answer's topic %d: %s with %d partitions", ti, st.Topic, len(st.Partitions))
			}
			for p, sp := range st.Partitions {
				key := fmt.Sprintf("%s-%d", st.Topic, p)
				if sp.ErrorCode != 0 || sp.Partition != int32(p) || len(sp.RecordBatches) != want[key] {
					t.Fatalf("%s: error %d, partition %d, %d bytes; want %d bytes", key, sp.ErrorCode, sp.Partition, len(sp.RecordBatches), want[key])
				}
				if want[key] == 0 && sp.HighWatermark != offsets[st.Topic][p] || want[key] > 0 && sp.HighWatermark <= offsets[st.Topic][p] {
					t.Fatalf("%s: high watermark %d from fetch offset %d with %d bytes", key, sp.HighWatermark, offsets[st.Topic][p], want[key])
				}
				offsets[st.Topic][p] = sp.HighWatermark
			}
		}
	}
	batch := batchOf(-1, 0, 0, "v")
	produce := func(topic string, p int32) {
		t.Helper()
		if got := producePart(t, pc, 9, -1, topic, p, batch); got.ErrorCode != 0 {
			t.Fatalf("produce to %s-%d: error %d", topic, p, got.ErrorCode)
		}
	}
	// stillWaiting checks that no answer comes within 100 ms.
	stillWaiting := func() {
		t.Helper()
		if err := fc.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		var one [1]byte
		if n, err := fc.nc.Read(one[:]); err == nil || n > 0 {
			t.Fatal("the long poll answered before MinBytes")
		}
		if err := fc.nc.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}

	r := req(1, 60_000, 0)
	corr := fc.send(r)
	waitLongPolls(t, ts, 1)
	produce("b", 17)
	check(fc.read(r, corr).(*kmsg.FetchResponse), map[string]int{"b-17": len(batch)})

	r = req(int32(2*len(batch)), 60_000, 0)
	corr = fc.send(r)
	waitLongPolls(t, ts, 1)
	produce("a", 3)
	stillWaiting()
	produce("b", 30)
	check(fc.read(r, corr).(*kmsg.FetchResponse), map[string]int{"a-3": len(batch), "b-30": len(batch)})

	l := ts.txnLog("a", 9)
	l.data(20, "x")
	r = req(1, 60_000, isolationReadCommitted)
	corr = fc.send(r)
	waitLongPolls(t, ts, 1)
	stillWaiting()
	l.end(20, true)
	resp := fc.read(r, corr).(*kmsg.FetchResponse)
	if sp := resp.Topics[0].Partitions[9]; sp.LastStableOffset != offsets["a"][9]+2 || len(sp.RecordBatches) == 0 {
		t.Fatalf("a-9 at read_committed after the commit: LSO %d (fetched from %d), %d bytes", sp.LastStableOffset, offsets["a"][9], len(sp.RecordBatches))
	}
	offsets["a"][9] += 2

	r = req(1, 300, 0)
	began := time.Now()
	check(fc.do(r).(*kmsg.FetchResponse), nil)
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Fatalf("a long poll with nothing answered after %v, before its MaxWaitMillis", waited)
	}

	r = req(1, 60_000, 0)
	corr = fc.send(r)
	waitLongPolls(t, ts, 1)
	if _, err := ts.srv.cat.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	resp = fc.read(r, corr).(*kmsg.FetchResponse)
	for p, sp := range resp.Topics[1].Partitions {
		if sp.ErrorCode != errUnknownTopicOrPartition {
			t.Fatalf("b-%d after b's deletion: error %d, want %d", p, sp.ErrorCode, errUnknownTopicOrPartition)
		}
	}
	for p, sp := range resp.Topics[0].Partitions {
		if sp.ErrorCode != 0 {
			t.Fatalf("a-%d after b's deletion: error %d", p, sp.ErrorCode)
		}
	}
}
