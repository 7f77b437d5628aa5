package txncoord

import (
	"errors"
	"fmt"
	"sync"

	"github.com/logstore/logstore"
)

// StoreMarkers returns the Markers that write to store's partitions:
// for each partition Store.ExistingPartition, then
// Partition.AppendMarkerWritten; once every marker is written, it waits
// for all of them to be durable (Partition.SyncTo, one per partition,
// concurrently), so a transaction over n partitions waits for its
// markers' fsyncs once, not n times one after the other. A partition
// whose directory no longer exists (logstore.ErrNoPartition: its topic
// was deleted) is skipped, as Kafka drops the markers of deleted
// partitions. A marker the partition refuses (an older epoch or
// coordinator epoch) is an error, and so is a failed write or sync; the
// markers already written are still waited for.
func StoreMarkers(store *logstore.Store) Markers { return storeMarkers{store} }

type storeMarkers struct{ s *logstore.Store }

func (m storeMarkers) WriteMarkers(tps []TopicPartition, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	type written struct {
		tp  TopicPartition
		p   *logstore.Partition
		end int64
	}
	var (
		done   []written
		errs   []error
		failed error
	)
	for _, tp := range tps {
		p, err := m.s.ExistingPartition(tp.Topic, tp.Partition)
		if errors.Is(err, logstore.ErrNoPartition) {
			continue
		}
		if err == nil {
			var res logstore.AppendResult
			res, err = p.AppendMarkerWritten(producerID, epoch, commit, coordinatorEpoch)
			if err == nil {
				done = append(done, written{tp, p, res.LastOffset + 1})
				continue
			}
		}
		failed = fmt.Errorf("%s marker for %s-%d: %w", decisionName(commit), tp.Topic, tp.Partition, err)
		break
	}
	errs = make([]error, len(done))
	sync1 := func(i int) {
		if err := done[i].p.SyncTo(done[i].end); err != nil {
			errs[i] = fmt.Errorf("%s marker for %s-%d: %w", decisionName(commit), done[i].tp.Topic, done[i].tp.Partition, err)
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
	return errors.Join(append([]error{failed}, errs...)...)
}
