package segment

import "fmt"

// Reconfigure replaces the log's rolling and retention settings with c's
// SegmentBytes, SegmentMaxAge, MaxBatchBytes, RetentionBytes and
// RetentionTime (zero takes Kafka's default, as in Open); c's other
// fields are ignored, the log keeps its own. The new values apply from
// the next call that reads them: the next Append checks its batch
// against the new MaxBatchBytes and SegmentBytes and rolls when the
// active segment is past the new SegmentBytes or SegmentMaxAge; the next
// ApplyRetention (or the flush of the next roll) deletes what the new
// retention lets go. Nothing is rolled or deleted by Reconfigure itself.
//
// It takes the log's lock for writing, so it waits for an append in
// progress, and every Append and ApplyRetention sees either the old
// settings or the new ones, never a mix. Values out of range are
// refused as Open refuses them, with nothing changed. A closed or
// poisoned log still takes the settings (they are memory only).
func (l *Log) Reconfigure(c Config) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.cfg
	next.SegmentBytes = c.SegmentBytes
	next.SegmentMaxAge = c.SegmentMaxAge
	next.MaxBatchBytes = c.MaxBatchBytes
	next.RetentionBytes = c.RetentionBytes
	next.RetentionTime = c.RetentionTime
	next, err := next.withDefaults()
	if err != nil {
		return fmt.Errorf("logstore/segment: reconfigure %s: %w", l.dir, err)
	}
	// Field by field: FS, Now and the hooks are read without the lock.
	l.cfg.SegmentBytes, l.cfg.SegmentMaxAge, l.cfg.MaxBatchBytes = next.SegmentBytes, next.SegmentMaxAge, next.MaxBatchBytes
	l.cfg.RetentionBytes, l.cfg.RetentionTime = next.RetentionBytes, next.RetentionTime
	return nil
}
