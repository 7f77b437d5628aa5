//go:build unix

package kafkaserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// killHarness is what the kill tests of the admin APIs share: a
// `logstore serve` child holding one topic, a seeded random source whose
// seed every failure names (and an environment variable replays), a
// context bounding the test, and kgo clients of the child.
type killHarness struct {
	t       *testing.T
	c       *child
	addr    string
	seed    uint64
	seedEnv string
	rng     *rand.Rand
	ctx     context.Context
}

// newKillHarness starts the child with segments of segmentBytes and
// creates topic with partitions; seedEnv names the variable that
// replays a seed.
func newKillHarness(t *testing.T, topic string, partitions int32, segmentBytes int64, seedEnv string) *killHarness {
	t.Helper()
	addr := freeAddr(t)
	h := &killHarness{t: t, addr: addr, seedEnv: seedEnv, seed: uint64(time.Now().UnixNano())}
	h.c = startChild(t, childSpec{Listen: addr, Advertise: addr, MetricsListen: freeAddr(t), SegmentBytes: segmentBytes})
	if v := os.Getenv(seedEnv); v != "" {
		h.seed, _ = strconv.ParseUint(v, 10, 64)
	}
	h.rng = rand.New(rand.NewPCG(h.seed, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	h.ctx = ctx
	cl := h.client()
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return h
}

// fail ends the test, naming the seed and how to replay it.
func (h *killHarness) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("seed %d: %s (replay: %s=%d)", h.seed, fmt.Sprintf(format, args...), h.seedEnv, h.seed)
}

// client is a kgo client of the child; the caller closes it.
func (h *killHarness) client(opts ...kgo.Opt) *kgo.Client {
	h.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(h.addr)}, opts...)...)
	if err != nil {
		h.t.Fatal(err)
	}
	return cl
}

// producer is a kgo producer of the child that names its partitions,
// not idempotent: an idempotent kgo producer never fails a batch whose
// answer the kill lost (it may have been written), whatever the context
// or delivery timeout, so its ProduceSync would wait for a server that
// restarts only after it returns.
func (h *killHarness) producer() *kgo.Client {
	return h.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(3*time.Second))
}

// armKill kills the child with SIGKILL after a random wait of at least
// minMillis and less than minMillis+spreadMillis. killing says it has
// begun; dead kills the child now if the wait has not ended yet, and
// returns once it is dead.
func (h *killHarness) armKill(minMillis, spreadMillis int) (killing *atomic.Bool, dead func()) {
	killing = new(atomic.Bool)
	killed := make(chan error, 1)
	timer := time.AfterFunc(time.Duration(minMillis+h.rng.IntN(spreadMillis))*time.Millisecond, func() {
		killing.Store(true)
		killed <- h.c.kill()
	})
	return killing, func() {
		h.t.Helper()
		err := h.c.kill
		if !timer.Stop() {
			err = func() error { return <-killed }
		}
		if err := err(); err != nil {
			h.t.Fatal(err)
		}
	}
}

// restart starts the child again over the same store.
func (h *killHarness) restart() {
	h.t.Helper()
	if err := h.c.start(); err != nil {
		h.t.Fatal(err)
	}
}
