// Package metrics exposes the Prometheus metrics of a logstore server and
// of its store, with github.com/prometheus/client_golang. The Kafka
// server (package kafkaserver) reports each request, produce outcome and
// byte it moves through the methods of *Metrics; the store reports its
// fsyncs, rolls, snapshot saves and partition opens through the
// logstore.Events that StoreEvents returns (set as Options.Events); and
// a collector reads the open partitions of the store given to WatchStore
// at each scrape. `logstore serve --metrics-listen` serves Handler at
// /metrics.
//
//	m := metrics.New(nil) // a registry of its own, with Go and process metrics
//	store, err := logstore.Open(dir, logstore.Options{Events: m.StoreEvents()})
//	m.WatchStore(store)
//	http.Handle("/metrics", m.Handler())
//
// ProduceBatches reads a produce outcome's counter back without a
// scrape: the end-to-end tests assert on the duplicates with it (or on
// logstore_produce_batches_total{outcome="duplicate"} over HTTP).
//
// A nil *Metrics is valid and records nothing, so a caller never needs
// to check. The per-request methods take no lock and allocate nothing
// once an API and error code have been seen (see BenchmarkRequest).
//
// # Metrics
//
// Every name has the logstore_ prefix and its unit in its name.
// Histograms are Prometheus classic histograms (_bucket, _sum, _count).
//
// Server (called by the Kafka server):
//
//	logstore_requests_total{api,code}            counter    requests answered, by API name (Kafka's spelling, e.g.
//	                                                        "Produce", "InitProducerId"; "Unknown" for a key this
//	                                                        package does not know) and error
//	                                                        code (the number, "0" for none: the request's top-level
//	                                                        code, or for Produce and Fetch the first non-zero
//	                                                        partition code)
//	logstore_request_duration_seconds{api}       histogram  from a request's frame being read to its response being
//	                                                        handed to the writer (a produce's wait for its fsync and a
//	                                                        fetch's long poll included)
//	logstore_produce_batches_total{outcome}      counter    produced batches (one per partition of a produce request)
//	                                                        by outcome: ok, duplicate (a retry answered with the
//	                                                        first copy's offsets), unknown_producer (59), out_of_order
//	                                                        (45), fenced (47), invalid (2, 87, 32, 76, no batch),
//	                                                        too_large (10), open_transaction (48), failed (not a
//	                                                        refusal: the partition is poisoned or closed),
//	                                                        unknown_topic (3). Every outcome is exported from the
//	                                                        start, at 0.
//	logstore_received_bytes_total                counter    bytes of request frames read, size prefixes included
//	logstore_sent_bytes_total                    counter    bytes of response frames written, size prefixes included
//	logstore_connections                         gauge      client connections open
//	logstore_connections_refused_total           counter    connections closed as soon as accepted, over
//	                                                        max connections or max connections per ip
//	logstore_request_budget_waits_total          counter    request frames whose reading waited for the budget of
//	                                                        request bytes in flight (queued max request bytes)
//	logstore_sasl_authentications_total{mechanism,result}
//	                                             counter    SASL authentications by mechanism and result (ok, failed)
//
// Transactions (from the transaction coordinator's events, package
// txncoord, and read from it at each scrape):
//
//	logstore_transactions_total{event}           counter    transactions by event: begun (its first partition added),
//	                                                        committed, aborted (markers written; timed-out ones
//	                                                        included), timed_out (aborted by the coordinator past
//	                                                        the producer's transaction timeout). Every event is
//	                                                        exported from the start, at 0.
//	logstore_transactions_open                   gauge      transactions begun and not completed: ongoing, or
//	                                                        decided with markers still to write
//	logstore_transactional_ids_expired_total     counter    transactional ids the coordinator forgot, idle past
//	                                                        their expiration (serve --transactional-id-expiration,
//	                                                        Kafka's transactional.id.expiration.ms)
//
// Store (from logstore.Events, for every partition together):
//
//	logstore_fsync_duration_seconds              histogram  each group-commit fsync of a partition's log: how long the
//	                                                        appends it covered waited for the disk
//	logstore_fsync_batches                       histogram  batches each of those fsyncs made durable: batches per
//	                                                        group commit
//	logstore_fsync_bytes_total                   counter    bytes those fsyncs made durable
//	logstore_fsync_errors_total                  counter    failed fsyncs (each poisons its partition)
//	logstore_segment_rolls_total                 counter    segment rolls
//	logstore_snapshot_save_duration_seconds      histogram  producer-state snapshot saves (each roll's, each clean
//	                                                        close's)
//	logstore_snapshot_save_errors_total          counter    failed snapshot saves
//	logstore_partition_open_duration_seconds     histogram  partition opens: log recovery, snapshot load and replay
//	logstore_partition_opens_total{recovery}     counter    partition opens by how the log was found: "clean" (the last
//	                                                        close was clean), "recovered" (scanned after a crash),
//	                                                        "failed"
//	logstore_partition_evictions_total           counter    partitions closed, idle, to keep the bound of open
//	                                                        partitions (logstore.Options.MaxOpenPartitions)
//	logstore_recovery_scanned_batches_total      counter    batches the recovery scans after a crash found valid
//	logstore_recovery_scanned_bytes_total        counter    their bytes
//	logstore_recovery_truncated_bytes_total      counter    bytes those scans cut off a torn tail (kept beside the
//	                                                        segment as a .cut file)
//	logstore_recovery_replayed_batches_total     counter    batches replayed into the producer state at open, after
//	                                                        the snapshot loaded
//	logstore_recovery_snapshots_loaded_total     counter    opens that loaded a producer snapshot
//	logstore_recovery_snapshots_skipped_total    counter    corrupt snapshots skipped (and deleted) at open
//
// Partitions (read from the store at each scrape, open partitions only):
//
//	logstore_partitions_open                     gauge      partitions open
//	logstore_partition_producers{topic,partition}        gauge  idempotent producers the partition remembers
//	logstore_partition_log_start_offset{topic,partition} gauge  first offset still in the log
//	logstore_partition_log_end_offset{topic,partition}   gauge  offset the next batch will get
//	logstore_partition_lso_lag_offsets{topic,partition}  gauge  high watermark minus last stable offset: offsets a
//	                                                            read_committed consumer cannot read yet because a
//	                                                            transaction is open (0 when none is)
//
// Consumer groups (the group coordinator; the gauges read at each
// scrape through WatchGroups):
//
//	logstore_groups{state}                       gauge      groups by state (Empty, PreparingRebalance,
//	                                                        CompletingRebalance, Stable, Dead)
//	logstore_group_members                       gauge      members of all groups
//	logstore_group_rebalances_total              counter    rebalances started (a group entering PreparingRebalance)
//	logstore_group_offset_commits_total          counter    partition offsets committed, once durable
//	logstore_group_lag{group,topic,partition}    gauge      high watermark minus the committed offset, for the
//	                                                        partitions open (one series per committed offset)
//
// Configs:
//
//	logstore_config_changes_total{resource}      counter    resources (topic, broker) whose configs AlterConfigs or
//	                                                        IncrementalAlterConfigs set durably
//
// Nothing here is per-request per-partition: the partition label is only
// on the scrape-time gauges, so a busy server does not grow series with
// its traffic.
package metrics
