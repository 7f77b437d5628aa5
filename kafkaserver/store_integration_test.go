package kafkaserver_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/testseam"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// The server over a real logstore.Store whose filesystem or clock a test
// replaces (through internal/testseam): a held or failing fsync, a
// clock that jumps.

// serveKafka serves s over the Kafka protocol on a loopback port until
// the test ends, and returns the address.
func serveKafka(t *testing.T, s *logstore.Store, logger *slog.Logger) string {
	t.Helper()
	srv, err := kafkaserver.New(s, kafkaserver.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return ln.Addr().String()
}

// dialKafka connects to addr, closed when the test ends.
func dialKafka(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// kafkaProduce is a Produce v9 request of batch to topic-0, acks=-1.
func kafkaProduce(batch []byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func kafkaSend(t *testing.T, nc net.Conn, req kmsg.Request, corr int32) {
	t.Helper()
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

func kafkaProduceAnswer(t *testing.T, nc net.Conn, req *kmsg.ProduceRequest, corr int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body[5:]); err != nil { // corr, tag byte
		t.Fatal(err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// TestKafkaProduceDoesNotHoldNextAppend: while one produce waits for its
// fsync (held), the next produce on the same connection is appended; the
// answers come in order once the fsync ends, and a duplicate of the
// first batch sent on another connection meanwhile is answered with the
// first copy's offset, not before the first copy is durable.
func TestKafkaProduceDoesNotHoldNextAppend(t *testing.T) {
	h := testutil.NewHeldSyncFS(vfs.OS)
	s := openStore(t, t.TempDir(), testseam.WithFS(logstore.Options{}, h))
	p := openPartition(t, s, "t", 0) // the topic: its partition directory
	addr := serveKafka(t, s, slog.New(slog.DiscardHandler))
	c, other := dialKafka(t, addr), dialKafka(t, addr)

	h.Hold.Store(true)
	first := kafkaProduce(producerBatch(4, 0, 0, 1, recent))
	kafkaSend(t, c, first, 1)
	<-h.Entered // the first produce's fsync has begun, and is held
	second := kafkaProduce(producerBatch(4, 0, 1, 1, recent))
	kafkaSend(t, c, second, 2)
	dup := kafkaProduce(producerBatch(4, 0, 0, 1, recent))
	kafkaSend(t, other, dup, 1)
	for deadline := time.Now().Add(30 * time.Second); p.EndOffset() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(h.Release)
			t.Fatalf("the second produce was not appended while the first one's fsync was held (log end %d)", p.EndOffset())
		}
	}
	if d := p.DurableEnd(); d != 0 {
		t.Fatalf("DurableEnd %d while the first fsync is held", d)
	}
	close(h.Release)
	for i, want := range []struct {
		r    *kmsg.ProduceRequest
		corr int32
		c    net.Conn
		base int64
	}{{first, 1, c, 0}, {second, 2, c, 1}, {dup, 1, other, 0}} {
		sp := kafkaProduceAnswer(t, want.c, want.r, want.corr)
		if sp.ErrorCode != 0 || sp.BaseOffset != want.base {
			t.Fatalf("answer %d: %+v, want base %d", i, sp, want.base)
		}
		if d := p.DurableEnd(); d <= want.base {
			t.Fatalf("answer %d (base %d) came with DurableEnd %d", i, want.base, d)
		}
	}
}

// failSyncFS fails every .log fsync once fail is set.
type failSyncFS struct {
	vfs.FS
	fail atomic.Bool
}

func (f *failSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return &failSyncFile{File: file, fs: f}, nil
}

type failSyncFile struct {
	vfs.File
	fs *failSyncFS
}

func (f *failSyncFile) Sync() error {
	if f.fs.fail.Load() {
		return errors.New("injected fsync failure")
	}
	return f.File.Sync()
}

// TestKafkaProducePoisoned: a produce whose fsync fails is answered
// KAFKA_STORAGE_ERROR (56, on which clients retry), never success, and
// logged; the poisoned partition answers 56 from then on, and its
// failure, repeated by every produce, is logged once per interval, not
// once per request.
func TestKafkaProducePoisoned(t *testing.T) {
	f := &failSyncFS{FS: vfs.OS}
	s := openStore(t, t.TempDir(), testseam.WithFS(logstore.Options{}, f))
	openPartition(t, s, "t", 0)
	var logs testutil.LockedBuffer
	c := dialKafka(t, serveKafka(t, s, slog.New(slog.NewTextHandler(&logs, nil))))
	f.fail.Store(true)
	for i := range 200 {
		req := kafkaProduce(batchOf("x"))
		kafkaSend(t, c, req, int32(i))
		if sp := kafkaProduceAnswer(t, c, req, int32(i)); sp.ErrorCode != 56 || sp.BaseOffset != -1 {
			t.Fatalf("produce %d on a failing disk: %+v, want error 56", i, sp)
		}
	}
	if !strings.Contains(logs.String(), "injected fsync failure") {
		t.Fatalf("the failure was not logged:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "\n"); n > 4 {
		t.Fatalf("200 failed produces logged %d lines:\n%s", n, logs.String())
	}
}

// TestKafkaProducerExpiry: a kgo idempotent producer (acks=all) idle
// past the store's producer expiry gets 59 UNKNOWN_PRODUCER_ID for its
// next batch, bumps its epoch, and goes on: every record is in the log
// exactly once, in order. (With StopProducerOnDataLossDetected kgo
// fails the batch instead: it treats 59 as data loss unless the log
// start has passed its last acknowledged offset; sink.go.)
func TestKafkaProducerExpiry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	s := openStore(t, t.TempDir(), testseam.WithClock(logstore.Options{ProducerExpiry: time.Minute}, now))
	p := openPartition(t, s, "t", 0)
	addr := serveKafka(t, s, slog.New(slog.DiscardHandler))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var epochs []int16
	for i := range 20 {
		if i == 10 {
			clock.Add(int64(2 * time.Minute))
		}
		r := &kgo.Record{Value: fmt.Appendf(nil, "v%02d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
		}
		epochs = append(epochs, r.ProducerEpoch)
	}
	if epochs[19] <= epochs[0] {
		t.Fatalf("producer epochs %v: kgo did not bump its epoch after the expiry", epochs)
	}
	if end := p.EndOffset(); end != 20 {
		t.Fatalf("log end %d, want 20", end)
	}
}

// recent is a record timestamp the default producer expiry (1 day,
// against the clock) keeps.
var recent = time.Now().UnixMilli()

// producerBatch builds an idempotent client batch of n records.
func producerBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	return testutil.ClientBatch(pid, epoch, seq, n, ts, false)
}

// batchOf builds a client batch of the given values, one record each,
// with base offset 0 (Append stamps the real one). It panics on a builder
// error, which would be a bug of the test.
func batchOf(values ...string) []byte {
	b := recordbatch.NewBuilder(0)
	for _, v := range values {
		if err := b.Append(1_700_000_000_000, nil, []byte(v), nil); err != nil {
			panic(err)
		}
	}
	out, err := b.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	return out
}

// openStore opens a store in dir and closes it when the test ends (a
// second Close is harmless).
func openStore(t testing.TB, dir string, opts logstore.Options) *logstore.Store {
	t.Helper()
	s, err := logstore.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPartition(t testing.TB, s *logstore.Store, topic string, partition int32) *logstore.Partition {
	t.Helper()
	p, err := s.Partition(topic, partition)
	if err != nil {
		t.Fatalf("Partition(%q, %d): %v", topic, partition, err)
	}
	return p
}
