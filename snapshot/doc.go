// Package snapshot will store producer-state snapshots in bbolt, one per
// offset, each with a format version and a checksum, and read and write
// Kafka's own <offset>.snapshot files.
//
// Not implemented yet: this package is a placeholder in the layout, and
// exports nothing. It knows nothing of segments.
package snapshot
