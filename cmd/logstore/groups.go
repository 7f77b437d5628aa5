package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/groupcoord"
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
	dir := defaultAppendDir
	if d := os.Getenv(envStoreDir); d != "" {
		dir = d
	}
	opts := &groupsOptions{dir: dir, lockTimeout: defaultAppendLockTimeout, requestTimeout: defaultGroupsRequestTimeout}
	cmd := &cobra.Command{
		Use:   "groups [--dir DIR | --bootstrap HOST:PORT] [--describe | --group GROUP] [--json]",
		Short: "List the consumer groups of a store, or describe them with their committed offsets and lag",
		Long: `groups reads the consumer groups that serve's group coordinator keeps in
DIR/groups.db, as kafka-consumer-groups.sh lists and describes them. One
line per group:

  group=<id> protocolType=<type> generation=<n> emptySince=<ms|unknown> offsets=<count> lag=<sum>

With --describe (every group) or --group (one), each group's line is
followed by one line per committed offset:

  group=<id> topic=<topic> partition=<p> committed=<offset> end=<log end|unknown> lag=<end-committed|unknown> leaderEpoch=<e> committedAt=<ms> metadata=<quoted>

The end of each partition is read from the store (a partition that no
longer exists has none). Members and assignments are not in groups.db:
they live in a running server (members rejoin after a restart), and a
running server holds both the store and groups.db, so groups refuses
while serve runs (after --lock-timeout). With --json each group is one
JSON object on a line of its own, its offsets a list.

With --bootstrap it asks a running server (or any Kafka broker) instead,
over the Kafka protocol, as kafka-consumer-groups.sh does: ListGroups,
DescribeGroups, OffsetFetch and ListOffsets. Each group's line then has
its state and member count:

  group=<id> state=<state> protocolType=<type> members=<n>

and --describe or --group add a line per member before the offsets:

  group=<id> member=<id> instanceId=<quoted|none> clientId=<quoted> host=<host> assignment=<topic:p,p;...>

(the assignment decoded for groups of protocol type "consumer"); the
offsets' end is the high watermark, committedAt and generation -1 (the
protocol does not carry them). In JSON, "state" and "members" (memberId, instanceId,
clientId, clientHost, assignment by topic) are added.

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
	f.StringVar(&opts.dir, "dir", opts.dir, "store directory `DIR`, or $"+envStoreDir+" when set")
	f.StringVar(&opts.bootstrap, "bootstrap", "", "ask the running server at `HOST:PORT` instead of reading DIR")
	f.DurationVar(&opts.requestTimeout, "request-timeout", opts.requestTimeout, "with --bootstrap: how long the requests may take together")
	f.StringVar(&opts.group, "group", "", "describe only `GROUP`")
	f.BoolVar(&opts.describe, "describe", false, "describe every group: its committed offsets and their lag")
	f.BoolVar(&opts.json, "json", false, "print groups as JSON Lines")
	f.DurationVar(&opts.lockTimeout, "lock-timeout", opts.lockTimeout, "how long to wait while another process (a running serve) holds groups.db or the store; 0 fails at once")
	return cmd
}

type groupOffsetJSON struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Committed   int64  `json:"committed"`
	End         *int64 `json:"end"`
	Lag         *int64 `json:"lag"`
	LeaderEpoch int32  `json:"leaderEpoch"`
	CommittedAt int64  `json:"committedAt"`
	Metadata    string `json:"metadata"`
}

type groupJSON struct {
	Group        string            `json:"group"`
	ProtocolType string            `json:"protocolType"`
	State        string            `json:"state,omitempty"`
	Members      []groupMemberJSON `json:"members,omitempty"`
	Generation   int32             `json:"generation"`
	EmptySince   *int64            `json:"emptySince"`
	Lag          int64             `json:"lag"`
	Offsets      []groupOffsetJSON `json:"offsets"`
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
	out := bufio.NewWriter(o.stdout)
	for _, g := range groups {
		j := groupJSON{Group: g.Group, ProtocolType: g.ProtocolType, Generation: g.Generation, Offsets: []groupOffsetJSON{}}
		if !g.EmptySince.IsZero() {
			ms := g.EmptySince.UnixMilli()
			j.EmptySince = &ms
		}
		for _, off := range g.Offsets {
			oj := groupOffsetJSON{Topic: off.Topic, Partition: off.Partition, Committed: off.Offset, LeaderEpoch: off.LeaderEpoch,
				CommittedAt: off.Committed.UnixMilli(), Metadata: off.Metadata}
			if e, ok := end(off.TopicPartition); ok {
				lag := max(e-off.Offset, 0)
				if off.Offset < 0 {
					lag = e
				}
				oj.End, oj.Lag = &e, &lag
				j.Lag += lag
			}
			j.Offsets = append(j.Offsets, oj)
		}
		detail := o.describe || o.group != ""
		if o.json {
			if err := writeGroupJSON(out, j, detail); err != nil {
				return err
			}
			continue
		}
		empty := "unknown"
		if j.EmptySince != nil {
			empty = strconv.FormatInt(*j.EmptySince, 10)
		}
		fmt.Fprintf(out, "group=%s protocolType=%s generation=%d emptySince=%s offsets=%d lag=%d\n",
			strconv.Quote(g.Group), strconv.Quote(g.ProtocolType), g.Generation, empty, len(j.Offsets), j.Lag)
		if !detail {
			continue
		}
		for _, oj := range j.Offsets {
			writeOffsetLine(out, g.Group, oj)
		}
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("writing the groups: %w", err)
	}
	return nil
}

// writeGroupJSON writes group j as one JSON line, its offsets only in
// detail (a bufio.Writer keeps its first write error for Flush).
func writeGroupJSON(out *bufio.Writer, j groupJSON, detail bool) error {
	if !detail {
		j.Offsets = nil
	}
	line, err := json.Marshal(j)
	if err != nil {
		return err
	}
	out.Write(line)
	out.WriteByte('\n')
	return nil
}

// writeOffsetLine writes one committed offset's line.
func writeOffsetLine(out io.Writer, group string, oj groupOffsetJSON) {
	endS, lagS := "unknown", "unknown"
	if oj.End != nil {
		endS, lagS = strconv.FormatInt(*oj.End, 10), strconv.FormatInt(*oj.Lag, 10)
	}
	fmt.Fprintf(out, "group=%s topic=%s partition=%d committed=%d end=%s lag=%s leaderEpoch=%d committedAt=%d metadata=%s\n",
		strconv.Quote(group), oj.Topic, oj.Partition, oj.Committed, endS, lagS, oj.LeaderEpoch, oj.CommittedAt, strconv.Quote(oj.Metadata))
}
