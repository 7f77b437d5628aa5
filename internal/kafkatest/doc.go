// Package kafkatest holds the helpers of logstore's wire tests: a
// fault-injecting Kafka proxy, a kgo producer workload, and two checkers
// of what the workload left in the log.
//
// # Proxy
//
// A Proxy listens on 127.0.0.1 in front of one broker address (an
// in-process server or a child process: it is plain TCP). It frames the
// client's requests (int32 size, then api key, version, correlation id)
// and the server's responses (int32 size, then correlation id), matches
// each response to the oldest unanswered request of its connection (Kafka
// answers in order; a Produce with acks 0 expects no answer), and applies
// Rules to each:
//
//   - a response read whole from the server can be dropped and both sides
//     closed (DropAndClose): the server wrote its answer, the client never
//     sees it and retries on a new connection, which is how a broker meets
//     an idempotent retry;
//   - a response can be dropped silently (DropSilently): the connection
//     stays open and every later response on it is discarded too, until
//     the client's request timeout closes it;
//   - a request can be refused by closing both sides before it is
//     forwarded (CloseBeforeForward), so the server never handles it.
//
// Counts says what the proxy did, and reads every Produce response to
// count its error codes and the answers that repeat a base offset already
// given for that partition: the duplicates the server recognised.
//
// The proxy rewrites nothing. Metadata names the broker's advertised
// address, so the broker must advertise the proxy's address: logstore
// serve through its advertise setting, kfake through Advertise (kfake
// names its listener's Addr).
//
// Buffers are bounded: a frame is at most ProxyConfig.MaxFrameBytes (a
// larger one closes the connection), at most MaxInFlight requests wait
// for their answer per connection, and a Fetch response over 1 MiB is
// streamed through without being held. Every goroutine belongs to a
// connection or the accept loop, and Close waits for all of them.
//
// # Workload
//
// Workload produces N records with unique values over a few partitions
// (record i to partition i mod P) with one kgo client: idempotent,
// acks=all, StopProducerOnDataLossDetected, AlwaysRetryEOF, a 20 ms retry
// backoff, ProduceRequestTimeout and RequestTimeoutOverhead of a second.
// It records, for each value, the partition and offset kgo acknowledged
// (or the error), and is bounded by its context and its count.
//
// # Checkers
//
// Consume reads every partition from its start to the high watermark with
// a kgo consumer; ScanStore opens a logstore store directory (after the
// server closed it), reads every batch with Partition.Read, checks its CRC
// and decodes its records with recordbatch. Verify compares either with
// the workload: every acknowledged value exactly once, at its acknowledged
// offset, in production order per partition, nothing that was never
// produced; and, when the records carry their sequences (ScanStore), a
// producer id on every data record and sequences contiguous per
// (partition, producer id, epoch). Consume ends a partition at the record
// or transaction marker just below its high watermark (kgo hands out
// markers with KeepControlRecords); transactional workloads have checkers
// of their own.
//
// # Transactions
//
// TxnWorkload runs N transactions with transactional kgo clients
// (TransactionalID, BeginTransaction, EndTransaction), over a few
// partitions, each committing or aborting by a seeded plan; values name
// their transaction and index. Each transaction ends committed, aborted,
// or uncertain: a commit whose answer never came, which the server may
// have decided either way. A failed end is retried as kgo documents
// (TryAbort), then the client is replaced; a producer whose last end
// failed sends an InitProducerId at the end, so nothing stays open.
//
// The checkers read every data record and marker (Entry):
//   - VerifyTxnLog, over a whole log (ScanTxns of the store, or
//     ConsumeTxns at read_uncommitted, control records kept): each value
//     once, transactional, in its partition, at its acknowledged offset,
//     in order per producer; every transaction ended by a marker in every
//     partition it wrote (none left open), all of its records decided
//     alike (atomic), committed ones whole, aborted ones never committed
//     and with every acknowledged record present; uncertain ones either
//     way, all or nothing. It derives the aborted ranges (with Kafka's
//     last stable offset) the .txnindex files must hold.
//   - VerifyTxnCommitted, over a read_committed reading: exactly the
//     committed records, once each, at the log's offsets, and the same
//     markers.
//   - ScanTxnsAndVerify, on a closed store: logstore.Check finds nothing
//     (every .txnindex equals its rebuild from the log), the scan passes
//     VerifyTxnLog and agrees with a consumer's verdict, AbortedTransactions
//     equals the derived ranges, and Kafka's dump (package kafkadump)
//     prints every marker at its offset.
//
// ConsumeTxns knows a partition is done when it has the record or marker
// just below the high watermark (kgo hands out markers with
// KeepControlRecords), and refuses to start while the last stable offset
// (ListOffsets at read_committed) is below the high watermark.
package kafkatest
