package kafkatest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/kafkatest"
)

// kfakeBehind starts a one-broker kfake with topic over 3 partitions,
// behind a new proxy: kfake advertises the proxy's address, so every
// client connection goes through it.
func kfakeBehind(t *testing.T, topic string) *kafkatest.Proxy {
	t.Helper()
	p, err := kafkatest.NewProxy(kafkatest.ProxyConfig{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var real string
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(3, topic),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			real = ln.Addr().String()
			return kafkatest.Advertise(ln, p.Addr()), nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p.SetTarget(real)
	return p
}

func workloadN(short, long int) int {
	if testing.Short() {
		return short
	}
	return long
}

// runAndCheck runs the workload through p and checks it by consuming.
func runAndCheck(t *testing.T, p *kafkatest.Proxy, w *kafkatest.Workload) *kafkatest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	w.Brokers = []string{p.Addr()}
	res, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.Acked != w.Records {
		t.Fatalf("acknowledged %d of %d records: %v", res.Acked, w.Records, res.Err)
	}
	p.SetRules(kafkatest.Rules{}) // the consumer reads without faults
	found, err := kafkatest.Consume(ctx, w.Brokers, w.Topic, res.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	if err := kafkatest.Verify(res, found); err != nil {
		t.Fatal(err)
	}
	if len(found) != w.Records {
		t.Fatalf("consumed %d records, produced %d", len(found), w.Records)
	}
	return res
}

func TestKfakeClean(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "clean")
	runAndCheck(t, p, &kafkatest.Workload{Topic: "clean", Records: workloadN(500, 3000)})
	c := p.Counts()
	if c.Requests == 0 || c.ProduceErrors[0] == 0 {
		t.Fatalf("nothing went through the proxy: %+v", c)
	}
	if c.ProduceRepeats != 0 || c.DroppedAndClosed+c.DroppedSilently+c.Muted+c.ClosedBeforeForward != 0 {
		t.Fatalf("a clean run repeated or dropped answers: %+v", c)
	}
	t.Logf("%+v", c)
}

// TestKfakeDropAndClose: every 7th Produce response is read from kfake
// and swallowed, the connection closed; kgo retries on a new one and
// kfake answers the retries as duplicates with the first offsets.
func TestKfakeDropAndClose(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "dropclose")
	p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 7, kafkatest.DropAndClose)})
	runAndCheck(t, p, &kafkatest.Workload{Topic: "dropclose", Records: workloadN(500, 3000), MaxBuffered: 16})
	c := p.Counts()
	if c.DroppedAndClosed == 0 || c.ProduceDropped == 0 {
		t.Fatalf("no response dropped: %+v", c)
	}
	if c.ProduceRepeats == 0 {
		t.Fatalf("dropped %d produce answers, but no retry was answered with a repeated offset: %+v", c.ProduceDropped, c)
	}
	t.Logf("%+v", c)
}

// TestKfakeDropSilently: a few Produce responses vanish on a connection
// that stays open; kgo's request timeout (a second plus a second) gives
// up on it and retries elsewhere.
func TestKfakeDropSilently(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "silent")
	p.SetRules(kafkatest.Rules{Response: kafkatest.Limit(3, kafkatest.EveryNth(0, 11, kafkatest.DropSilently))})
	runAndCheck(t, p, &kafkatest.Workload{Topic: "silent", Records: workloadN(500, 2000), MaxBuffered: 16})
	c := p.Counts()
	if c.DroppedSilently != 3 {
		t.Fatalf("dropped %d responses silently, want 3: %+v", c.DroppedSilently, c)
	}
	if c.ProduceRepeats == 0 {
		t.Fatalf("no retry answered with a repeated offset: %+v", c)
	}
	t.Logf("%+v", c)
}

// TestKfakeCloseBeforeForward: every 7th Produce request never reaches
// kfake; its connection is closed instead.
func TestKfakeCloseBeforeForward(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "closebefore")
	p.SetRules(kafkatest.Rules{Request: kafkatest.EveryNth(0, 7, kafkatest.CloseBeforeForward)})
	runAndCheck(t, p, &kafkatest.Workload{Topic: "closebefore", Records: workloadN(500, 3000), MaxBuffered: 16})
	c := p.Counts()
	if c.ClosedBeforeForward == 0 {
		t.Fatalf("no request refused: %+v", c)
	}
	t.Logf("%+v", c)
}

// TestWorkloadEndsWithItsContext: when no answer ever comes, Run still
// returns once its context ends, with every record failed, none
// acknowledged and the first error kept.
func TestWorkloadEndsWithItsContext(t *testing.T) {
	t.Parallel()
	p := kfakeBehind(t, "never")
	p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 1, kafkatest.DropSilently)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	w := &kafkatest.Workload{Brokers: []string{p.Addr()}, Topic: "never", Records: 50}
	res, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Acked != 0 || res.Err == nil {
		t.Fatalf("acknowledged %d records, error %v: want none and an error", res.Acked, res.Err)
	}
	for i, a := range res.Records {
		if a.Err == nil || a.Offset != -1 {
			t.Fatalf("record %d: offset %d, error %v", i, a.Offset, a.Err)
		}
	}
	if c := p.Counts(); c.DroppedSilently == 0 {
		t.Fatalf("no answer dropped: %+v", c)
	}
}
