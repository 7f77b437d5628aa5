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
	"github.com/logstore/logstore/metrics"
)

// TestE2EClean: scenario 1, straight to the server (no proxy; Metadata
// advertises the listener's own address).
func TestE2EClean(t *testing.T) {
	t.Parallel()
	s := newInProcess(t, logstore.Options{}, kafkaserver.Config{})
	brokers := []string{s.addr}
	res := produce(t, brokers, &kafkatest.Workload{Topic: "clean"})
	if dup, ok := s.outcome(metrics.OutcomeDuplicate), s.outcome(metrics.OutcomeOK); dup != 0 || ok == 0 {
		t.Fatalf("a clean run: %v batches ok, %v duplicates", ok, dup)
	}
	checkBoth(t, s, brokers, nil, res)
}

// TestE2EDropAnswerAndClose: scenario 2. Every 7th Produce answer is read
// from the server (so the batch is durable and acknowledged) and
// swallowed, and the connection closed; kgo retries on a new connection,
// and the server must answer the retry as a duplicate with the first
// copy's offsets.
//
// The server's duplicates metric must be above 0, and at least what the
// proxy saw: answers with error 0 whose base offset the server had
// already given for that partition (the first answer of a batch appended
// on a connection the proxy closed is never read, so the proxy's count
// can be lower).
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
	dup := s.outcome(metrics.OutcomeDuplicate)
	t.Logf("server: %v duplicates", dup)
	if c.ProduceRepeats == 0 || dup == 0 {
		t.Fatalf("%d Produce answers dropped after the append; %d retries answered with a repeated offset, %v duplicates counted", c.ProduceDropped, c.ProduceRepeats, dup)
	}
	if dup < float64(c.ProduceRepeats) {
		t.Fatalf("the server counted %v duplicates, the proxy saw %d answers repeat an offset", dup, c.ProduceRepeats)
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
	if dup := s.outcome(metrics.OutcomeDuplicate); c.ProduceRepeats == 0 || dup < float64(c.ProduceRepeats) {
		t.Fatalf("retries of silently dropped answers: %d answered with a repeated offset, %v duplicates counted", c.ProduceRepeats, dup)
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
