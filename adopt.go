package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/logstore/logstore/internal/kafkackpt"
	"github.com/logstore/logstore/vfs"
)

// Adopting a Kafka log directory: a store opened on a directory a Kafka
// broker wrote honours the broker's log-start-offset-checkpoint.
//
// A broker keeps each partition's log start offset, where DeleteRecords
// moved it above the partition's first segment, in one file at the root
// of its log dir (kafkackpt's format: "0", the count, then "<topic>
// <partition> <offset>" lines), and starts the partition at the larger of
// that entry and the first segment's base. A partition directory that
// has no logstore.checkpoint of its own is such adopted data: Open reads
// the root file once, and each partition opened passes its entry to the
// segment log (segment.Config.AdoptedLogStart), which starts there, so
// the records Kafka deleted do not reappear. That open writes the
// partition's own checkpoint holding the start, and from then on it
// wins: the Kafka file is never needed again, and the store neither
// writes nor removes it. `logstore check` reads the same file and passes
// the same entries to its verifier, so it predicts the same start.
//
// A malformed or unreadable file refuses Open (an error naming the file,
// and the line, wrapping ErrBadKafkaCheckpoint), where a Kafka broker
// warns and starts each partition at its first segment's base. Falling
// back so would bring back every record a DeleteRecords had removed from
// the middle of a segment; a refusal loses nothing, and the user decides:
// correct the file, or remove it to accept the first segments' bases.

// ErrBadKafkaCheckpoint is wrapped by the error of Open (and reported by
// Check) for a Kafka log-start-offset-checkpoint in the store directory
// that cannot be read as Kafka's offset checkpoint.
var ErrBadKafkaCheckpoint = kafkackpt.ErrMalformed

// kafkaCheckpointLimit bounds the log-start-offset-checkpoint read: far
// more than the lines of a broker's partitions (about 30 bytes each).
const kafkaCheckpointLimit = 64 << 20

// readKafkaLogStarts reads dir's log-start-offset-checkpoint: nil when
// there is none.
func readKafkaLogStarts(fsys vfs.FS, dir string) (map[kafkackpt.Partition]int64, error) {
	path := filepath.Join(dir, kafkackpt.LogStartFileName)
	data, err := vfs.ReadFile(fsys, path, kafkaCheckpointLimit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, vfs.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", ErrBadKafkaCheckpoint, err)
	case err != nil:
		return nil, err
	}
	starts, err := kafkackpt.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return starts, nil
}

// adoptedLogStart is the Kafka log start of partition id, or 0.
func (s *Store) adoptedLogStart(id PartitionID) int64 {
	return s.kafkaStarts[kafkackpt.Partition{Topic: id.Topic, Partition: id.Partition}]
}
