package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/acl"
	"github.com/logstore/logstore/groupcoord"
	"github.com/logstore/logstore/internal/shutdown"
	"github.com/logstore/logstore/internal/tlsconf"
	"github.com/logstore/logstore/kafkaserver"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/segment"
	"github.com/logstore/logstore/users"
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
	listeners         []string
	advertised        []string
	protocolMap       string
	ssl               tlsconf.Files
	sslClientAuth     string
	sslReload         time.Duration
	allowUnauthed     bool
	saslMechanisms    []string
	superUsers        string
	authorizer        string
	allowIfNoACL      bool
	metricsListen     string
	sync              string
	syncInterval      time.Duration
	segmentBytes      int64
	lockTimeout       time.Duration
	autoCreate        bool
	defaultPartitions int32
	maxRequestBytes   int32
	queuedMaxBytes    int64
	maxConns          int
	maxConnsPerIP     int
	maxOpenParts      int
	txnMaxTimeout     time.Duration
	txnIDExpiration   time.Duration
	logFormat         string
	store             storeFlags
	// The group coordinator's settings (Kafka's names in the help).
	groupDelay      time.Duration
	offsetsRetain   time.Duration
	groupMinSession time.Duration

	storeOpts logstore.Options
	specs     []listenerSpec
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
		queuedMaxBytes:    kafkaserver.DefaultQueuedMaxRequestBytes,
		maxConns:          kafkaserver.DefaultMaxConnections,
		maxOpenParts:      defaultMaxOpenPartitions(descriptorLimit()),
		txnMaxTimeout:     kafkaserver.DefaultTransactionMaxTimeout,
		txnIDExpiration:   kafkaserver.DefaultTransactionalIDExpiration,
		logFormat:         "text",
		groupDelay:        groupcoord.DefaultInitialRebalanceDelay,
		offsetsRetain:     groupcoord.DefaultOffsetsRetention,
		groupMinSession:   groupcoord.DefaultMinSessionTimeout,
		sslClientAuth:     "none",
		sslReload:         defaultSSLReload,
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

It listens on --listen (127.0.0.1:9092), or on each --listener
NAME://HOST:PORT as Kafka's listeners names them, with the security
protocol of its name (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
--listener-security-protocol-map maps other names, as
listener.security.protocol.map does) and the address of its
--advertised-listener in Metadata. SSL and SASL_SSL listeners serve TLS 1.2
or later with --ssl-cert-file and --ssl-key-file, and with --ssl-client-auth
requested or required verify client certificates against --ssl-ca-file;
the files are read again on SIGHUP and when they change, for new
connections. SASL_PLAINTEXT and SASL_SSL listeners authenticate each client
(SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN, --sasl-enabled-mechanisms) as a user
of DIR/users.json (see logstore users) before it may send anything else. A
listener on an address other than loopback that does not authenticate its
clients (PLAINTEXT, or SSL without --ssl-client-auth required) lets anyone
who reaches it read and write every topic: serve refuses to start with one
unless --allow-unauthenticated says it is meant.

With --authorizer acl every request is checked against the ACLs of
DIR/acls.json (see logstore acls; also CreateAcls, DescribeAcls, DeleteAcls
over the wire), as Kafka's StandardAuthorizer checks them, with the
principal a client authenticated as (User:NAME by SASL, User:CN=... by its
client certificate, User:ANONYMOUS else); --super-users may do anything. A
resource no ACL matches is refused unless --allow-everyone-if-no-acl-found.
Without it (--authorizer none, the default) every client may do everything,
as in Kafka without an authorizer.

With --metrics-listen it also serves Prometheus metrics over HTTP at
/metrics (requests, produce outcomes, fsyncs, rolls, snapshots, recovery,
producers per partition: see package metrics), and its ready line ends
with ", metrics on http://HOST:PORT/metrics".

SIGINT or SIGTERM stops it cleanly: it stops accepting connections, answers
the requests in flight, closes the store (fsynced, with a snapshot and a
clean shutdown mark) and exits 0. A second signal exits at once.`,
		Example: `  logstore serve --dir data --listen 127.0.0.1:9092
  logstore serve --listener PLAINTEXT://127.0.0.1:9092 --listener SSL://:9093 \
      --advertised-listener SSL://broker.example.com:9093 \
      --ssl-cert-file server.pem --ssl-key-file server.key \
      --ssl-ca-file clients-ca.pem --ssl-client-auth required
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
	f.StringArrayVar(&opts.listeners, "listener", nil, "a listener as `NAME://HOST:PORT` (Kafka's listeners; repeat for more): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, or a name of --listener-security-protocol-map; instead of --listen")
	f.StringVar(&opts.superUsers, "super-users", "", "`User:NAME;...` principals that may manage the users over the wire (AlterUserScramCredentials; Kafka's super.users): SASL users, or User:CN=... for client certificates")
	f.StringVar(&opts.authorizer, "authorizer", "none", "`none` (every client may do everything) or acl (each request is checked against DIR/acls.json: see logstore acls)")
	f.BoolVar(&opts.allowIfNoACL, "allow-everyone-if-no-acl-found", false, "with --authorizer acl, allow an action on a resource that no ACL matches (Kafka's allow.everyone.if.no.acl.found)")
	f.StringSliceVar(&opts.saslMechanisms, "sasl-enabled-mechanisms", kafkaserver.DefaultSASLMechanisms, "the SASL mechanisms SASL listeners offer (Kafka's sasl.enabled.mechanisms)")
	f.StringArrayVar(&opts.advertised, "advertised-listener", nil, "`NAME://HOST:PORT` the clients of listener NAME are told to dial (Kafka's advertised.listeners; default: the address they connected to)")
	f.StringVar(&opts.protocolMap, "listener-security-protocol-map", "", "`NAME:PROTOCOL,...` security protocols of listener names other than PLAINTEXT and SSL")
	f.StringVar(&opts.ssl.CertFile, "ssl-cert-file", "", "PEM `FILE` of the SSL listeners' certificate chain, leaf first")
	f.StringVar(&opts.ssl.KeyFile, "ssl-key-file", "", "PEM `FILE` of the SSL listeners' private key")
	f.StringVar(&opts.ssl.CAFile, "ssl-ca-file", "", "PEM `FILE` of the CAs client certificates are verified against")
	f.StringVar(&opts.sslClientAuth, "ssl-client-auth", opts.sslClientAuth, "client certificates of SSL listeners: none, requested (verified when given) or required (Kafka's ssl.client.auth)")
	f.DurationVar(&opts.sslReload, "ssl-reload-interval", opts.sslReload, "how often the SSL files are looked at for a change, which reloads them (0: only on SIGHUP)")
	f.BoolVar(&opts.allowUnauthed, "allow-unauthenticated", false, "serve a listener on a non-loopback address that does not authenticate its clients")
	f.StringVar(&opts.metricsListen, "metrics-listen", "", "`HOST:PORT` to serve Prometheus metrics on, at /metrics (default: none)")
	f.StringVar(&opts.sync, "sync", opts.sync, "when appends are fsynced: always (before each acknowledgement), interval, or never (only at exit)")
	f.DurationVar(&opts.syncInterval, "sync-interval", opts.syncInterval, "fsync period of --sync interval")
	f.Int64Var(&opts.segmentBytes, "segment-bytes", opts.segmentBytes, "roll to a new segment file at this size")
	addLockTimeoutFlag(f, &opts.lockTimeout)
	f.BoolVar(&opts.autoCreate, "auto-create-topics", opts.autoCreate, "create a topic that a producer or a metadata request names and that does not exist")
	f.Int32Var(&opts.defaultPartitions, "default-partitions", opts.defaultPartitions, "partitions of an auto-created topic, and of CreateTopics with -1")
	f.Int32Var(&opts.maxRequestBytes, "max-request-bytes", opts.maxRequestBytes, "the largest request frame; a larger one closes its connection")
	f.Int64Var(&opts.queuedMaxBytes, "queued-max-request-bytes", opts.queuedMaxBytes, "the request memory of all connections together, each frame charged for what decoding it may cost (Kafka's queued.max.request.bytes); readers wait while it is spent")
	f.IntVar(&opts.maxConns, "max-connections", opts.maxConns, "client connections open at once; one more is closed when accepted (max.connections); 0 for no limit")
	f.IntVar(&opts.maxConnsPerIP, "max-connections-per-ip", 0, "client connections open at once from one address (max.connections.per.ip); 0 for no limit")
	f.IntVar(&opts.maxOpenParts, "max-open-partitions", opts.maxOpenParts, "partitions open at once; opening one more closes the least recently used idle one (the default leaves a quarter of the file descriptor limit to connections; 0 for no limit)")
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
	if o.queuedMaxBytes < 1<<20 {
		return fmt.Errorf("--queued-max-request-bytes %d: must be 1 MiB (1048576) or more", o.queuedMaxBytes)
	}
	for _, p := range superUsers(o.superUsers) {
		if name, ok := strings.CutPrefix(p, "User:"); !ok || name == "" {
			return fmt.Errorf("--super-users: principal %q: want User:NAME", p)
		}
	}
	if o.authorizer != "none" && o.authorizer != "acl" {
		return fmt.Errorf("--authorizer %q: want none or acl", o.authorizer)
	}
	if o.allowIfNoACL && o.authorizer != "acl" {
		return fmt.Errorf("--allow-everyone-if-no-acl-found needs --authorizer acl")
	}
	if o.maxOpenParts < 0 {
		return fmt.Errorf("--max-open-partitions %d: must be 0 (no limit) or more", o.maxOpenParts)
	}
	o.storeOpts.MaxOpenPartitions = o.maxOpenParts
	if o.maxConns < 0 || o.maxConnsPerIP < 0 {
		return fmt.Errorf("--max-connections %d, --max-connections-per-ip %d: must be 0 (no limit) or more", o.maxConns, o.maxConnsPerIP)
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
	return o.completeListeners(cmd)
}

// fdsPerPartition is about how many file descriptors an open partition
// holds: its active segment's log, index and time index, its snapshot
// db, and those of a segment being read or sealed.
const fdsPerPartition = 8

// defaultMaxOpenPartitions is --max-open-partitions's default for a
// descriptor limit of limit (0: unknown, no bound): three quarters of it,
// less a few for the store's own files, over fdsPerPartition, and 16 at
// least.
func defaultMaxOpenPartitions(limit int) int {
	if limit <= 0 {
		return 0
	}
	return max((limit-limit/4-64)/fdsPerPartition, 16)
}

// superUsers reads --super-users: principals separated by semicolons,
// as Kafka's super.users.
func superUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// defaultSSLReload is --ssl-reload-interval's default.
const defaultSSLReload = 10 * time.Second

// completeListeners reads the listener and SSL flags into o.specs and
// o.ssl.
func (o *serveOptions) completeListeners(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if len(o.listeners) == 0 {
		if len(o.advertised) > 0 {
			return errors.New("--advertised-listener names a --listener; with --listen, use --advertise")
		}
		o.specs = []listenerSpec{{name: string(protoPlaintext), protocol: protoPlaintext, addr: o.listen, advertise: o.advertise}}
	} else {
		if changed("listen") || changed("advertise") {
			return errors.New("--listen and --advertise are the short form of one PLAINTEXT --listener and --advertised-listener: give one form or the other")
		}
		var err error
		if o.specs, err = parseListeners(o.listeners, o.advertised, o.protocolMap); err != nil {
			return err
		}
	}
	hasSSL := false
	for _, l := range o.specs {
		hasSSL = hasSSL || l.protocol == protoSSL || l.protocol == protoSASLSSL
	}
	var err error
	if o.ssl.ClientAuth, err = tlsconf.ParseClientAuth(o.sslClientAuth); err != nil {
		return fmt.Errorf("--ssl-client-auth: %w", err)
	}
	if !hasSSL {
		for _, f := range []string{"ssl-cert-file", "ssl-key-file", "ssl-ca-file", "ssl-client-auth"} {
			if changed(f) {
				return fmt.Errorf("--%s: no SSL listener to use it (give one with --listener SSL://HOST:PORT)", f)
			}
		}
		return nil
	}
	if o.ssl.CertFile == "" || o.ssl.KeyFile == "" {
		return errors.New("an SSL listener needs --ssl-cert-file and --ssl-key-file")
	}
	if o.ssl.ClientAuth != tlsconf.ClientAuthNone && o.ssl.CAFile == "" {
		return fmt.Errorf("--ssl-client-auth %s needs --ssl-ca-file", o.ssl.ClientAuth)
	}
	if o.sslReload < 0 {
		return fmt.Errorf("--ssl-reload-interval %s: must be 0 or more", o.sslReload)
	}
	return nil
}

// authenticates says whether l knows who its clients are.
func (o *serveOptions) authenticates(l listenerSpec) bool {
	switch l.protocol {
	case protoSASLPlaintext, protoSASLSSL:
		return true
	case protoSSL:
		return o.ssl.ClientAuth == tlsconf.ClientAuthRequired
	}
	return false
}

// mayServe refuses l on ip (nil: every interface) when it would serve
// unauthenticated clients beyond loopback without
// --allow-unauthenticated.
func (o *serveOptions) mayServe(l listenerSpec, ip net.IP) error {
	if ip.IsLoopback() || o.authenticates(l) || o.allowUnauthed {
		return nil
	}
	at := "every interface"
	if ip != nil && !ip.IsUnspecified() {
		at = ip.String()
	}
	return fmt.Errorf("listener %s: %w: %s on %s lets anyone who reaches it read and write every topic; use a SASL_SSL or SASL_PLAINTEXT listener (users from logstore users add), an SSL listener with --ssl-client-auth required, or pass --allow-unauthenticated if that is meant", l, errUnauthenticated, l.protocol, at)
}

// errUnauthenticated is the error of a listener refused by mayServe.
var errUnauthenticated = errors.New("refusing to serve unauthenticated clients beyond loopback")

// bindListeners binds every listener (an SSL one serving tlsSrv's
// configuration), refusing one that would serve unauthenticated
// clients beyond loopback unless --allow-unauthenticated; on an error
// none stays bound.
func (o *serveOptions) bindListeners(tlsSrv *tlsconf.Server) (lns []net.Listener, err error) {
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			lns = nil
		}
	}()
	for _, l := range o.specs {
		// A literal address is judged before it is bound; a host name
		// once bound, by the address it resolved to.
		if host, _, _ := net.SplitHostPort(l.addr); host == "" || net.ParseIP(host) != nil {
			if err := o.mayServe(l, net.ParseIP(host)); err != nil {
				return lns, err
			}
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return lns, fmt.Errorf("listener %s: %w", l, err)
		}
		if err := o.mayServe(l, ln.Addr().(*net.TCPAddr).IP); err != nil {
			ln.Close()
			return lns, err
		}
		if l.protocol == protoSSL || l.protocol == protoSASLSSL {
			ln = kafkaserver.NewTLSListener(ln, tlsSrv.Config())
		}
		lns = append(lns, ln)
	}
	return lns, nil
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

	// The listeners are bound before the store opens, so that a taken
	// port, an unsafe listener or a bad certificate fails at once.
	var tlsSrv *tlsconf.Server
	if o.ssl.CertFile != "" {
		if tlsSrv, err = tlsconf.Load(o.ssl); err != nil {
			return err
		}
	}
	lns, err := o.bindListeners(tlsSrv)
	if err != nil {
		return err
	}
	closeListeners := func() error {
		var errs []error
		for _, ln := range lns {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}

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
		closeListeners()
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
	userFile, err := users.Open(store.Dir())
	if err != nil {
		return errors.Join(err, closeListeners())
	}
	var authorizer *acl.Authorizer
	if o.authorizer == "acl" {
		aclFile, err := acl.Open(store.Dir())
		if err == nil {
			authorizer, err = acl.NewAuthorizer(aclFile, superUsers(o.superUsers), o.allowIfNoACL)
		}
		if err != nil {
			return errors.Join(err, closeListeners())
		}
	}
	srv, err := kafkaserver.New(store, kafkaserver.Config{
		Advertise:             o.advertise,
		MaxRequestBytes:       o.maxRequestBytes,
		QueuedMaxRequestBytes: o.queuedMaxBytes,
		// 0 means none here, and the default in the Config.
		MaxConnections:            cmp.Or(o.maxConns, -1),
		MaxConnectionsPerIP:       o.maxConnsPerIP,
		Users:                     userFile,
		SASLMechanisms:            o.saslMechanisms,
		SuperUsers:                superUsers(o.superUsers),
		Authorizer:                authorizer,
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
		return errors.Join(err, closeListeners())
	}
	// The metrics listener starts beside the Kafka one and stops after
	// the server (before the store closes).
	var metricsAt string
	if m != nil {
		ep, lerr := m.Listen(o.metricsListen)
		if lerr != nil {
			return errors.Join(fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, lerr), closeListeners(), srv.Close())
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
	if tlsSrv != nil {
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go watchTLS(wctx, tlsSrv, o.sslReload, logger)
	}
	served := make(chan error, len(lns))
	var at []string
	for i, ln := range lns {
		l := o.specs[i]
		lc := kafkaserver.ListenerConfig{Advertise: l.advertise, SASL: l.protocol == protoSASLPlaintext || l.protocol == protoSASLSSL}
		go func() { served <- srv.ServeListener(ln, lc) }()
		if len(o.listeners) == 0 {
			at = append(at, ln.Addr().String())
		} else {
			at = append(at, o.specs[i].name+"://"+ln.Addr().String())
		}
	}
	fmt.Fprintf(stdout, "logstore serve: listening on %s, store %s, sync %s%s\n", strings.Join(at, " "), store.Dir(), o.storeOpts.Sync, metricsAt)

	// Each listener's Serve returns ErrServerClosed once Shutdown has
	// begun; another error is a listener that failed, which stops them
	// all.
	var failed error
	serving := len(lns)
	select {
	case <-ctx.Done():
		logger.Info("logstore serve: stopping", "reason", context.Cause(ctx).Error())
	case failed = <-served:
		serving--
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return errors.Join(failed, fmt.Errorf("stopping the server: %w", err))
	}
	for range serving {
		if err := <-served; !errors.Is(err, kafkaserver.ErrServerClosed) {
			failed = errors.Join(failed, err)
		}
	}
	return failed
}

// watchTLS reloads the SSL listeners' files on SIGHUP and, every
// interval (0: never), when they change, until ctx ends, logging each
// reload.
func watchTLS(ctx context.Context, s *tlsconf.Server, every time.Duration, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if every == 0 {
		every = math.MaxInt64
	}
	s.Watch(ctx, every, hup, func(err error) {
		if err != nil {
			logger.Warn("SSL files not reloaded; the previous ones stay in use", "err", err.Error())
			return
		}
		logger.Info("SSL files reloaded")
	})
}
