package recordbatch

// WalkRecords exposes the fast path of the record validation to the
// fuzz target, which checks it agrees with the reader.
var WalkRecords = walkRecords
