// Package recordbatch encodes and decodes Kafka record batches, format v2
// (magic 2), byte for byte as Kafka's DefaultRecordBatch and DefaultRecord
// do. It works on []byte only: no files, no I/O.
//
// # Batch layout
//
// All integers are big-endian. A batch is 12 + batchLength bytes:
//
//	offset size field
//	     0    8 baseOffset            int64, offset of the first record
//	     8    4 batchLength           int32, bytes after this field
//	    12    4 partitionLeaderEpoch  int32   (not covered by the CRC)
//	    16    1 magic                 int8 = 2
//	    17    4 crc                   uint32, CRC-32C of bytes 21..end
//	    21    2 attributes            int16, see below
//	    23    4 lastOffsetDelta       int32, also the last sequence delta
//	    27    8 baseTimestamp         int64 (the delete horizon when bit 6 is set)
//	    35    8 maxTimestamp          int64
//	    43    8 producerId            int64, -1: none
//	    51    2 producerEpoch         int16, -1: none
//	    53    4 baseSequence          int32, -1: none
//	    57    4 recordsCount          int32, never compressed
//	    61    … records               one stream, compressed as a whole
//
//	attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
//	            bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
//	            bit 5 control, bit 6 delete horizon; bits 7-15 unused
//
// Each record, after decompression, is a run of zig-zag varints (at most 5
// bytes for an int32, 10 for an int64) and byte strings:
//
//	length varint | attributes int8 (0) | timestampDelta varlong |
//	offsetDelta varint | keyLength varint (-1: null) | key |
//	valueLength varint (-1: null) | value | headerCount varint |
//	headerCount × (keyLength varint | key | valueLength varint (-1: null) | value)
//
// A control batch (bit 5) holds control records whose key is int16 version
// and int16 type (0 ABORT, 1 COMMIT, ...); an end-transaction marker's
// value is int16 version and int32 coordinator epoch.
//
// # Invariants
//
//   - The CRC covers bytes 21..end, so baseOffset and partitionLeaderEpoch
//     can be restamped in place (Batch.SetBaseOffset,
//     Batch.SetPartitionLeaderEpoch) without touching the CRC.
//   - Sequences are int32 and wrap from 2147483647 to 0; the last sequence
//     of a batch is baseSequence advanced by lastOffsetDelta
//     (IncrementSequence), never by the record count.
//   - Nothing is trusted before it is checked: lengths and counts read from
//     the bytes are compared with what remains before any slice or
//     allocation, and decompression stops at a limit the caller sets.
//   - Every failure on bad bytes is a *CorruptionError carrying the byte
//     offset, wrapping one sentinel (ErrTruncated, ErrCRC, ErrRecord, ...);
//     all of them match ErrCorrupt. Its Reason is the check's name and
//     what it found, without the package prefix and the position, for a
//     caller that says where itself; its Record, the index of the record
//     at fault when the records' validation names one. Nothing here
//     panics on input.
//
// # Use
//
// Parse checks a batch's structure and returns a zero-copy view, Batch,
// whose getters read the header in place. Validate checks the CRC and what
// every reader needs; ValidateClient adds what a producer's batch must
// satisfy. Both read only the header: ValidateRecords decodes every
// record as a reader will (so a batch whose CRC is right but whose
// records are not is never stored), and ValidateClientRecords adds the
// offset deltas 0..n-1 a producer writes. RecordReader iterates the
// records without allocating per record. Builder writes a batch as Kafka's MemoryRecordsBuilder would,
// so the same records give the same bytes.
package recordbatch
