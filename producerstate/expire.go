package producerstate

import (
	"math"
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
	cut, any := s.expiryCutoff(now)
	if !any {
		return nil
	}
	var gone []int64
	// Backwards, so that the entry remove moves into place i has been
	// looked at already.
	for i := s.tab.n - 1; i >= 0; i-- {
		if e := s.tab.at(i); e.LastTimestamp <= cut && !e.hasOpenTxn() {
			gone = append(gone, e.ProducerID)
			s.tab.remove(i)
		}
	}
	slices.Sort(gone)
	return gone
}

// expiryCutoff returns the newest LastTimestamp at which a producer
// without an open transaction has expired at now, and false when none
// can have (expiry off, or now too early for any timestamp). It is exact:
// s.expired(e, now) holds just when e has no open transaction and
// e.LastTimestamp <= cut, since now.Sub(time.UnixMilli(ts)) only falls
// as ts grows; so it is found by bisection over every int64 with
// expired's own test, once, instead of that test per producer.
func (s *State) expiryCutoff(now time.Time) (cut int64, any bool) {
	if s.cfg.ExpireAfter <= 0 {
		return 0, false
	}
	expiredAt := func(ts int64) bool { return now.Sub(time.UnixMilli(ts)) >= s.cfg.ExpireAfter }
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !expiredAt(lo) {
		return 0, false
	}
	if expiredAt(hi) {
		return hi, true
	}
	// expiredAt(lo) and not expiredAt(hi).
	for uint64(hi)-uint64(lo) > 1 {
		mid := lo + int64((uint64(hi)-uint64(lo))/2)
		if expiredAt(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true
}

// enforceCap forgets the longest-idle producers without an open
// transaction, never keep, until no more than Config.MaxProducers
// remain or no producer can go. Each eviction scans every producer; it
// runs only when a producer is added beyond the cap.
func (s *State) enforceCap(keep int64) {
	for s.cfg.MaxProducers > 0 && s.tab.n > s.cfg.MaxProducers {
		victim := -1
		var v *entry
		for i := range s.tab.n {
			e := s.tab.at(i)
			if e.ProducerID == keep || e.hasOpenTxn() {
				continue
			}
			if v == nil || e.LastTimestamp < v.LastTimestamp ||
				(e.LastTimestamp == v.LastTimestamp && e.ProducerID < v.ProducerID) {
				victim, v = i, e
			}
		}
		if v == nil {
			return
		}
		s.tab.remove(victim)
	}
}
