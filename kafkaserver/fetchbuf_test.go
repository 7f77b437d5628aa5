package kafkaserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestFetchPipelinedSharedBuffers: fetches of several partitions (one
// read buffer per fetch, shared by its partitions, outgrown when a first
// batch is larger than the partition's limit) sent back to back on one
// connection, so that the server reads the next ones while the writer
// encodes the first, each answer the bytes the partition holds: no
// buffer goes back to the pool before its response is encoded.
func TestFetchPipelinedSharedBuffers(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 3)
	c := ts.dial()
	for p := range int32(3) {
		for i := range 20 {
			v := bytes.Repeat([]byte{byte('a' + p)}, 100+int(p)*3000+i*50)
			if got := producePart(t, c, 9, -1, "t", p, batchOf(-1, 0, 0, string(v))); got.ErrorCode != 0 {
				t.Fatal(got.ErrorCode)
			}
		}
	}
	want := func(p int32, off int64, limit int) []byte {
		part, err := ts.store.Partition("t", p)
		if err != nil {
			t.Fatal(err)
		}
		data, _, err := part.ReadDurable(off, limit)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	type sent struct {
		r    *kmsg.FetchRequest
		corr int32
	}
	var reqs []sent
	for i := range 30 {
		r := fetchReq(int16(4+i%9), "t", 0, int64(i%20), 0, 0)
		r.Topics[0].Partitions[0].PartitionMaxBytes = int32(1000 + i*700)
		for p := int32(1); p < 3; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p, int64((i+int(p))%20)
			rp.PartitionMaxBytes = int32(10 + i*300) // often less than one batch
			r.Topics[0].Partitions = append(r.Topics[0].Partitions, rp)
		}
		reqs = append(reqs, sent{r, c.send(r)})
	}
	for i, s := range reqs {
		resp := c.read(s.r, s.corr).(*kmsg.FetchResponse)
		for j, sp := range resp.Topics[0].Partitions {
			rp := s.r.Topics[0].Partitions[j]
			w := want(rp.Partition, rp.FetchOffset, int(rp.PartitionMaxBytes))
			if sp.ErrorCode != 0 || !bytes.Equal(sp.RecordBatches, w) {
				t.Fatalf("fetch %d (v%d), partition %d at %d: code %d, %d bytes, want %d", i, s.r.Version, rp.Partition, rp.FetchOffset, sp.ErrorCode, len(sp.RecordBatches), len(w))
			}
		}
	}
}

// TestFetchAllocations: 1 MiB fetches, after the first few, allocate
// far less than they send: the partition's batches are read into pooled
// buffers and the response encoded into one, both back to their pools
// once written, at both isolation levels. (Before, each fetch allocated
// and cleared a new buffer for its batches: at least the bytes it sent.)
func TestFetchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the buffers are pooled, and the race detector empties pools at random")
	}
	for _, isolation := range []int8{0, isolationReadCommitted} {
		t.Run(fmt.Sprintf("isolation%d", isolation), func(t *testing.T) { testFetchAllocations(t, isolation) })
	}
}

func testFetchAllocations(t *testing.T, isolation int8) {
	ts, part, batch := zeroBatchPartition(t, "t")
	for range (4 << 20) / len(batch) {
		if _, err := part.Append(append([]byte(nil), batch...)); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.dial()
	buf := make([]byte, 2<<20)
	var sent int
	fetch := func(i int) {
		r := fetchReq(12, "t", 0, int64(i%3)*16*16, 0, 0) // a batch's offset
		r.IsolationLevel = isolation
		c.corr++
		if _, err := c.nc.Write(frame(r, c.corr)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c.nc, buf[:4]); err != nil {
			t.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(buf))
		if n > len(buf) || n < 512<<10 {
			t.Fatalf("response of %d bytes", n)
		}
		if _, err := io.ReadFull(c.nc, buf[:n]); err != nil {
			t.Fatal(err)
		}
		sent += n
	}
	for i := range 3 {
		fetch(i)
	}
	sent = 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 16 {
		fetch(i)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(sent)/4 {
		t.Fatalf("16 fetches sent %d bytes and allocated %d", sent, got)
	}
	t.Logf("16 fetches sent %d bytes and allocated %d", sent, after.TotalAlloc-before.TotalAlloc)
}

// TestFetchLongPollRebuilds: a long-poll fetch that rebuilds its answer
// at each append (giving the last build's buffer back each time) until
// it holds MinBytes answers the partition's bytes, while fetches on
// another connection take buffers from the same pools meanwhile.
func TestFetchLongPollRebuilds(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{})
	ts.createTopic("t", 1)
	fc, pc, oc := ts.dial(), ts.dial(), ts.dial()
	batch := func(i int) []byte {
		return batchOf(-1, 0, 0, string(bytes.Repeat([]byte{byte('a' + i)}, 3000)))
	}
	r := fetchReq(12, "t", 0, 0, 60_000, int32(3*len(batch(0))))
	corr := fc.send(r)
	for i := range 3 {
		if got := producePart(t, pc, 9, -1, "t", 0, batch(i)); got.ErrorCode != 0 {
			t.Fatal(got.ErrorCode)
		}
		// Another fetch, answered at once, between the rebuilds.
		if sp := fetchPart(t, oc, fetchReq(12, "t", 0, 0, 0, 0)); sp.ErrorCode != 0 || len(sp.RecordBatches) != (i+1)*len(batch(0)) {
			t.Fatalf("fetch after %d appends: code %d, %d bytes", i+1, sp.ErrorCode, len(sp.RecordBatches))
		}
	}
	resp := fc.read(r, corr).(*kmsg.FetchResponse)
	sp := resp.Topics[0].Partitions[0]
	part, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := part.ReadDurable(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if sp.ErrorCode != 0 || sp.HighWatermark != 3 || !bytes.Equal(sp.RecordBatches, want) {
		t.Fatalf("long-poll answer: code %d, hwm %d, %d bytes, want the partition's %d", sp.ErrorCode, sp.HighWatermark, len(sp.RecordBatches), len(want))
	}
}
