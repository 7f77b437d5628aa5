package kafkaserver_test

// Scenarios 1-4 of issue 13: a clean run, and a Produce answer lost in
// three ways (swallowed after the append with the connection closed,
// swallowed silently, and the request cut off before it is handled).
// Each run is checked by consuming and by scanning the store.

import (
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/kafkatest"
	"github.com/logstore/logstore/kafkaserver"
)

// TestE2EClean: scenario 1, straight to the server (no proxy; Metadata
// advertises the listener's own address).
func TestE2EClean(t *testing.T) {
	t.Parallel()
	s := newInProcess(t, logstore.Options{}, kafkaserver.Config{})
	brokers := []string{s.addr}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "clean"})
	checkBoth(t, s, brokers, nil, res)
}

// TestE2EDropAnswerAndClose: scenario 2. Every 7th Produce answer is read
// from the server (so the batch is durable and acknowledged) and
// swallowed, and the connection closed; kgo retries on a new connection,
// and the server must answer the retry as a duplicate with the first
// copy's offsets.
//
// The duplicates are counted by the proxy: answers with error 0 whose
// base offset the server had already given for that partition. (The
// server's own duplicate metric is not wired in kafkaserver.Config yet.)
func TestE2EDropAnswerAndClose(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{}, kafkaserver.Config{})
	p.SetRules(kafkatest.Rules{Response: kafkatest.EveryNth(0, 7, kafkatest.DropAndClose)})
	brokers := []string{p.Addr()}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "dropclose", MaxBuffered: 16})
	c := p.Counts()
	t.Logf("proxy: %+v", c)
	if c.ProduceDropped == 0 {
		t.Fatal("no Produce answer was dropped")
	}
	if c.ProduceRepeats == 0 {
		t.Fatalf("%d Produce answers dropped after the append, and no retry was answered as a duplicate", c.ProduceDropped)
	}
	checkBoth(t, s, brokers, p, res)
}

// TestE2EDropAnswerSilently: scenario 3. Two Produce answers vanish on
// connections that stay open (every later answer on them too); kgo's
// request timeout of 1 s + 1 s gives up on the connection and retries on
// a new one.
func TestE2EDropAnswerSilently(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{}, kafkaserver.Config{})
	p.SetRules(kafkatest.Rules{Response: kafkatest.Limit(2, kafkatest.EveryNth(0, 11, kafkatest.DropSilently))})
	brokers := []string{p.Addr()}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "silent", MaxBuffered: 16})
	c := p.Counts()
	t.Logf("proxy: %+v", c)
	if c.DroppedSilently != 2 {
		t.Fatalf("%d answers dropped silently, want 2", c.DroppedSilently)
	}
	if c.ProduceRepeats == 0 {
		t.Fatal("no retry of a silently dropped answer was answered as a duplicate")
	}
	checkBoth(t, s, brokers, p, res)
}

// TestE2ECloseBeforeHandled: scenario 4. Every 7th Produce request never
// reaches the server: its connection is closed instead, and kgo sends it
// again.
func TestE2ECloseBeforeHandled(t *testing.T) {
	t.Parallel()
	s, p := newProxied(t, logstore.Options{}, kafkaserver.Config{})
	p.SetRules(kafkatest.Rules{Request: kafkatest.EveryNth(0, 7, kafkatest.CloseBeforeForward)})
	brokers := []string{p.Addr()}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "closebefore", MaxBuffered: 16})
	c := p.Counts()
	t.Logf("proxy: %+v", c)
	if c.ClosedBeforeForward == 0 {
		t.Fatal("no request was cut off")
	}
	checkBoth(t, s, brokers, p, res)
}
