package segment

// MinIndexMaxBytes is the smallest Config.IndexMaxBytes: room for two
// time-index entries.
const MinIndexMaxBytes = 2 * timeEntrySize
