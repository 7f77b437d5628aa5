package kafkaserver

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/recordbatch"
)

// TestFramePoolClasses: a buffer has the length asked for and its
// class's capacity; a buffer above the largest class is not pooled.
func TestFramePoolClasses(t *testing.T) {
	for _, tc := range []struct{ n, cap int }{
		{1, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 2 << 10}, {16<<10 + 600, 32 << 10},
		{maxPooledFrame, maxPooledFrame}, {maxPooledFrame + 1, maxPooledFrame + 1},
	} {
		b := getFrame(tc.n)
		if len(b) != tc.n || cap(b) != tc.cap {
			t.Errorf("getFrame(%d): len %d cap %d, want cap %d", tc.n, len(b), cap(b), tc.cap)
		}
		putFrame(b)
	}
}

// TestProducePipelinedFrames: two connections each pipeline produce
// requests whose frames span the pool's size classes (from under 1 KiB
// to one above the largest class, so frames grow as their bytes come)
// under SyncAlways, so responses wait for fsyncs while the readers read
// on into pooled buffers. Every response answers its own request at its
// offset, and the log holds every batch byte for byte.
func TestProducePipelinedFrames(t *testing.T) {
	ts := startServer(t, logstore.Options{Sync: logstore.SyncAlways, MaxMessageBytes: 16 << 20}, Config{})
	ts.createTopic("t", 2)
	sizes := []int{1, 700, 3000, 15000, 40000, 100000, 700000}
	const rounds = 2
	rng := rand.NewChaCha8([32]byte{1})
	conns := [2]*rawClient{ts.dial(), ts.dial()}
	var batches [2][][]byte
	for ci := range conns {
		for r := range rounds {
			for i, size := range sizes {
				v := make([]byte, size)
				rng.Read(v)
				seq := int32(r*len(sizes) + i)
				batches[ci] = append(batches[ci], batchOf(int64(10+ci), 0, seq, string(v)))
			}
		}
	}
	// And one frame above the largest class, not pooled.
	v := make([]byte, maxPooledFrame+1000)
	rng.Read(v)
	batches[0] = append(batches[0], batchOf(10, 0, int32(len(batches[0])), string(v)))
	// Both connections send every request before reading a response.
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for ci, c := range conns {
		wg.Go(func() {
			for i, b := range batches[ci] {
				req := produceReq(9, -1, "t", int32(ci), append([]byte(nil), b...))
				if _, err := c.nc.Write(frame(req, int32(i+1))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for ci, c := range conns {
		for i := range batches[ci] {
			resp := c.read(produceReq(9, -1, "t", 0, nil), int32(i+1)).(*kmsg.ProduceResponse)
			if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.BaseOffset != int64(i) || sp.Partition != int32(ci) {
				t.Fatalf("connection %d, request %d: %+v", ci, i, sp)
			}
		}
		p, err := ts.store.Partition("t", int32(ci))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range batches[ci] {
			got, err := p.Read(int64(i), 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < recordbatch.HeaderSize {
				t.Fatalf("partition %d, offset %d: %d bytes", ci, i, len(got))
			}
			got = got[:recordbatch.Batch(got).Size()]
			// What the server stamps: the base offset and leader epoch 0.
			want = bytes.Clone(want)
			binary.BigEndian.PutUint64(want, uint64(i))
			binary.BigEndian.PutUint32(want[12:], 0)
			if !bytes.Equal(got, want) {
				t.Fatalf("partition %d, offset %d: the stored batch (%d bytes) differs from the one sent (%d bytes)", ci, i, len(got), len(want))
			}
		}
	}
}
