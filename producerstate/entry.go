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
// transaction is open. Batches holds at most WindowSize entries, oldest
// first.
type Entry struct {
	ProducerID       int64
	Epoch            int16
	CoordinatorEpoch int32
	TxnFirstOffset   int64
	LastTimestamp    int64
	Batches          []BatchMeta
}

// Snapshot is the whole state of a partition's producers as of Offset:
// the state after every batch below Offset (Kafka's map end offset).
// Producers are sorted by producer id.
type Snapshot struct {
	Offset    int64
	Producers []Entry
}
