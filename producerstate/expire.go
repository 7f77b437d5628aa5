package producerstate

import (
	"slices"
	"time"
)

// ExpireProducers forgets every producer that has expired at now and
// returns their ids, sorted. A producer expires when it has no open
// transaction and now is at least Config.ExpireAfter after its
// LastTimestamp, which is the max timestamp of its newest batch or the
// timestamp of its newest marker: a record timestamp (often the client's
// clock), not the time of the append, as in Kafka. With ExpireAfter 0
// nothing expires.
//
// A forgotten producer is unknown again: its next batch must start at
// sequence 0. Check already judges an expired producer unknown before
// ExpireProducers removes it; calling ExpireProducers only frees the
// memory (Kafka does it every 10 minutes, and after loading a snapshot).
// It visits every producer.
func (s *State) ExpireProducers(now time.Time) []int64 {
	if s.cfg.ExpireAfter <= 0 {
		return nil
	}
	var gone []int64
	for id, e := range s.producers {
		if s.expired(e, now) {
			delete(s.producers, id)
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	return gone
}

// enforceCap forgets the longest-idle producers without an open
// transaction, never keep, until no more than Config.MaxProducers
// remain or no producer can go. Each eviction scans every producer; it
// runs only when a producer is added beyond the cap.
func (s *State) enforceCap(keep int64) {
	for s.cfg.MaxProducers > 0 && len(s.producers) > s.cfg.MaxProducers {
		var victim *Entry
		for id, e := range s.producers {
			if id == keep || e.hasOpenTxn() {
				continue
			}
			if victim == nil || e.LastTimestamp < victim.LastTimestamp ||
				(e.LastTimestamp == victim.LastTimestamp && id < victim.ProducerID) {
				victim = e
			}
		}
		if victim == nil {
			return
		}
		delete(s.producers, victim.ProducerID)
	}
}
