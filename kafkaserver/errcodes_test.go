package kafkaserver

import "github.com/twmb/franz-go/pkg/kerr"

// The short names the tests give the error codes they expect, each
// kerr's code: the server itself writes kerr.X.Code. The names are the
// ones the server used before it took kerr's, so tests written against
// them still read the same (those no test uses are left out: a new test
// writes kerr.X.Code). errNone, errUnknownTopicOrPartition and
// errOffsetOutOfRange are the server's (handlers.go).
var (
	errCorruptMessage          = kerr.CorruptMessage.Code
	errNotLeaderOrFollower     = kerr.NotLeaderForPartition.Code
	errMessageTooLarge         = kerr.MessageTooLarge.Code
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	errInvalidTopic            = kerr.InvalidTopicException.Code
	errInvalidRequiredAcks     = kerr.InvalidRequiredAcks.Code
	errUnsupportedVersion      = kerr.UnsupportedVersion.Code
	errTopicAlreadyExists      = kerr.TopicAlreadyExists.Code
	errInvalidPartitions       = kerr.InvalidPartitions.Code
	errInvalidReplicationFact  = kerr.InvalidReplicationFactor.Code
	errInvalidConfig           = kerr.InvalidConfig.Code
	errInvalidRequest          = kerr.InvalidRequest.Code
	errOutOfOrderSequence      = kerr.OutOfOrderSequenceNumber.Code
	errInvalidProducerEpoch    = kerr.InvalidProducerEpoch.Code
	errInvalidTxnState         = kerr.InvalidTxnState.Code
	errInvalidProducerIDMap    = kerr.InvalidProducerIDMapping.Code
	errInvalidTxnTimeout       = kerr.InvalidTransactionTimeout.Code
	errConcurrentTransactions  = kerr.ConcurrentTransactions.Code
	errOperationNotAttempted   = kerr.OperationNotAttempted.Code
	errKafkaStorageError       = kerr.KafkaStorageError.Code
	errUnknownProducerID       = kerr.UnknownProducerID.Code
	errFetchSessionIDNotFound  = kerr.FetchSessionIDNotFound.Code
	errUnsupportedCompression  = kerr.UnsupportedCompressionType.Code
	errInvalidRecord           = kerr.InvalidRecord.Code
	errProducerFenced          = kerr.ProducerFenced.Code
	errUnknownTopicID          = kerr.UnknownTopicID.Code
	errNotCoordinator          = kerr.NotCoordinator.Code
	errTransactionalIDNotFound = kerr.TransactionalIDNotFound.Code
)
