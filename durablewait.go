package logstore

import (
	"context"
	"sync"
)

// durableSignal wakes the readers waiting for a partition's DurableEnd
// to move: a channel, made on demand and closed (then forgotten) at each
// possible advance, so a waiter costs a channel receive and no goroutine.
type durableSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns the channel the next notify closes.
func (s *durableSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// notify wakes every waiter.
func (s *durableSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// DurableChanged returns a channel that is closed the next time the
// partition's DurableEnd may have moved (an append under SyncInterval or
// SyncNever, a SyncTo or Append under SyncAlways) or the partition is
// closed. Take the channel before reading DurableEnd, so an advance
// between the two is not missed:
//
//	ch := p.DurableChanged()
//	if p.DurableEnd() > offset { ... }
//	select { case <-ch: ...; case <-ctx.Done(): ... }
//
// An advance made by a rolled segment's background flush alone does not
// close it (that data is made durable by the next sync anyway, and every
// acknowledged append under SyncAlways passes through SyncTo).
func (p *Partition) DurableChanged() <-chan struct{} { return p.durableSig.wait() }

// WaitDurable returns DurableEnd once it is above offset, or when ctx
// ends (with ctx's error and the DurableEnd of then), or when the
// partition is closed (ErrClosed). It starts no goroutine.
func (p *Partition) WaitDurable(ctx context.Context, offset int64) (int64, error) {
	for {
		ch := p.DurableChanged()
		if d := p.DurableEnd(); d > offset {
			return d, nil
		}
		if p.isClosed() {
			return p.DurableEnd(), p.wrap("wait", ErrClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p.DurableEnd(), ctx.Err()
		}
	}
}

func (p *Partition) isClosed() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.closed
}
