package kafkaserver

import "log/slog"

const levelDebug = slog.LevelDebug

// Kafka error codes the server answers (Kafka's protocol "Error Codes").
const (
	errNone                    int16 = 0
	errOffsetOutOfRange        int16 = 1
	errCorruptMessage          int16 = 2
	errUnknownTopicOrPartition int16 = 3
	errNotLeaderOrFollower     int16 = 6
	errMessageTooLarge         int16 = 10
	errCoordinatorNotAvailable int16 = 15
	errInvalidTopic            int16 = 17
	errInvalidRequiredAcks     int16 = 21
	errInvalidTimestamp        int16 = 32
	errUnsupportedVersion      int16 = 35
	errTopicAlreadyExists      int16 = 36
	errInvalidPartitions       int16 = 37
	errInvalidReplicationFact  int16 = 38
	errInvalidReplicaAssign    int16 = 39
	errInvalidConfig           int16 = 40
	errInvalidRequest          int16 = 42
	errOutOfOrderSequence      int16 = 45
	errInvalidProducerEpoch    int16 = 47
	errInvalidTxnState         int16 = 48
	errInvalidProducerIDMap    int16 = 49
	errInvalidTxnTimeout       int16 = 50
	errConcurrentTransactions  int16 = 51
	errOperationNotAttempted   int16 = 55
	errKafkaStorageError       int16 = 56
	errUnknownProducerID       int16 = 59
	errFetchSessionIDNotFound  int16 = 70
	errUnsupportedCompression  int16 = 76 // UNSUPPORTED_COMPRESSION_TYPE
	errInvalidRecord           int16 = 87
	errProducerFenced          int16 = 90
	errUnknownTopicID          int16 = 100
)
