package logstore

import (
	"context"
	"sync"
)

// durableSignal wakes the readers waiting for a partition's DurableEnd
// to move, at each possible advance, in two ways. A channel, made on
// demand and closed (then forgotten), so a waiter costs a channel receive
// and no goroutine (DurableChanged). And a list of the DurableWatchers
// registered with the partition, each told which of its partitions moved
// (a wait over many partitions, which would otherwise select over as
// many channels and take them all again after each wake).
type durableSignal struct {
	mu sync.Mutex
	ch chan struct{}
	// watches is the first of the registrations of watchers with this
	// partition, a doubly linked list through durableWatch.prev and
	// next, so a registration is added and removed in O(1).
	watches *durableWatch
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

// notify wakes every waiter: it closes the channel and marks each
// registered watcher's registration moved. It never blocks on a watcher
// (each mark is a short lock and a send that does not wait).
func (s *durableSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	for d := s.watches; d != nil; d = d.next {
		d.w.mark(d)
	}
}

// add links d in; d is not linked.
func (s *durableSignal) add(d *durableWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d.prev, d.next = nil, s.watches
	if s.watches != nil {
		s.watches.prev = d
	}
	s.watches = d
}

// remove unlinks d, which is linked to s.
func (s *durableSignal) remove(d *durableWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		s.watches = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	}
	d.prev, d.next = nil, nil
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

// DurableWatcher waits for the DurableEnd of any of several partitions
// to move, as DurableChanged does for one, and says which moved: a
// Kafka delayed fetch's watch of its partitions. Each partition it
// watches has a key, from 0 to the size given to NewDurableWatcher;
// registering a key (Watch) and stopping it are O(1), and a partition's
// advance marks the keys watching it, without waiting for the watcher.
// Moved then returns the keys marked since it last ran, each once, and
// Ready has a value whenever some are marked.
//
// A key is marked at each advance that would close DurableChanged (an
// append, a SyncTo, a transaction marker), and when its partition is
// closed, or is closed already when it is registered. An advance before
// the registration marks nothing: register the keys before reading the
// partitions, or check the partitions again after registering. The
// watcher starts no goroutine. Stop it when done: until
// then each partition holds its registration. Watch, Unwatch and Stop
// are the waiter's, called from one goroutine at a time; Ready and Moved
// may be called from any, as partitions mark keys from theirs.
type DurableWatcher struct {
	ready chan struct{}
	// watches are the registrations, by key.
	watches []durableWatch

	// mu guards moved and each registration's marked.
	mu    sync.Mutex
	moved []int
}

// durableWatch is a key's registration with a partition.
type durableWatch struct {
	w   *DurableWatcher
	key int
	// part is the partition watched, nil when none. Only Watch and
	// Unwatch set it.
	part *Partition
	// prev and next link the registration into part's durableSignal,
	// under that signal's mu.
	prev, next *durableWatch
	// marked says that key is in w.moved (under w.mu).
	marked bool
}

// NewDurableWatcher returns a watcher of keys 0 to n-1, none registered.
func NewDurableWatcher(n int) *DurableWatcher {
	w := &DurableWatcher{ready: make(chan struct{}, 1), watches: make([]durableWatch, n)}
	for i := range w.watches {
		w.watches[i].w, w.watches[i].key = w, i
	}
	return w
}

// Watch registers key with p, in place of the partition key watched
// before, if any. A closed p marks key at once.
func (w *DurableWatcher) Watch(key int, p *Partition) {
	d := &w.watches[key]
	if d.part == p {
		return
	}
	w.Unwatch(key)
	d.part = p
	p.durableSig.add(d)
	// After the registration: a Close that set closed before it is seen
	// here, one after it marks the key itself.
	if p.isClosed() {
		w.mark(d)
	}
}

// Unwatch removes key's registration, if any. A mark it got before
// stays for Moved to return.
func (w *DurableWatcher) Unwatch(key int) {
	d := &w.watches[key]
	if d.part == nil {
		return
	}
	d.part.durableSig.remove(d)
	d.part = nil
}

// Stop removes every registration.
func (w *DurableWatcher) Stop() {
	for key := range w.watches {
		w.Unwatch(key)
	}
}

// Ready has a value when a key may have been marked since Moved last ran.
// A value may come with nothing marked: Moved then returns none.
func (w *DurableWatcher) Ready() <-chan struct{} { return w.ready }

// Moved appends to dst the keys marked since it last ran, in the order
// of their first mark, each once, and clears them.
func (w *DurableWatcher) Moved(dst []int) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, key := range w.moved {
		w.watches[key].marked = false
	}
	dst = append(dst, w.moved...)
	w.moved = w.moved[:0]
	return dst
}

// mark marks d's key and makes Ready ready, without waiting.
func (w *DurableWatcher) mark(d *durableWatch) {
	w.mu.Lock()
	if !d.marked {
		d.marked = true
		w.moved = append(w.moved, d.key)
	}
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}
