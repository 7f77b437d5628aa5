// Package snapshot keeps a partition's producer-state snapshots, one per
// offset, in a bbolt file, and reads and writes Kafka's own
// <offset>.snapshot files. It knows nothing of segments: the caller says
// which offsets to save, load and delete.
//
// # The bbolt store
//
//	<partition dir>/producer-snapshots.db
//
// One bucket, "producer-snapshots". A key is the snapshot's offset (the
// offset of the first batch the state does not include, Kafka's map end
// offset) as 8 bytes big-endian, so a cursor walks snapshots in offset
// order. A value is one whole producerstate.Snapshot:
//
//	offset  size  field
//	0       2     format version, uint16 big-endian = 2
//	2       4     CRC-32C (Castagnoli) of bytes [6, end), uint32 big-endian
//	6       uv    snapshot offset (equals the key)
//	        uv    producer count n
//	        n ×   producer, in ascending producer id order:
//	              pid   producer id: the first as vi, every later one as
//	                    uv of (id − previous id), at least 1
//	              vi    epoch (fits int16)
//	              vi    coordinator epoch (fits int32)
//	              vi    first offset of the open transaction, -1 = none
//	              vi    last timestamp (a record timestamp)
//	              vi    last seen − last timestamp: the store's clock when
//	                    it last took a batch of the producer, in Unix ms;
//	                    0 (SeenUnknown) when not known
//	              vi    snapshot offset − 1 − last applied: the offset of
//	                    the producer's newest batch or marker, -1 when not
//	                    known
//	              1     window length k, 0..5 (producerstate.WindowSize)
//	              k ×   batch, oldest first (b = this batch, p = the one
//	                    before it; the first batch has no p):
//	                    vi  first seq: the first batch's as is, later ones
//	                        as int32(b.FirstSeq − p.LastSeq − 1)
//	                    vi  int32(b.LastSeq − b.FirstSeq)
//	                    vi  first offset: the first batch's as is, later
//	                        ones as b.FirstOffset − p.LastOffset − 1
//	                    vi  b.LastOffset − b.FirstOffset
//	                    vi  timestamp − (the producer's last timestamp for
//	                        the first batch, p.Timestamp for later ones)
//
// uv is an unsigned LEB128 varint and vi a zigzag varint
// (encoding/binary's Uvarint and Varint). Differences are taken with
// wrapping arithmetic, int32 for sequences and int64 for the rest, and
// added back the same way, so any value round-trips exactly, sequence
// wrap (2147483647 then 0) and negative or extreme values included, while
// ordinary windows (consecutive sequences and offsets, close timestamps)
// cost a byte or two per field. A producer with a full window is about
// 50 bytes instead of the 207 a fixed-width layout takes. The seen time
// is stored as its distance from the last timestamp, a byte or two when
// the client's clock is near the store's, and the last applied offset as
// its distance below the snapshot's offset. The last applied offset is
// stored rather than taken from the window's newest batch because the
// two differ: a marker moves it and not the window, and an epoch change,
// a replayed sequence gap or a batch without a sequence empties the
// window (see producerstate.Entry).
//
// Format version 1, written before seen times were kept, is the same
// without the last seen and last applied fields. It still decodes: its
// producers get LastSeen producerstate.SeenUnknown, which the partition
// replaces with the time of the open (see producerstate's
// ExpireProducers), and as LastApplied the last offset of their newest
// batch, -1 without one. It is never written: the next save writes
// version 2.
//
// These layouts are part of the on-disk format: a change needs a new
// format version.
//
// # Invariants
//
//   - Decoding trusts nothing. It checks the version, then the CRC, then
//     every field; it rejects a varint longer than its minimal encoding,
//     a value out of its field's range, a window longer than 5, producer
//     ids not strictly ascending, an offset that is not the key, and
//     trailing bytes, so the encoding is canonical: a version 2 value
//     that decodes re-encodes to the same bytes (a version 1 value
//     re-encodes as version 2, and decodes back to the same snapshot).
//     Nothing is allocated from a count
//     before the count is checked against the bytes left, so a value
//     never makes the decoder allocate more than a small multiple of its
//     own length.
//   - Errors from decoding are *DecodeError (the key, the byte position)
//     and wrap ErrCorrupt or ErrVersion.
//   - Save writes a snapshot in one bbolt transaction, synced before it
//     returns (bbolt fdatasyncs the file on commit); saving the same
//     offset again replaces it. Save refuses a snapshot it could not read
//     back (ErrInvalidSnapshot): a negative offset, producers out of
//     order, a window longer than 5.
//   - LoadLatest returns the newest snapshot at or below an offset that
//     passes its checks. Like Kafka, it deletes every newer one that does
//     not, reports each in skipped, and tries the next older; when none
//     is left the caller replays the whole log. LoadLatestState does the
//     same and returns the producerstate.State that FromSnapshot would
//     build, decoding into it directly, without the whole Snapshot in
//     memory.
//   - There is one decoder, a sticky-error reader (in the style of
//     tsdb's Decbuf and franz-go's kbin.Reader): it reads a producer's
//     varints, and a batch's, in one pass each, checks them, and on the
//     first failure records what failed and at which byte; the reads
//     after it are not used. So the one pass is both fast and checked,
//     and DecodeValue and LoadLatestState (which decodes a few hundred
//     producers at a time into the State) share every rule; the tests
//     and the fuzz target require them to agree on any bytes.
//   - Open never blocks startup on a bad file. When bbolt cannot use
//     producer-snapshots.db at all (not a bbolt file, both meta pages
//     bad, truncated below its high-water mark, pages or a freelist bbolt
//     panics on, keys that are not snapshot offsets),
//     the file is renamed to producer-snapshots.db.corrupt-<unix nanos>,
//     the directory is synced, OpenReport says so, and a fresh, empty db
//     is created. A file that is merely locked by another process (bbolt
//     fails after Options.Timeout) or that the OS refuses to open is
//     an error and is left alone.
//   - Creating the db file, and setting one aside, is followed by an
//     fsync of the directory (bbolt never syncs the directory).
//   - A failed commit poisons the Store: the page cache may hold writes
//     the disk does not, so every later call returns ErrPoisoned.
//   - A panic inside bbolt on a damaged page is recovered and returned
//     as ErrCorrupt, never passed on to the caller.
//
// # Kafka's <offset>.snapshot files
//
// ReadKafka and AppendKafka read and write Kafka's format byte for byte
// (all big-endian):
//
//	offset  size  field
//	0       2     version int16 = 1
//	2       4     CRC-32C of bytes [6, end of file), uint32
//	6       4     entry count int32
//	10      46·n  entries: ProducerId int64, Epoch int16, LastSequence
//	              int32, LastOffset int64, OffsetDelta int32, Timestamp
//	              int64, CoordinatorEpoch int32, CurrentTxnFirstOffset
//	              int64 (-1 = none)
//
// The file is named by KafkaSnapshotName: the offset in 20 zero-padded
// digits and ".snapshot". Kafka keeps only each producer's newest batch;
// KafkaEntry.Entry and KafkaEntryOf convert as Kafka does. Timestamp is
// the producer's last record timestamp, as Kafka writes it; the file has
// no room for the store's seen time, so KafkaEntryOf drops it and
// KafkaEntry.Entry gives producerstate.SeenUnknown (and LastOffset as
// the last applied offset). A file Kafka
// would refuse gives a *KafkaSnapshotError whose Error() is Kafka's own
// CorruptSnapshotException message, word for word.
package snapshot
