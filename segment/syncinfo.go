package segment

import "time"

// SyncInfo is one fsync made by group commit's leader (Log.SyncTo,
// Log.Sync), as Config.OnSync receives it. Fsyncs the Log makes on its
// own (a roll's background flush, Open, Close) are not reported.
type SyncInfo struct {
	// Duration is the fdatasync of the active segment's .log, plus,
	// after a roll, the wait for the sealed segment's .log to be synced
	// by its flush: how long the appenders it covered waited for the
	// disk.
	Duration time.Duration
	// Batches and Bytes are what was appended between the previous
	// successful fsync of group commit and the start of this one: the
	// batches (and their bytes) this fsync made durable, batches per
	// group commit. Some of them may have been made durable already by a
	// roll's flush; under SyncNever (no group commit) the first sync
	// counts everything since the log was opened.
	Batches int64
	Bytes   int64
	// Err is the fsync's error; the log is poisoned then.
	Err error
}

// leaderSync is what syncActive reports to SyncTo: synced is false when
// no fsync was made (nothing new, or the log closed or poisoned).
type leaderSync struct {
	SyncInfo
	synced bool
}

// appendCount counts the batches Append wrote and their bytes.
type appendCount struct {
	batches, bytes int64
}

func (c *appendCount) add(n int) {
	c.batches++
	c.bytes += int64(n)
}
