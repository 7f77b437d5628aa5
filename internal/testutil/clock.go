package testutil

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand: Now returns the time it was
// made with, moved forward by every Advance so far. Many goroutines may
// use it at once.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
