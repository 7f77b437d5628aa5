package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/logstore/logstore"
)

// checkPartitionFlags checks --topic and --partition by Kafka's rules
// before anything is created, and names the flag that is wrong.
func checkPartitionFlags(topic string, partition int32) error {
	err := logstore.PartitionID{Topic: topic, Partition: partition}.Validate()
	switch {
	case err == nil:
		return nil
	case logstore.PartitionID{Topic: topic}.Validate() == nil:
		return fmt.Errorf("--partition %d: %w", partition, err)
	}
	return fmt.Errorf("--topic %q: %w", topic, err)
}

// partitionOpenRefusal is the reason of the INVALID reply to an --input
// line whose partition the store could not open (err from
// Store.Partition, not a refused name): the run goes on with the next
// line.
func partitionOpenRefusal(topic string, partition int32, err error) string {
	id := logstore.PartitionID{Topic: topic, Partition: partition}
	if errors.Is(err, syscall.ENAMETOOLONG) {
		return fmt.Sprintf("partition %s cannot be opened: its directory name is %d bytes, longer than the filesystem allows", id, len(id.String()))
	}
	detail := err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		detail = pe.Err.Error() // the path is the partition's, named already
	} else if _, after, ok := strings.Cut(detail, " in store "); ok {
		// Store.Partition's context: "... in store DIR: why".
		if _, why, ok := strings.Cut(after, ": "); ok {
			detail = why
		}
	}
	return fmt.Sprintf("partition %s cannot be opened: %s", id, detail)
}
