package kafkaserver

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
)

// recordErrors is the RecordErrors of a partition's ProduceResponse
// (v8+, KIP-467; kmsg calls them ErrorRecords, with BatchIndex as
// RelativeOffset and BatchIndexErrorMessage as ErrorMessage) for a
// refusal answered with code: the record the batch's
// check names, by its index in the batch, with the reason, for
// INVALID_RECORD (87) and INVALID_TIMESTAMP (32), as a Kafka broker lists
// the records its validation refused; nil when the refusal names no
// record (a fault of the batch as a whole).
func recordErrors(code int16, r *logstore.RefusedError) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	if code != errInvalidRecord && code != errInvalidTimestamp {
		return nil
	}
	i, ok := r.Record()
	if !ok {
		return nil
	}
	re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
	re.RelativeOffset = int32(i)
	msg := r.Reason
	re.ErrorMessage = &msg
	return []kmsg.ProduceResponseTopicPartitionErrorRecord{re}
}
