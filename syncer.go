package logstore

import (
	"sync"
	"time"
)

// syncerWorkers bounds the partitions the interval syncer syncs at
// once: enough to overlap the fsyncs of many partitions, few enough not
// to crowd the appends out.
const syncerWorkers = 4

// intervalSyncer is SyncInterval's background syncer: one goroutine for
// the whole store, not one per partition. Every interval it syncs each
// open partition that has appended since its last sync (its log's
// fsynced end below its end), up to syncerWorkers at a time, through
// Partition.SyncTo, which takes the partition's read lock: a partition
// closing waits for its sync in flight, and a closed one is skipped. A
// failed sync poisons its partition (every later append says so), which
// is then skipped as well.
type intervalSyncer struct {
	store *Store
	every time.Duration
	stop  chan struct{}
	done  chan struct{}
}

func startIntervalSyncer(s *Store, every time.Duration) *intervalSyncer {
	y := &intervalSyncer{store: s, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go y.run()
	return y
}

func (y *intervalSyncer) run() {
	defer close(y.done)
	t := time.NewTicker(y.every)
	defer t.Stop()
	for {
		select {
		case <-y.stop:
			return
		case <-t.C:
		}
		y.syncDirty()
	}
}

// syncDirty syncs, a few at a time, the open partitions with appends
// not yet fsynced.
func (y *intervalSyncer) syncDirty() {
	var dirty []*Partition
	y.store.mu.Lock()
	for _, e := range y.store.parts {
		select {
		case <-e.ready:
		default:
			continue // being opened
		}
		if p := e.p; p != nil && p.mode.kind == syncInterval && p.log.Err() == nil && p.log.DurableEnd() < p.log.EndOffset() {
			dirty = append(dirty, p)
		}
	}
	y.store.mu.Unlock()
	work := make(chan *Partition)
	var wg sync.WaitGroup
	for range min(syncerWorkers, len(dirty)) {
		wg.Go(func() {
			for p := range work {
				// A closed partition answers ErrClosed, a failed sync
				// has poisoned the log: both are skipped from now on.
				_ = p.SyncTo(p.log.EndOffset())
			}
		})
	}
	for _, p := range dirty {
		select {
		case work <- p:
		case <-y.stop:
		}
	}
	close(work)
	wg.Wait()
}

// close stops the syncer and waits for a round in progress.
func (y *intervalSyncer) close() {
	close(y.stop)
	<-y.done
}
