package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/topicadmin"
)

type topicsOptions struct {
	dir            string
	bootstrap      string
	requestTimeout time.Duration
	lockTimeout    time.Duration
	json           bool
	store          storeFlags
}

// defaultTopicsRequestTimeout bounds topics --bootstrap's requests.
const defaultTopicsRequestTimeout = 30 * time.Second

func newTopicsCommand() *cobra.Command {
	o := &topicsOptions{dir: defaultStoreDir(), lockTimeout: defaultAppendLockTimeout, requestTimeout: defaultTopicsRequestTimeout}
	cmd := &cobra.Command{
		Use:   "topics COMMAND [--dir DIR | --bootstrap HOST:PORT] [--json]",
		Short: "List, describe, create and delete topics, change their configs and partitions, delete records",
		Long: `topics manages a store's topics as kafka-topics.sh, kafka-configs.sh and
kafka-delete-records.sh manage a Kafka cluster's. It opens the store in
DIR and its catalog (catalog.db) itself, taking the store's lock as every
command does, so it refuses while serve runs (after --lock-timeout); with
--bootstrap it asks a running server (or any Kafka broker) instead, over
the Kafka protocol. Either way it checks and refuses what serve does,
with Kafka's error code and message, and a refusal changes nothing.

  list             one row per topic: TOPIC, PARTITIONS, TOPIC ID
  describe         per topic, kafka-topics.sh --describe's lines:
                     Topic: <t> TopicId: <id> PartitionCount: <n> ReplicationFactor: 1 Configs: <k=v,...>
                     Topic: <t> Partition: <p> Leader: 0 Replicas: 0 Isr: 0 StartOffset: <log start> EndOffset: <high watermark>
                   Configs are the topic's own (DYNAMIC_TOPIC_CONFIG); with
                   --all-configs a line per config follows:
                     Topic: <t> Config: <k>=<v> Source: <source>
  create           create --topic with --partitions (default: 1 offline,
                   the broker's num.partitions online) and --config k=v
  delete           delete --topic, its partitions and records
  alter-configs    --set k=v and --delete k of --topic's configs, as
                   kafka-configs.sh --alter --add-config/--delete-config
  add-partitions   grow --topic to --partitions in all
  delete-records   move --partition's log start to --offset (-1: the
                   high watermark), printing the low watermark after it

The others print one line: "Created topic <t>.", "Deleted topic <t>.",
"Completed updating config for topic <t>. Configs: <k=v,...>" (its own
configs after the change), "Topic <t> now has <n> partitions.", and
"partition: <t>-<p><TAB>low_watermark: <offset>", as
kafka-delete-records.sh prints it.

With --json each topic, or the one result, is a JSON object on a line of
its own: list {"topic","id","partitions"}; describe {"topic","id",
"partitionCount","replicationFactor","partitions":[{"partition","leader",
"replicas","isr","startOffset","endOffset"}],"configs":[{"name","value",
"source"}]}; create {"topic","id","partitions"}; delete {"topic","id"};
alter-configs {"topic","configs"}; add-partitions {"topic","partitions"};
delete-records {"topic","partition","lowWatermark"}.

Offline, the configs are described as serve with its default flags
would describe them (serve started with --segment-bytes reports that
value for segment.bytes instead).

Exit status: 0 when done; 1 for bad flags, a refusal, a store in use or
damaged, or a server that cannot be reached.`,
		Example: `  logstore topics list --dir data
  logstore topics create --dir data --topic orders --partitions 3 --config retention.ms=86400000
  logstore topics describe --dir data --topic orders --all-configs
  logstore topics alter-configs --bootstrap 127.0.0.1:9092 --topic orders --set segment.bytes=1048576 --delete retention.ms
  logstore topics add-partitions --bootstrap 127.0.0.1:9092 --topic orders --partitions 6
  logstore topics delete-records --dir data --topic orders --partition 0 --offset -1
  logstore topics delete --dir data --topic orders`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	f := cmd.PersistentFlags()
	addDirFlag(f, &o.dir)
	f.StringVar(&o.bootstrap, "bootstrap", "", "ask the running server at `HOST:PORT` instead of opening DIR")
	f.DurationVar(&o.requestTimeout, "request-timeout", o.requestTimeout, "with --bootstrap: how long the requests may take together")
	addLockTimeoutFlag(f, &o.lockTimeout)
	f.BoolVar(&o.json, "json", false, "print JSON objects, one a line")

	var topic string
	topicFlag := func(c *cobra.Command, required bool) {
		c.Flags().StringVar(&topic, "topic", "", "the `TOPIC`")
		if required {
			_ = c.MarkFlagRequired("topic")
		}
	}
	sub := func(use, short string, create bool, run func(ctx context.Context, a topicadmin.Admin) ([]byte, error)) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				return o.run(c.Context(), c.Flags().Changed("dir"), create, c.OutOrStdout(), run)
			}}
		o.store.addTo(c)
		cmd.AddCommand(c)
		return c
	}

	sub("list [--json]", "List the topics and their partition counts", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		ts, err := a.List(ctx)
		if err != nil || o.json {
			return jsonOr(err, ts)
		}
		return topicadmin.ListText(ts), nil
	})

	var allConfigs bool
	describe := sub("describe [--topic TOPIC] [--all-configs] [--json]", "Describe topics: partitions, offsets, topic id and configs", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		var names []string
		if topic != "" {
			names = []string{topic}
		}
		ds, err := a.Describe(ctx, names, allConfigs)
		if err != nil || o.json {
			return jsonOr(err, ds)
		}
		return topicadmin.DescribeText(ds, allConfigs), nil
	})
	topicFlag(describe, false)
	describe.Flags().BoolVar(&allConfigs, "all-configs", false, "list every config with its source, not only the topic's own")

	var partitions int32
	var configs []string
	create := sub("create --topic TOPIC [--partitions N] [--config NAME=VALUE ...] [--json]", "Create a topic", true, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		cs, err := topicadmin.ParseConfigPairs("--config", configs)
		if err != nil {
			return nil, err
		}
		t, err := a.Create(ctx, topic, partitions, cs)
		if err != nil || o.json {
			return jsonOne(err, t)
		}
		return []byte("Created topic " + t.Topic + ".\n"), nil
	})
	topicFlag(create, true)
	create.Flags().Int32Var(&partitions, "partitions", -1, "how many partitions (-1: 1 offline, the broker's default online)")
	create.Flags().StringArrayVar(&configs, "config", nil, "a topic config `NAME=VALUE` (repeatable)")

	del := sub("delete --topic TOPIC [--json]", "Delete a topic", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		t, err := a.Delete(ctx, topic)
		if err != nil || o.json {
			return jsonOne(err, struct {
				Topic string `json:"topic"`
				ID    string `json:"id"`
			}{t.Topic, t.ID})
		}
		return []byte("Deleted topic " + t.Topic + ".\n"), nil
	})
	topicFlag(del, true)

	var sets, deletes []string
	alter := sub("alter-configs --topic TOPIC [--set NAME=VALUE ...] [--delete NAME ...] [--json]", "Set and delete configs of a topic, incrementally", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		if len(sets) == 0 && len(deletes) == 0 {
			return nil, errors.New("nothing to alter: give --set NAME=VALUE or --delete NAME")
		}
		ops, err := topicadmin.ParseConfigOps(sets, deletes)
		if err != nil {
			return nil, err
		}
		after, err := a.AlterConfigs(ctx, topic, ops)
		if err != nil || o.json {
			return jsonOne(err, struct {
				Topic   string              `json:"topic"`
				Configs []topicadmin.Config `json:"configs"`
			}{topic, after})
		}
		return topicadmin.ConfigsText(topic, after), nil
	})
	topicFlag(alter, true)
	alter.Flags().StringArrayVar(&sets, "set", nil, "set config `NAME=VALUE` (repeatable)")
	alter.Flags().StringArrayVar(&deletes, "delete", nil, "delete config `NAME`, so the broker's value applies again (repeatable)")

	var total int32
	add := sub("add-partitions --topic TOPIC --partitions N [--json]", "Grow a topic to more partitions", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		err := a.AddPartitions(ctx, topic, total)
		if err != nil || o.json {
			return jsonOne(err, struct {
				Topic      string `json:"topic"`
				Partitions int32  `json:"partitions"`
			}{topic, total})
		}
		return []byte(fmt.Sprintf("Topic %s now has %d partitions.\n", topic, total)), nil
	})
	topicFlag(add, true)
	add.Flags().Int32Var(&total, "partitions", 0, "the new partition count, in all")
	_ = add.MarkFlagRequired("partitions")

	var partition int32
	var offset int64
	delRecords := sub("delete-records --topic TOPIC --partition P --offset O [--json]", "Delete a partition's records below an offset", false, func(ctx context.Context, a topicadmin.Admin) ([]byte, error) {
		low, err := a.DeleteRecords(ctx, topic, partition, offset)
		if err != nil || o.json {
			return jsonOne(err, struct {
				Topic        string `json:"topic"`
				Partition    int32  `json:"partition"`
				LowWatermark int64  `json:"lowWatermark"`
			}{topic, partition, low})
		}
		return topicadmin.DeleteRecordsText(topic, partition, low), nil
	})
	topicFlag(delRecords, true)
	delRecords.Flags().Int32Var(&partition, "partition", 0, "the partition")
	delRecords.Flags().Int64Var(&offset, "offset", 0, "delete the records below this offset (-1: the high watermark)")
	_ = delRecords.MarkFlagRequired("partition")
	_ = delRecords.MarkFlagRequired("offset")
	return cmd
}

// jsonOr is vs as JSON Lines, or err.
func jsonOr[T any](err error, vs []T) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return topicadmin.JSONLines(vs)
}

// jsonOne is v as a JSON line, or err.
func jsonOne(err error, v any) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return topicadmin.JSONLine(v)
}

// run opens the Admin the flags name (a broker with --bootstrap, else
// the store in DIR, which only create may make), runs fn with it and
// writes its output.
func (o *topicsOptions) run(ctx context.Context, dirGiven, create bool, stdout io.Writer, fn func(context.Context, topicadmin.Admin) ([]byte, error)) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var out []byte
	if o.bootstrap != "" {
		if dirGiven {
			return errors.New("give --dir or --bootstrap, not both")
		}
		ctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap))
		if err != nil {
			return err
		}
		defer cl.Close()
		if out, err = fn(ctx, topicadmin.NewBroker(kadm.NewClient(cl))); err != nil {
			return err
		}
	} else {
		if !create {
			if err := existingStoreDir(o.dir); err != nil {
				return err
			}
		}
		opts := logstore.Options{LockTimeout: storeDuration(o.lockTimeout)}
		if err := o.store.apply(&opts); err != nil {
			return err
		}
		store, err := openStoreUntil(ctx, o.dir, opts)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, store.Close()) }()
		local, err := topicadmin.OpenLocal(store, 1)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, local.Close()) }()
		if out, err = fn(ctx, local); err != nil {
			return err
		}
	}
	if _, err := stdout.Write(out); err != nil {
		return fmt.Errorf("writing the output: %w", err)
	}
	return nil
}
