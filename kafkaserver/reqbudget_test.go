package kafkaserver

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// TestRequestBudgetHoldsReaders: with a budget of 1 MiB, a long-poll
// fetch charged 640 KiB (its frame of 10 KiB times the decode factor of
// a request other than Produce) holds a second one back: the second is
// read only once the first is answered, and a small request behind it
// waits its turn (the budget is first come, first served). Once all is
// answered, the whole budget is free again.
func TestRequestBudgetHoldsReaders(t *testing.T) {
	ts := startServer(t, logstore.Options{}, Config{QueuedMaxRequestBytes: 1 << 20})
	ts.createTopic("quiet", 1)
	longPoll := func() *kmsg.FetchRequest {
		req := fetchReq(11, "quiet", 0, 0, 1000, 1)
		req.Rack = strings.Repeat("r", 10<<10)
		return req
	}
	a, b := ts.dial(), ts.dial()
	start := time.Now()
	corrA := a.send(longPoll())
	time.Sleep(100 * time.Millisecond) // a's charge is taken first
	corrB := b.send(longPoll())
	b2 := b.send(kmsg.NewPtrApiVersionsRequest())
	a.read(longPoll(), corrA)
	tookA := time.Since(start)
	b.read(longPoll(), corrB)
	tookB := time.Since(start)
	b.read(kmsg.NewPtrApiVersionsRequest(), b2)
	t.Logf("first long poll answered after %v, the second after %v", tookA, tookB)
	// The second's long poll of 1 s begins once the first is answered.
	if tookB < tookA+900*time.Millisecond {
		t.Errorf("the second long poll was answered %v after the first: it was read before the budget had room", tookB-tookA)
	}
	// The writer gives a request's charge back just after its answer
	// is written, so a moment after the client has read it.
	deadline := time.Now().Add(5 * time.Second)
	for !ts.srv.budget.sem.TryAcquire(ts.srv.budget.size) {
		if time.Now().After(deadline) {
			t.Fatal("the budget is not all free once every request is answered")
		}
		time.Sleep(time.Millisecond)
	}
	ts.srv.budget.sem.Release(ts.srv.budget.size)
}

// TestConnectionLimits: a connection over MaxConnections, or over
// MaxConnectionsPerIP from one address, is closed as soon as it is
// accepted, and logged; once one closes, another is served.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"max connections", Config{MaxConnections: 2}},
		{"max connections per ip", Config{MaxConnections: -1, MaxConnectionsPerIP: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, logstore.Options{}, tc.cfg)
			first, second := ts.dial(), ts.dial()
			for _, c := range []*rawClient{first, second} {
				c.do(kmsg.NewPtrApiVersionsRequest())
			}
			third := ts.dial()
			third.expectClosed()
			if !strings.Contains(ts.logs.String(), "("+tc.name+")") {
				t.Errorf("no refusal logged:\n%s", ts.logs.String())
			}
			first.nc.Close()
			// The server forgets the first once its reader sees the close.
			deadline := time.Now().Add(10 * time.Second)
			for {
				c := ts.dial()
				c.send(kmsg.NewPtrApiVersionsRequest())
				if _, _, err := c.readResponse(false); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no connection served after one closed")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
