package main

import (
	"errors"
	"fmt"
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
	return fmt.Sprintf("partition %s cannot be opened: %s", id, refusalReason(err, outcomeInvalid))
}
