package snapshot

// AppendValueV1 is appendValueV1 for the external tests and benchmarks:
// a value in the layout of format version 1.
var AppendValueV1 = appendValueV1
