package segment

// MaxTimestamp returns the largest batch max timestamp in the log and
// the last offset of the batch that has it (the earliest such batch), or
// (-1, -1) when no batch has a timestamp. It is what a Kafka ListOffsets
// for MAX_TIMESTAMP (-3) answers.
func (l *Log) MaxTimestamp() (ts, offset int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.check(); err != nil {
		return -1, -1, err
	}
	ts, offset = -1, -1
	for _, s := range l.segs {
		if s.maxTS > ts {
			ts, offset = s.maxTS, s.maxTSOffset
		}
	}
	return ts, offset, nil
}
