// Package segment will own one partition's segment files in Kafka's
// formats: <base offset>.log (record batches, concatenated), .index
// (sparse offset index) and .timeindex (time index), with append, read,
// roll, and recovery of a torn tail, every file operation going through a
// small filesystem interface so tests can inject faults.
//
// Not implemented yet: this package is a placeholder in the layout, and
// exports nothing. It knows nothing of producer state or snapshots.
package segment
