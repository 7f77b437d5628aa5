package txncoord

import (
	"errors"

	"github.com/logstore/logstore"
)

// StoreMarkers returns the Markers that write to store's partitions:
// Store.ExistingPartition, then Partition.AppendMarker, which returns
// once the marker is durable. A partition whose directory no longer
// exists (logstore.ErrNoPartition: its topic was deleted) is skipped, as
// Kafka drops the markers of deleted partitions. A marker the partition
// refuses (an older epoch or coordinator epoch) is an error.
func StoreMarkers(store *logstore.Store) Markers { return storeMarkers{store} }

type storeMarkers struct{ s *logstore.Store }

func (m storeMarkers) WriteMarker(tp TopicPartition, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	p, err := m.s.ExistingPartition(tp.Topic, tp.Partition)
	if errors.Is(err, logstore.ErrNoPartition) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = p.AppendMarker(producerID, epoch, commit, coordinatorEpoch)
	return err
}
