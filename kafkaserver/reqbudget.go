package kafkaserver

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// The server holds its request memory to a budget shared by every
// connection, as Kafka's queued.max.request.bytes does: a frame is
// charged before its buffer is allocated (its size field is all that is
// known then) and the charge is given back once its response is
// written, so a reader that finds the budget spent waits, its client
// held back by TCP, rather than the server allocating on.
//
// A request is charged at once, before its buffer is allocated, for
// the most a request of its key and size may cost, not only its
// frame's bytes: a Produce 1+produceDecodeFactor times its frame (plus
// produceDecodeSlack, or less for a frame too small to hold that many
// topics and partitions), any other request otherDecodeFactor times (kmsg
// allocates arrays by their counts, a couple of bytes each;
// maxOtherRequestBytes keeps those frames small). Once
// checkProduceShape has counted a Produce's topics and partitions
// (refusing a frame whose count is out of proportion to its size), it
// keeps only its frame and produceElementBytes for each of them. One
// charge a request, never a second while holding the first: readers
// waiting on each other's charges could otherwise each hold a part and
// wait for the rest for ever. The server's request memory is so
// bounded by the budget, whatever the clients send.
const (
	// DefaultQueuedMaxRequestBytes is Config.QueuedMaxRequestBytes
	// when it is 0.
	DefaultQueuedMaxRequestBytes = 512 << 20
	// otherDecodeFactor is what a request other than Produce is charged
	// per byte of its frame.
	otherDecodeFactor = 64
)

// requestCharge is what a request of key with a frame of n bytes is
// charged while it is read. Before a SASL listener's connection has
// authenticated, the only requests it may send (ApiVersions and the
// SASL ones, or a raw token) have no arrays to speak of, and any other
// closes it before it is decoded: its frame is charged twice its size.
func (c *conn) requestCharge(key int16, n int64) int64 {
	if c.sasl.required && !c.sasl.done {
		return 2 * n
	}
	if key == produceKey {
		// What checkProduceShape lets through, and no more than a
		// frame of that size can hold: a topic or partition is 3 bytes
		// at the least, so a small frame is not charged the slack.
		return n + min(n*produceDecodeFactor+produceDecodeSlack, n/minProduceElement*int64(produceElementBytes))
	}
	return n * otherDecodeFactor
}

// minProduceElement is the fewest bytes a Produce topic or partition is
// encoded in (a flexible topic of an empty name, no partitions and no
// tags).
const minProduceElement = 3

// requestBudget is the server's budget of request bytes in flight.
type requestBudget struct {
	sem  *semaphore.Weighted
	size int64
}

func newRequestBudget(size int64) *requestBudget {
	return &requestBudget{sem: semaphore.NewWeighted(size), size: size}
}

// clamp is what a charge of n takes: all of the budget at most, so
// that one request larger than the budget is served alone rather than
// never.
func (b *requestBudget) clamp(n int64) int64 { return min(n, b.size) }

// charge takes n (clamped) from the budget for the request being read,
// into c.held (which holds nothing before), waiting while the budget is
// spent, until c's reader stops; false then, with nothing taken.
func (c *conn) charge(n int64) bool {
	b := c.s.budget
	n = b.clamp(n)
	if n == 0 || b.sem.TryAcquire(n) {
		c.held += n
		return true
	}
	c.s.cfg.Metrics.RequestBudgetWait()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	if b.sem.Acquire(ctx, n) != nil {
		return false
	}
	c.held += n
	return true
}

// keep gives back what the request being read holds beyond n.
func (c *conn) keep(n int64) {
	if c.held > n {
		c.release(c.held - n)
		c.held = n
	}
}

// release gives back what charge took.
func (c *conn) release(n int64) {
	if n > 0 {
		c.s.budget.sem.Release(n)
	}
}
