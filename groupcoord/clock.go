package groupcoord

import "time"

// Clock is the coordinator's time: Now for timestamps, AfterFunc for the
// session, rebalance, join-delay and retention timers. Tests pass a fake
// one that they advance by hand.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer AfterFunc started.
type Timer interface {
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
