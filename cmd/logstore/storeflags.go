package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/producerstate"
)

// storeFlags are the flags of every command that opens a store (append,
// producers, abort, read, perf produce, perf consume, topics) that say how each
// partition's producer state forgets producers: --producer-expiry and
// --max-producers. check takes neither: it opens no store, and its
// replay expects snapshots to have forgotten idle producers.
type storeFlags struct {
	producerExpiry time.Duration
	maxProducers   int
}

// addTo declares the flags on cmd, with their defaults.
func (sf *storeFlags) addTo(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&sf.producerExpiry, "producer-expiry", producerstate.DefaultExpireAfter,
		"forget a producer the store has taken no batch from for this long, judged on the store's clock (record timestamps play no part); 0 never forgets")
	f.IntVar(&sf.maxProducers, "max-producers", 0,
		"remember at most this many producers per partition, forgetting the longest idle first (never one with an open transaction); 0 for no cap (default 0)")
}

// apply checks the flags and sets the producer options of opts.
func (sf *storeFlags) apply(opts *logstore.Options) error {
	if sf.producerExpiry < 0 {
		return fmt.Errorf("--producer-expiry %s: must be 0 (never) or more", sf.producerExpiry)
	}
	if sf.maxProducers < 0 {
		return fmt.Errorf("--max-producers %d: must be 0 (no cap) or more", sf.maxProducers)
	}
	opts.ProducerExpiry = storeDuration(sf.producerExpiry)
	opts.MaxProducers = sf.maxProducers
	return nil
}

// storeDuration turns a duration flag into a logstore.Options field: the
// flag's 0 or less (never forget, try the lock once) is the store's -1,
// since the store reads its zero as "use my default".
func storeDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
