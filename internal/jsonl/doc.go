// Package jsonl is the JSON Lines batch format of `logstore append
// --input` and `logstore read --json`: one JSON object per line, each a
// batch to append or one record. It decodes a line into a Kafka v2 batch
// (ParseLine, then Batch.Build), encodes a record read from the log
// (AppendRecord), and reads input line by line within a memory bound
// (LineReader).
//
// # Format
//
// A batch object:
//
//	{"topic":"events","partition":0,"producerId":31,"producerEpoch":0,
//	 "baseSequence":0,"compression":"none","transactional":false,
//	 "records":[<record object>, ...]}
//
// Only "records" is required, with at least one record. topic, partition
// and compression default to the Defaults; producerId, producerEpoch and
// baseSequence to -1; transactional to false.
//
// A record object:
//
//	{"offset":5,"timestampType":"CreateTime","timestamp":1700000000000,
//	 "key":"k","value":"v","headers":[{"key":"h","value":"x"}]}
//
// Every field may be left out. A missing or null key or value is null,
// as is a null header value; a header needs a key (it may be empty).
// "key" and "value" are UTF-8 text. Binary bytes are given as
// "keyBase64" or "valueBase64" instead (standard base64, with padding),
// for headers too. The timestamp defaults to Defaults.Timestamp.
// "offset" and "timestampType" are what AppendRecord writes: a batch
// gets its offsets from the store and is CreateTime, so they are not
// kept. timestampType must still name a type.
//
// A line that is one record object, with no batch field, is a batch of
// that one record: so each line that `read --json` prints can be
// appended again as it is. Field names match as encoding/json matches
// them (case folded), and an unknown field is refused.
//
// # Invariants
//
//   - A line is taken only when it is valid UTF-8 and escapes no half of
//     a UTF-16 surrogate pair. encoding/json would replace either with
//     U+FFFD, so the stored bytes would differ from what the line spells.
//   - What ParseLine takes, encoding/json reads the same way: same
//     records, same bytes (FuzzParseLine checks it).
//   - AppendRecord's output decodes (as a record line) to the record's
//     key, value and headers, byte for byte.
//   - Errors are the reasons of a refusal, without a package prefix: they
//     say what is wrong with the line.
//
// # Bounds
//
// A line is at most MaxLineBytes; LineReader skips a longer one to its
// end and reports it, holding at most about twice a line. ParseLine
// streams the records of a line into a recordbatch.Builder one at a
// time, so a line of a million records never holds a million Go values.
// A batch is refused as soon as it passes the store's batch limit
// (segment.DefaultMaxBatchBytes) without compression. Compressed, its
// records may take up to recordbatch.DefaultMaxRecordsBytes, what a
// reader inflates. A record is checked against the limit by a lower
// bound of its size before its bytes are copied.
package jsonl
