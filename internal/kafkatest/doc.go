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
// (partition, producer id, epoch).
package kafkatest
