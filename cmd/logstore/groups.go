package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/internal/inspect"
)

type groupsOptions struct {
	dir            string
	bootstrap      string
	requestTimeout time.Duration
	group          string
	describe       bool
	json           bool
	lockTimeout    time.Duration
	stdout         io.Writer
}

func newGroupsCommand() *cobra.Command {
	opts := &groupsOptions{dir: defaultStoreDir(), lockTimeout: defaultAppendLockTimeout, requestTimeout: defaultGroupsRequestTimeout}
	cmd := &cobra.Command{
		Use:   "groups [--dir DIR | --bootstrap HOST:PORT] [--describe | --group GROUP] [--json]",
		Short: "List the consumer groups of a store, or describe them with their committed offsets and lag",
		Long: `groups reads the consumer groups that serve's group coordinator keeps in
DIR/groups.db, as kafka-consumer-groups.sh lists and describes them. One
line per group:

  group=<id> protocolType=<type> generation=<n> state=<state> members=<n> emptySince=<ms|unknown> offsets=<count> lag=<sum>

(the state as recorded: Empty, Stable, or CompletingRebalance when the
join phase ended and the leader's assignment was not stored yet; a
group of commits only is Empty). With --describe (every group) or
--group (one), each group's line is followed by one line per member
(the recorded members, with the assignment of a Stable group):

  group=<id> member=<id> instanceId=<quoted|none> clientId=<quoted> host=<host> assignment=<topic:p,p;...>

and one line per committed offset:

  group=<id> topic=<topic> partition=<p> committed=<offset> end=<log end|unknown> lag=<end-committed|unknown> leaderEpoch=<e> committedAt=<ms> metadata=<quoted>

The end of each partition is read from the store (a partition that no
longer exists has none). A running server holds both the store and groups.db, so groups refuses
while serve runs (after --lock-timeout). With --json each group is one
JSON object on a line of its own, its offsets a list.

With --bootstrap it asks a running server (or any Kafka broker) instead,
over the Kafka protocol, as kafka-consumer-groups.sh does: ListGroups,
DescribeGroups, OffsetFetch and ListOffsets. Each group's line then has
its state and member count:

  group=<id> state=<state> protocolType=<type> members=<n>

and --describe or --group add the member lines above before the
offsets; the offsets' end is the high watermark, committedAt and
generation -1 (the protocol does not carry them). Assignments are
decoded for groups of protocol type "consumer". In JSON, "state" and
"members" (memberId, instanceId, clientId, clientHost, assignment by
topic) are there either way.

Exit status: 0 when the groups were printed; 1 for bad flags, a store
without groups.db, a groups.db that is damaged or in use, or a server
that cannot be reached or answers an error.`,
		Example: `  logstore groups --dir data
  logstore groups --dir data --group orders-app
  logstore groups --dir data --describe --json
  logstore groups --bootstrap 127.0.0.1:9092 --group orders-app`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.stdout = cmd.OutOrStdout()
			return runGroups(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	addDirFlag(f, &opts.dir)
	f.StringVar(&opts.bootstrap, "bootstrap", "", "ask the running server at `HOST:PORT` instead of reading DIR")
	f.DurationVar(&opts.requestTimeout, "request-timeout", opts.requestTimeout, "with --bootstrap: how long the requests may take together")
	f.StringVar(&opts.group, "group", "", "describe only `GROUP`")
	f.BoolVar(&opts.describe, "describe", false, "describe every group: its committed offsets and their lag")
	f.BoolVar(&opts.json, "json", false, "print groups as JSON Lines")
	f.DurationVar(&opts.lockTimeout, "lock-timeout", opts.lockTimeout, "how long to wait while another process (a running serve) holds groups.db or the store; 0 fails at once")
	return cmd
}

func runGroups(ctx context.Context, o *groupsOptions) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.bootstrap != "" {
		return runGroupsWire(ctx, o)
	}
	if err := existingStoreDir(o.dir); err != nil {
		return err
	}
	groups, err := groupcoord.Read(o.dir, max(o.lockTimeout, time.Millisecond))
	if err != nil {
		return err
	}
	if o.group != "" {
		var only []groupcoord.GroupInfo
		for _, g := range groups {
			if g.Group == o.group {
				only = append(only, g)
			}
		}
		if len(only) == 0 {
			return fmt.Errorf("store %s has no group %q", o.dir, o.group)
		}
		groups = only
	}
	store, err := openStoreUntil(ctx, o.dir, logstore.Options{LockTimeout: storeDuration(o.lockTimeout)})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	ends := map[groupcoord.TopicPartition]int64{}
	end := func(tp groupcoord.TopicPartition) (int64, bool) {
		if e, ok := ends[tp]; ok {
			return e, e >= 0
		}
		e := int64(-1)
		if p, err := store.ExistingPartition(tp.Topic, tp.Partition); err == nil {
			e = p.EndOffset()
		}
		ends[tp] = e
		return e, e >= 0
	}
	detail := o.describe || o.group != ""
	var out []byte
	for _, g := range groups {
		j := inspect.StoredGroup(g, end)
		if out, err = appendGroup(out, &j, detail, o.json); err != nil {
			return err
		}
	}
	return writeGroups(o.stdout, out)
}

// appendGroup appends the lines of group j, as JSON or text.
func appendGroup(dst []byte, j *inspect.Group, detail, asJSON bool) ([]byte, error) {
	if !asJSON {
		return j.AppendText(dst, detail), nil
	}
	dst, err := j.AppendJSON(dst, detail)
	return append(dst, '\n'), err
}

// writeGroups writes the lines of the groups.
func writeGroups(w io.Writer, out []byte) error {
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("writing the groups: %w", err)
	}
	return nil
}

// runGroupsWire is groups --bootstrap: the groups of a running server
// (see inspect.BrokerGroups).
func runGroupsWire(ctx context.Context, o *groupsOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.requestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	detail := o.describe || o.group != ""
	groups, err := inspect.BrokerGroups(ctx, cl, o.group, detail)
	if err != nil {
		return err
	}
	var out []byte
	for _, g := range groups {
		if o.group != "" && g.State == "Dead" {
			return fmt.Errorf("the server at %s has no group %q", o.bootstrap, o.group)
		}
		if out, err = appendGroup(out, &g, detail, o.json); err != nil {
			return err
		}
	}
	return writeGroups(o.stdout, out)
}

// defaultGroupsRequestTimeout bounds groups --bootstrap's requests.
const defaultGroupsRequestTimeout = 30 * time.Second
