package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/segment"
)

// serveShutdownTimeout bounds how long a signal's clean stop waits for
// the requests in flight before it closes the connections.
const serveShutdownTimeout = 30 * time.Second

// metricsShutdownTimeout bounds how long a stop waits for a scrape in
// flight.
const metricsShutdownTimeout = 5 * time.Second

type serveOptions struct {
	dir               string
	listen            string
	advertise         string
	metricsListen     string
	sync              string
	syncInterval      time.Duration
	segmentBytes      int64
	lockTimeout       time.Duration
	autoCreate        bool
	defaultPartitions int32
	maxRequestBytes   int32
	txnMaxTimeout     time.Duration
	txnIDExpiration   time.Duration
	logFormat         string
	store             storeFlags
	// The group coordinator's settings (Kafka's names in the help).
	groupDelay      time.Duration
	offsetsRetain   time.Duration
	groupMinSession time.Duration

	storeOpts logstore.Options
}

func newServeCommand() *cobra.Command {
	opts := &serveOptions{
		dir:               defaultStoreDir(),
		listen:            "127.0.0.1:9092",
		sync:              "always",
		syncInterval:      defaultSyncInterval,
		segmentBytes:      segment.DefaultSegmentBytes,
		lockTimeout:       defaultAppendLockTimeout,
		autoCreate:        true,
		defaultPartitions: 1,
		maxRequestBytes:   kafkaserver.DefaultMaxRequestBytes,
		txnMaxTimeout:     kafkaserver.DefaultTransactionMaxTimeout,
		txnIDExpiration:   kafkaserver.DefaultTransactionalIDExpiration,
		logFormat:         "text",
		groupDelay:        groupcoord.DefaultInitialRebalanceDelay,
		offsetsRetain:     groupcoord.DefaultOffsetsRetention,
		groupMinSession:   groupcoord.DefaultMinSessionTimeout,
	}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the store over the Kafka protocol to Kafka producers and consumers",
		Long: `serve listens for Kafka clients (franz-go, librdkafka/kcat, Java, sarama,
...) and serves the store in --dir as a single-node Kafka broker: idempotent
and transactional produce (it is the transaction coordinator), fetch, list
offsets, metadata, topic creation and deletion, and consumer groups (it is
the group coordinator: Kafka's classic protocol, committed offsets durable
in DIR/groups.db before a commit is answered; see logstore groups). A
produce is answered once its batch is as durable as --sync promises; a fetch
never shows a batch before that. It prints one line when it is ready.

With --metrics-listen it also serves Prometheus metrics over HTTP at
/metrics (requests, produce outcomes, fsyncs, rolls, snapshots, recovery,
producers per partition: see package metrics), and its ready line ends
with ", metrics on http://HOST:PORT/metrics".

SIGINT or SIGTERM stops it cleanly: it stops accepting connections, answers
the requests in flight, closes the store (fsynced, with a snapshot and a
clean shutdown mark) and exits 0. A second signal exits at once.`,
		Example: `  logstore serve --dir data --listen 127.0.0.1:9092
  kcat -b 127.0.0.1:9092 -t events -P -X enable.idempotence=true <<< 'hello'
  kcat -b 127.0.0.1:9092 -t events -C -p 0 -e`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.complete(cmd); err != nil {
				return err
			}
			stop := shutdown.Catch(cmd.Context())
			defer stop.Stop()
			return runServe(stop.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	addDirFlag(f, &opts.dir)
	f.StringVar(&opts.listen, "listen", opts.listen, "`HOST:PORT` to listen on for Kafka clients")
	f.StringVar(&opts.advertise, "advertise", "", "`HOST:PORT` clients are told to dial in Metadata (default: the address they connected to)")
	f.StringVar(&opts.metricsListen, "metrics-listen", "", "`HOST:PORT` to serve Prometheus metrics on, at /metrics (default: none)")
	f.StringVar(&opts.sync, "sync", opts.sync, "when appends are fsynced: always (before each acknowledgement), interval, or never (only at exit)")
	f.DurationVar(&opts.syncInterval, "sync-interval", opts.syncInterval, "fsync period of --sync interval")
	f.Int64Var(&opts.segmentBytes, "segment-bytes", opts.segmentBytes, "roll to a new segment file at this size")
	addLockTimeoutFlag(f, &opts.lockTimeout)
	f.BoolVar(&opts.autoCreate, "auto-create-topics", opts.autoCreate, "create a topic that a producer or a metadata request names and that does not exist")
	f.Int32Var(&opts.defaultPartitions, "default-partitions", opts.defaultPartitions, "partitions of an auto-created topic, and of CreateTopics with -1")
	f.Int32Var(&opts.maxRequestBytes, "max-request-bytes", opts.maxRequestBytes, "the largest request frame; a larger one closes its connection")
	f.DurationVar(&opts.txnMaxTimeout, "transaction-max-timeout", opts.txnMaxTimeout, "the longest transaction timeout a transactional producer may ask for (Kafka's transaction.max.timeout.ms)")
	f.DurationVar(&opts.txnIDExpiration, "transactional-id-expiration", opts.txnIDExpiration, "how long a transactional id may stay idle (no transaction open) before the coordinator forgets it; it comes back with a new producer id (Kafka's transactional.id.expiration.ms)")
	f.StringVar(&opts.logFormat, "log-format", opts.logFormat, "log lines on stderr as text or json")
	f.DurationVar(&opts.groupDelay, "group-initial-rebalance-delay", opts.groupDelay, "how long a consumer group's first rebalance waits for more members (group.initial.rebalance.delay.ms); 0 for none")
	f.DurationVar(&opts.offsetsRetain, "offsets-retention", opts.offsetsRetain, "how long a consumer group's committed offsets are kept once it has no members (offsets.retention.minutes)")
	f.DurationVar(&opts.groupMinSession, "group-min-session-timeout", opts.groupMinSession, "the shortest session timeout a group member may ask for (group.min.session.timeout.ms)")
	opts.store.addTo(cmd)
	return cmd
}

func (o *serveOptions) complete(cmd *cobra.Command) error {
	a := appendOptions{partitionFlags: partitionFlags{lockTimeout: o.lockTimeout}, sync: o.sync, syncInterval: o.syncInterval, segmentBytes: o.segmentBytes}
	var err error
	if o.storeOpts, err = a.storeOptions(cmd.Flags().Changed("sync-interval")); err != nil {
		return err
	}
	if err := o.store.apply(&o.storeOpts); err != nil {
		return err
	}
	if o.defaultPartitions < 1 {
		return fmt.Errorf("--default-partitions %d: must be 1 or more", o.defaultPartitions)
	}
	if o.maxRequestBytes < 1024 {
		return fmt.Errorf("--max-request-bytes %d: must be 1024 or more", o.maxRequestBytes)
	}
	if o.txnMaxTimeout < time.Millisecond {
		return fmt.Errorf("--transaction-max-timeout %s: must be 1ms or more", o.txnMaxTimeout)
	}
	if o.txnIDExpiration < time.Millisecond {
		return fmt.Errorf("--transactional-id-expiration %s: must be 1ms or more", o.txnIDExpiration)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	}
	if o.metricsListen != "" {
		if _, _, err := net.SplitHostPort(o.metricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %w", o.metricsListen, err)
		}
	}
	if o.advertise != "" {
		if _, _, err := net.SplitHostPort(o.advertise); err != nil {
			return fmt.Errorf("--advertise %q: %w", o.advertise, err)
		}
	}
	return nil
}

// runServe serves until ctx ends (a signal), then stops cleanly: a
// signal is the way serve is meant to end, so it returns nil (exit 0).
func runServe(ctx context.Context, o *serveOptions, stdout, stderr io.Writer) (err error) {
	var handler slog.Handler
	if o.logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, nil)
	} else {
		handler = slog.NewTextHandler(stderr, nil)
	}
	logger := slog.New(handler)

	// With --metrics-listen, the store reports its fsyncs, rolls,
	// snapshots and opens to the metrics, and the server its requests.
	var m *metrics.Metrics
	storeOpts := o.storeOpts
	if o.metricsListen != "" {
		m = metrics.New(nil)
		storeOpts.Events = m.StoreEvents()
	}
	store, err := openStoreUntil(ctx, o.dir, storeOpts)
	if err != nil {
		if interruption(ctx) != nil {
			return nil
		}
		return err
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the store: %w", cerr))
		}
	}()
	srv, err := kafkaserver.New(store, kafkaserver.Config{
		Advertise:                 o.advertise,
		MaxRequestBytes:           o.maxRequestBytes,
		AutoCreateTopics:          o.autoCreate,
		DefaultPartitions:         o.defaultPartitions,
		Logger:                    logger,
		Metrics:                   m,
		TransactionMaxTimeout:     o.txnMaxTimeout,
		TransactionalIDExpiration: o.txnIDExpiration,
		// 0 means none here, and the default in the Config.
		GroupInitialRebalanceDelay: cmp.Or(o.groupDelay, -1),
		OffsetsRetention:           o.offsetsRetain,
		GroupMinSessionTimeout:     o.groupMinSession,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return errors.Join(fmt.Errorf("--listen %s: %w", o.listen, err), srv.Close())
	}
	// The metrics listener starts beside the Kafka one and stops after
	// the server (before the store closes).
	var metricsAt string
	if m != nil {
		ep, lerr := m.Listen(o.metricsListen)
		if lerr != nil {
			return errors.Join(fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, lerr), ln.Close(), srv.Close())
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
			defer cancel()
			if serr := ep.Shutdown(sctx); serr != nil {
				err = errors.Join(err, fmt.Errorf("stopping the metrics listener: %w", serr))
			}
		}()
		metricsAt = fmt.Sprintf(", metrics on http://%s/metrics", ep.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "logstore serve: listening on %s, store %s, sync %s%s\n", ln.Addr(), store.Dir(), o.storeOpts.Sync, metricsAt)

	select {
	case <-ctx.Done():
	case err := <-served:
		// The listener failed: stop what is in flight, then say why.
		sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
		defer cancel()
		return errors.Join(err, srv.Shutdown(sctx))
	}
	logger.Info("logstore serve: stopping", "reason", context.Cause(ctx).Error())
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	if err := <-served; !errors.Is(err, kafkaserver.ErrServerClosed) {
		return err
	}
	return nil
}
