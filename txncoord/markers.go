package txncoord

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/logstore/logstore"
)

// StoreMarkers returns the Markers of store's partitions.
//
// WriteMarkers: for each partition Store.ExistingPartition, then, where
// the marker is due (Decision.Due, from Partition.OpenTransaction),
// Partition.AppendMarkerWritten; its sync waits for all of them to be
// durable (Partition.SyncTo, one per partition, concurrently), so a
// transaction over n partitions waits for its markers' fsyncs once, not
// n times one after the other. A partition whose directory no longer
// exists (logstore.ErrNoPartition: its topic was deleted) is skipped, as
// Kafka drops the markers of deleted partitions; so is, in the sync, one
// deleted after its marker was written (SyncTo fails with
// logstore.ErrClosed, and its directory is gone or holds a partition
// created since). A marker the partition refuses (an older epoch or
// coordinator epoch) is an error, and so is a failed write or sync; the
// markers already written are still waited for. The check of a
// partition's open transaction and the marker's append are two steps:
// the coordinator holds the producer's batches back meanwhile (its
// produce lock), and nothing else writes the producer's batches.
//
// TxnFirstOffsets and OpenTransactions read Partition.OpenTransactions;
// OpenTransactions opens every partition of the store to do so, 8 at a
// time.
func StoreMarkers(store *logstore.Store) Markers { return storeMarkers{store} }

type storeMarkers struct{ s *logstore.Store }

func (m storeMarkers) WriteMarkers(d Decision) (func() error, error) {
	type written struct {
		tp  TopicPartition
		p   *logstore.Partition
		end int64
	}
	var done []written
	var failed error
	for i, tp := range d.Partitions {
		p, err := m.s.ExistingPartition(tp.Topic, tp.Partition)
		if errors.Is(err, logstore.ErrNoPartition) {
			continue
		}
		if err == nil {
			if !d.Due(i, openFirst(p, d.ProducerID)) {
				continue
			}
			var res logstore.AppendResult
			res, err = p.AppendMarkerWritten(d.ProducerID, d.Epoch, d.Commit, d.CoordinatorEpoch)
			if err == nil {
				done = append(done, written{tp, p, res.LastOffset + 1})
				continue
			}
		}
		failed = fmt.Errorf("%s marker for %s-%d: %w", decisionName(d.Commit), tp.Topic, tp.Partition, err)
		break
	}
	sync := func() error {
		errs := make([]error, len(done))
		sync1 := func(i int) {
			err := done[i].p.SyncTo(done[i].end)
			if errors.Is(err, logstore.ErrClosed) {
				// Closed by DeleteTopic once its marker was written: a
				// deleted partition has no marker left to make durable,
				// and one created again since never held it.
				now, lerr := m.s.ExistingPartition(done[i].tp.Topic, done[i].tp.Partition)
				if errors.Is(lerr, logstore.ErrNoPartition) || (lerr == nil && now != done[i].p) {
					err = nil
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s marker for %s-%d: %w", decisionName(d.Commit), done[i].tp.Topic, done[i].tp.Partition, err)
			}
		}
		if len(done) == 1 {
			sync1(0)
		} else {
			var wg sync.WaitGroup
			for i := range done {
				wg.Go(func() { sync1(i) })
			}
			wg.Wait()
		}
		return errors.Join(errs...)
	}
	if failed != nil {
		return nil, errors.Join(failed, sync())
	}
	return sync, nil
}

// openFirst is the first offset of producerID's open transaction in p,
// -1 when none is open.
func openFirst(p *logstore.Partition, producerID int64) int64 {
	if first, ok := p.OpenTransaction(producerID); ok {
		return first
	}
	return -1
}

func (m storeMarkers) TxnFirstOffsets(tps []TopicPartition, producerID int64) ([]int64, error) {
	firsts := make([]int64, len(tps))
	for i, tp := range tps {
		firsts[i] = -1
		p, err := m.s.ExistingPartition(tp.Topic, tp.Partition)
		if errors.Is(err, logstore.ErrNoPartition) {
			continue
		}
		if err != nil {
			return nil, err
		}
		firsts[i] = openFirst(p, producerID)
	}
	return firsts, nil
}

// scanOpenTimeout bounds how long OpenTransactions waits for a
// partition it cannot open while the store's bound of open partitions
// is all in use.
const scanOpenTimeout = time.Minute

// openWorkers bounds the partitions OpenTransactions opens at once:
// opening one is mostly waiting for its files (and its fsyncs), which
// overlap.
const openWorkers = 8

// OpenTransactions opens only the partitions that may hold an open
// transaction (logstore.Store.MayHoldOpenTransactions: those marked by
// a transactional batch, all of them in a store not yet scanned so),
// marks each one found holding one, and, the scan done, records that the
// marks can be trusted (Store.SetTransactionsTracked).
func (m storeMarkers) OpenTransactions() ([]OpenTransaction, error) {
	all, err := m.s.Partitions()
	if err != nil {
		return nil, err
	}
	// The workers look at each partition's directory (a few stats: a
	// store of thousands after a crash has all of them looked at) and
	// open those that may hold an open transaction.
	ids := all
	found := make([][]OpenTransaction, len(ids))
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(openWorkers, len(ids)) {
		wg.Go(func() {
			for i := range next {
				if m.s.MayHoldOpenTransactions(ids[i]) {
					found[i], errs[i] = m.partitionOpenTransactions(ids[i])
				}
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := m.s.SetTransactionsTracked(); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// partitionOpenTransactions opens partition id and lists its open
// transactions; none for a partition whose directory is gone.
func (m storeMarkers) partitionOpenTransactions(id logstore.PartitionID) ([]OpenTransaction, error) {
	p, err := m.s.ExistingPartition(id.Topic, id.Partition)
	// Every open partition in use (the other workers' opens among
	// them): the scan waits for one to go idle.
	for wait, deadline := time.Millisecond, time.Now().Add(scanOpenTimeout); errors.Is(err, logstore.ErrTooManyOpenPartitions) && time.Now().Before(deadline); wait = min(2*wait, 100*time.Millisecond) {
		time.Sleep(wait)
		p, err = m.s.ExistingPartition(id.Topic, id.Partition)
	}
	if errors.Is(err, logstore.ErrNoPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A glance at each partition of the store: the first to close when
	// the store bounds its open partitions.
	defer m.s.LetIdle(p)
	var out []OpenTransaction
	tp := TopicPartition{Topic: id.Topic, Partition: id.Partition}
	for pid, first := range p.OpenTransactions() {
		out = append(out, OpenTransaction{TP: tp, ProducerID: pid, FirstOffset: first})
	}
	if len(out) > 0 {
		// Written before the marks existed, perhaps: marked now, so
		// that the next scan opens it.
		if err := p.MarkTransactional(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
