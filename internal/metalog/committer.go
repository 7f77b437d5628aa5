package metalog

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// Item is one unit of a Committer's queue.
type Item struct {
	// Puts are committed together, in one commit.
	Puts []Put
	// Prepare, when set, gives the item's puts instead: it is called in
	// the committer's goroutine once every item queued before it is
	// committed and its Done called (a scan whose view must include
	// them). The item is committed alone.
	Prepare func() []Put
	// Lazy: the item costs no commit of its own. It is held until an
	// item that is not lazy comes (it is committed with it, before it),
	// or the Committer's delay passes, or Close. A newer put of the
	// same key, lazy or not, replaces a held one, which is then never
	// written.
	Lazy bool
	// Done, when set, is called in the committer's goroutine with the
	// commit's result, once it is durable (or failed).
	Done func(error)
}

// CommitterConfig configures a Committer.
type CommitterConfig struct {
	// Name opens the errors ("txncoord": "txncoord: commit to PATH: ...").
	Name string
	// Delay bounds how long lazy items are held.
	Delay time.Duration
	// OnCommit, when set, is called after every commit with the number
	// of items it carried and its result.
	OnCommit func(items int, err error)
	// OnCompact, when set, is called after each compaction that follows
	// a commit, with its result. A failed compaction leaves the old
	// file, which is kept.
	OnCompact func(err error)
	// OnLazyError, when set, is called with the error of a commit that
	// carried items without Done (no caller learns of it otherwise).
	OnLazyError func(err error)
}

// Committer writes items to a Log in queue order, many per commit (one
// append, one fdatasync): a goroutine takes every item queued while the
// previous commit ran and commits them together, so concurrent writers
// share fsyncs without waiting for a timer. Its queue is unbounded, so
// Push never blocks: a user may queue while holding a lock its Done
// callbacks take.
type Committer struct {
	log     *Log
	cfg     CommitterConfig
	mu      sync.Mutex
	items   []*Item
	closing bool
	wake    chan struct{}
	done    chan struct{}
}

// NewCommitter starts the committer of l.
func NewCommitter(l *Log, cfg CommitterConfig) *Committer {
	c := &Committer{log: l, cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// Log is the committer's file.
func (c *Committer) Log() *Log { return c.log }

// Push queues it; it never blocks. No item may be pushed after Close.
func (c *Committer) Push(it *Item) {
	c.mu.Lock()
	c.items = append(c.items, it)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Write queues puts as one item and waits until they are committed.
func (c *Committer) Write(puts ...Put) error {
	done := make(chan error, 1)
	c.Push(&Item{Puts: puts, Done: func(err error) { done <- err }})
	return <-done
}

func (c *Committer) run() {
	defer close(c.done)
	var (
		held   []*Item // lazy items waiting for a commit, oldest first
		timer  *time.Timer
		timerC <-chan time.Time
	)
	for {
		c.mu.Lock()
		batch, closing := c.items, c.closing
		c.items = nil
		c.mu.Unlock()
		due := false
		if len(batch) == 0 && !closing {
			select {
			case <-c.wake:
				continue
			case <-timerC:
				timerC, due = nil, true
			}
		}
		// A put replaces the held put of its key.
		for _, it := range batch {
			for _, p := range it.Puts {
				held = dropKey(held, p.Key)
			}
		}
		waited := slices.ContainsFunc(batch, func(it *Item) bool { return !it.Lazy })
		if !waited && !due && !closing {
			// Only lazy items: hold them for the next commit.
			held = append(held, batch...)
			if timerC == nil && len(held) > 0 {
				if timer == nil {
					timer = time.NewTimer(c.cfg.Delay)
				} else {
					timer.Reset(c.cfg.Delay)
				}
				timerC = timer.C
			}
			continue
		}
		batch = append(held, batch...)
		held = nil
		if timerC != nil {
			timer.Stop()
			timerC = nil
		}
		// Items with Prepare split the batch: they run after what is
		// before them is committed.
		start := 0
		for i, it := range batch {
			if it.Prepare == nil {
				continue
			}
			c.commit(batch[start:i])
			it.Puts = it.Prepare()
			c.commit(batch[i : i+1])
			start = i + 1
		}
		c.commit(batch[start:])
		if closing {
			c.mu.Lock()
			left := len(c.items)
			c.mu.Unlock()
			if left == 0 {
				break
			}
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// dropKey removes the puts of key from the held items, and the items
// left with no put and no Done.
func dropKey(held []*Item, key string) []*Item {
	for _, h := range held {
		if slices.ContainsFunc(h.Puts, func(p Put) bool { return p.Key == key }) {
			h.Puts = slices.DeleteFunc(slices.Clone(h.Puts), func(p Put) bool { return p.Key == key })
		}
	}
	return slices.DeleteFunc(held, func(h *Item) bool { return len(h.Puts) == 0 && h.Done == nil })
}

// commit writes items in one commit (Log.Commit) and reports its
// result; then compacts the file if it has grown past its bound.
func (c *Committer) commit(items []*Item) {
	if len(items) == 0 {
		return
	}
	var puts []Put
	for _, it := range items {
		puts = append(puts, it.Puts...)
	}
	var err error
	if len(puts) > 0 {
		if err = c.log.Commit(puts); err != nil {
			err = fmt.Errorf("%s: commit to %s: %w", c.cfg.Name, c.log.path, err)
		}
	}
	if c.cfg.OnCommit != nil {
		c.cfg.OnCommit(len(items), err)
	}
	if err == nil && len(puts) > 0 && c.log.CompactDue() {
		// The commit is durable in the old file: a failed compaction
		// leaves that file, which is kept.
		cerr := c.log.Compact()
		if cerr != nil {
			cerr = fmt.Errorf("%s: compact %s: %w", c.cfg.Name, c.log.path, cerr)
		}
		if c.cfg.OnCompact != nil {
			c.cfg.OnCompact(cerr)
		}
	}
	lazyFailed := false
	for _, it := range items {
		if it.Done != nil {
			it.Done(err)
		} else if err != nil {
			lazyFailed = true
		}
	}
	if lazyFailed && c.cfg.OnLazyError != nil {
		c.cfg.OnLazyError(err)
	}
}

// Close commits what is queued and held and stops the committer. It
// does not close the Log.
func (c *Committer) Close() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
}
