package producerstate

import (
	"math"
	"slices"
	"time"
)

// ExpireProducers forgets every producer that has expired at now and
// returns their ids, sorted. A producer expires when it has no open
// transaction and now is at least Config.ExpireAfter after its LastSeen:
// the store's clock when the store last accepted (or, at startup,
// replayed) a batch or marker of the producer. Record timestamps play no
// part: a client whose clock lags, or that sends no timestamps, is judged
// like any other. With ExpireAfter 0 nothing expires.
//
// A producer whose seen time is not known (SeenUnknown, as loaded from
// an older snapshot) does not expire: it counts as seen at now from
// here on.
//
// A forgotten producer is unknown again: its next batch must start at
// sequence 0. Check already judges an expired producer unknown before
// ExpireProducers removes it; calling ExpireProducers only frees the
// memory (Kafka does it every 10 minutes, and after loading a snapshot).
// It visits every producer.
func (s *State) ExpireProducers(now time.Time) []int64 {
	var gone []int64
	if cut, any := s.expiryCutoff(now); any {
		// Backwards, so that the entry remove moves into place i has
		// been looked at already.
		for i := s.tab.n - 1; i >= 0; i-- {
			if e := s.tab.at(i); e.LastSeen <= cut && e.LastSeen != SeenUnknown && !e.hasOpenTxn() {
				gone = append(gone, e.ProducerID)
				s.tab.remove(i)
			}
		}
		slices.Sort(gone)
	}
	if s.unknownSeen {
		ms := now.UnixMilli()
		for i := range s.tab.n {
			if s.tab.at(i).LastSeen == SeenUnknown {
				s.tab.mut(i).LastSeen = ms
			}
		}
		s.unknownSeen = false
	}
	return gone
}

// expiryCutoff returns the newest LastSeen at which a producer without
// an open transaction has expired at now, and false when none can have
// (expiry off, or now too early for any time). It is exact: s.expired(e,
// now) holds just when e has no open transaction, a known seen time and
// e.LastSeen <= cut, since now.Sub(time.UnixMilli(ts)) only falls
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
// remain or no producer can go. Longest idle is the lowest LastSeen (a
// seen time not known counts as the lowest); among equal seen times the
// lowest LastApplied, then the lowest id. The store's clock does not go
// back, so seen times follow the offsets, and the order is the order of
// LastApplied, which a replay knows too: a replay, which sees every
// producer of the tail at one time, evicts the producers the live state
// evicted. Each eviction scans every producer; it runs only when a
// producer is added beyond the cap.
func (s *State) enforceCap(keep int64) {
	for s.cfg.MaxProducers > 0 && s.tab.n > s.cfg.MaxProducers {
		victim := -1
		var v *entry
		for i := range s.tab.n {
			e := s.tab.at(i)
			if e.ProducerID == keep || e.hasOpenTxn() {
				continue
			}
			if v == nil || idleLonger(e, v) {
				victim, v = i, e
			}
		}
		if v == nil {
			return
		}
		s.tab.remove(victim)
	}
}

// idleLonger reports whether e has been idle longer than v, as
// enforceCap orders them.
func idleLonger(e, v *entry) bool {
	if e.LastSeen != v.LastSeen {
		return e.LastSeen < v.LastSeen
	}
	if e.LastApplied != v.LastApplied {
		return e.LastApplied < v.LastApplied
	}
	return e.ProducerID < v.ProducerID
}
