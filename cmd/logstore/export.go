package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/kafkaexport"
)

// exportOptions holds the flags of `logstore export`.
type exportOptions struct {
	dir   string
	kafka string
	topic string

	stdout io.Writer
}

func newExportCommand() *cobra.Command {
	opts := &exportOptions{dir: defaultStoreDir()}
	cmd := &cobra.Command{
		Use:   "export --kafka OUT [--dir DIR] [--topic TOPIC]",
		Short: "Write the store's partitions as a Kafka broker's log directory holds them",
		Long: `export --kafka OUT writes every partition of the store in --dir (or of
--topic) into OUT/<topic>-<partition>/ as a Kafka broker expects it, so
that the files can move into a Kafka broker's log directory and keep the
producers' deduplication state:

  - the segment files (.log, .index, .timeindex, .txnindex), copied byte
    for byte (they are Kafka's formats already);
  - <end offset>.snapshot: Kafka's producer snapshot of the partition's
    newest producer state;
  - partition.metadata with the topic id, when the store has one for the
    partition; without one none is written, and a Kafka broker writes
    its cluster's topic id itself;
  - leader-epoch-checkpoint: "0", the entry count, then "0 <log start>"
    when the log has records (logstore is one leader, epoch 0), each
    line ended by a newline.

Every file is synced. It prints one line per partition:

  <topic>-<partition> offsets [<start>, <end>) segmentFiles=<n> producers=<n> topicId=<id|none>

export takes the store's lock and does not wait for it: a store a running
server holds is refused. A partition already in OUT is refused, and so is
one with a transaction still open (end or abort it first). Consumer
group offsets, transactional ids and producer id blocks are not carried
over: see "Moving to a Kafka cluster" in the README.`,
		Example: `  logstore export --kafka /tmp/kafka-out --dir /var/lib/logstore
  logstore export --kafka /tmp/kafka-out --dir /var/lib/logstore --topic orders`,
		Args: inspectNoArgs("name the store with --dir and the output with --kafka"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.stdout = cmd.OutOrStdout()
			return runExport(opts)
		},
	}
	f := cmd.Flags()
	addDirFlag(f, &opts.dir)
	f.StringVar(&opts.kafka, "kafka", "", "output directory `OUT` (created if needed)")
	f.StringVar(&opts.topic, "topic", "", "export only the partitions of `TOPIC`")
	return cmd
}

func runExport(o *exportOptions) error {
	if o.kafka == "" {
		return errors.New("name the output directory with --kafka")
	}
	if err := existingStoreDir(o.dir); err != nil {
		return err
	}
	parts, err := kafkaexport.Export(o.dir, o.kafka, kafkaexport.Options{
		Topic: o.topic,
		Store: logstore.Options{LockTimeout: -1},
	})
	for _, p := range parts {
		id := "none"
		if p.HasTopicID {
			id = p.TopicID.String()
		}
		if _, werr := fmt.Fprintf(o.stdout, "%s offsets [%d, %d) segmentFiles=%d producers=%d topicId=%s\n",
			p.ID, p.StartOffset, p.EndOffset, len(p.Segments), p.Producers, id); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}
