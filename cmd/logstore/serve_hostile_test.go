package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hostileProduceFrame is the costliest Produce frame of about size bytes
// that the server decodes (kafkaserver's checkProduceShape lets it
// through): one topic and as many partitions as fit, each with 40 bytes
// of records that are no batch, so that each partition costs the
// server near the most it allows per byte.
func hostileProduceFrame(size int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "hostile"
	junk := bytes.Repeat([]byte{0xee}, 40)
	rt.Partitions = make([]kmsg.ProduceRequestTopicPartition, size/(4+4+len(junk)))
	for i := range rt.Partitions {
		rt.Partitions[i] = kmsg.ProduceRequestTopicPartition{Partition: int32(i), Records: junk}
	}
	req.Topics = append(req.Topics, rt)
	b := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0xff, 0xff} // size, Produce v7, correlation id, null client id
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// TestServeHostileProducers: eight connections each pipeline the
// costliest Produce frames the limits allow (16 MiB with
// --max-request-bytes, four in flight) at a serve whose request budget
// (--queued-max-request-bytes) is 64 MiB. The server's peak resident
// set stays within the budget's bound (four times the budget above
// what it was idle: the decoded requests and their answers are charged
// to it, and Go's collector lets the heap grow to twice what is live),
// and it serves on afterwards. Without the budget the same clients
// take it past 1 GB (see the note in BENCHMARKS.md).
func TestServeHostileProducers(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc to read the server's resident set from: %v", err)
	}
	const (
		conns    = 8
		frames   = 4 // each connection's, all in flight
		frameMiB = 16
		budget   = 64 << 20
	)
	cli := buildServeCLI(t)
	s, _, err := startServed(t, cli, t.TempDir(), "--max-request-bytes", strconv.Itoa(frameMiB<<20+1<<10),
		"--queued-max-request-bytes", strconv.Itoa(budget))
	if err != nil {
		t.Fatal(err)
	}
	idle := procStatusBytes(t, s.pid(), "VmRSS")
	frame := hostileProduceFrame(frameMiB << 20)

	var wg sync.WaitGroup
	answered := make([]int, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(2 * time.Minute))
			go func() {
				for range frames {
					if _, err := nc.Write(frame); err != nil {
						return
					}
				}
			}()
			for range frames {
				var hdr [4]byte
				if _, err := io.ReadFull(nc, hdr[:]); err != nil {
					t.Errorf("connection %d: answer %d: %v", i, answered[i], err)
					return
				}
				if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(hdr[:]))); err != nil {
					t.Errorf("connection %d: answer %d: %v", i, answered[i], err)
					return
				}
				answered[i]++
			}
		}()
	}
	wg.Wait()
	peak := procStatusBytes(t, s.pid(), "VmHWM")
	t.Logf("%d connections × %d frames of %d MiB, answered %v: idle RSS %.0f MB, peak %.0f MB (budget %d MiB)",
		conns, frames, frameMiB, answered, float64(idle)/1e6, float64(peak)/1e6, budget>>20)
	if bound := idle + 4*budget; peak > bound {
		t.Errorf("peak resident set %.0f MB, above the bound of %.0f MB", float64(peak)/1e6, float64(bound)/1e6)
	}

	// A real producer is served after the storm.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceSync(ctx, t, s.addr, "after-the-storm", 5, stringer(func() string { return s.log.head() }))
	if err := s.stop(); err != nil {
		t.Error(err)
	}
}

// stringer is a func as a fmt.Stringer.
type stringer func() string

func (f stringer) String() string { return f() }
