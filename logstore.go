// Package logstore will tie a partition's segments, producer state and
// snapshots together: Store, a directory of partitions, and Partition,
// which appends batches after the producer checks, snapshots producer
// state on every segment roll, and at startup rebuilds it from the newest
// snapshot plus the log tail.
//
// Not implemented yet: today the working part of logstore is the record
// batch codec in package recordbatch.
package logstore
