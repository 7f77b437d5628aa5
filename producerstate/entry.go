package producerstate

// WindowSize is how many of a producer's newest accepted batches are
// remembered for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN).
const WindowSize = 5

// BatchMeta is one accepted batch as the window remembers it.
type BatchMeta struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64 // the batch's max timestamp
}

// Entry is one producer's state. TxnFirstOffset is -1 when no
// transaction is open. LastTimestamp is a record timestamp (the max
// timestamp of the newest batch, or the newest marker's timestamp):
// the client's data, kept as Kafka keeps it. LastSeen is the store's
// clock, in Unix milliseconds, when the store last accepted a batch or
// marker of the producer (or replayed one at startup): expiry and the
// cap judge idleness on it; 0 means not known (SeenUnknown).
// LastApplied is the offset of the last record of the producer's newest
// batch or marker, -1 when not known: the order in which the store took
// producers, which the cap uses among equal seen times. It cannot be
// derived from Batches: a transaction marker moves it without entering
// the window, and an epoch change, a replayed sequence gap or a batch
// without a sequence empties the window while the producer stays; so it
// is kept, and stored in snapshots. Batches holds at most WindowSize entries, oldest first.
type Entry struct {
	ProducerID       int64
	Epoch            int16
	CoordinatorEpoch int32
	TxnFirstOffset   int64
	LastTimestamp    int64
	LastSeen         int64
	LastApplied      int64
	Batches          []BatchMeta
}

// SeenUnknown is the LastSeen of a producer whose seen time is not
// known: one loaded from a snapshot written before seen times were kept,
// or from Kafka's own snapshot file. Check never judges such a producer
// expired, and ExpireProducers counts it as seen at the time it is given
// (so it is remembered for a full Config.ExpireAfter from there).
const SeenUnknown int64 = 0

// Snapshot is the whole state of a partition's producers as of Offset:
// the state after every batch below Offset (Kafka's map end offset).
// Producers are sorted by producer id.
type Snapshot struct {
	Offset    int64
	Producers []Entry
}
