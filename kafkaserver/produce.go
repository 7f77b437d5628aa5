package kafkaserver

// Produce (key 0), versions 0-11 advertised.
//
//   - v0-2 carry message formats v0 and v1 and close the connection:
//     they are listed only for librdkafka's feature check, as Kafka 4
//     lists them (KAFKA-18659).
//   - v3: record batches (magic 2) and TransactionID.
//   - v5: LogStartOffset in every partition's answer, errors included.
//   - v7 (KIP-110): zstd; a zstd batch below v7 is
//     UNSUPPORTED_COMPRESSION_TYPE (76).
//   - v8 (KIP-467): ErrorMessage and RecordErrors per partition.
//   - v9: flexible.
//   - v10 (KIP-951): the current leader of a partition that moved,
//     tagged; never set (this node leads every partition).
//   - v11 (KIP-890): TRANSACTION_ABORTABLE may be answered; logstore
//     never answers it.
//   - v12+ (KIP-890's epoch bump, then topic ids) is not advertised.
//
// Each partition's batch is appended in request order, in the reader.
// The answer waits for every accepted batch's durability under the
// store's sync mode (answerLater). Acks other than 0, 1 and -1 are
// INVALID_REQUIRED_ACKS (21) per partition. acks=0 is answered by
// nothing, and closes the connection when a partition was refused, as
// Kafka does. The refusals' codes are refusalCode's, the failures'
// failureCode's (handlers.go); doc.go lists them.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
	"github.com/logstore/logstore/recordbatch"
)

// ackWait is an appended batch whose acknowledgement waits for its
// durability (Partition.WaitAcked): group commit under SyncAlways.
type ackWait struct {
	part *logstore.Partition
	res  logstore.AppendResult
	sp   *kmsg.ProduceResponseTopicPartition // its answer
}

// handleProduce appends each partition's batch in request order, here in
// the reader goroutine, and answers once every accepted batch is durable
// under the store's sync mode, in a goroutine of its own (answerLater),
// so the next request's appends do not wait for this one's fsync.
func handleProduce(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.ProduceRequest)
	if r.Version < 3 {
		// Listed only for librdkafka's feature check (KAFKA-18659).
		return closeConn("Produce v%d carries message format v0 or v1, which logstore does not take", r.Version)
	}
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	p.resp = resp
	var waits []ackWait
	acksOK := r.Acks == 0 || r.Acks == 1 || r.Acks == -1
	// Authorization, as Kafka's: WRITE on the transactional id, else
	// every partition is 53; WRITE on each topic, else its partitions
	// are 29 (before any is looked up: nothing is created for them).
	txnCode := errNone
	if r.TransactionID != nil {
		txnCode = s.txnIDCode(c, kmsg.ACLOperationWrite, *r.TransactionID)
	}
	codes := authorizeTopics(s, c, kmsg.ACLOperationWrite, r.Topics, func(t *kmsg.ProduceRequestTopic) string { return t.Topic })
	codes.each(func(name string, code int16) {
		// Creating a topic needs CREATE too.
		if _, ok := s.cat.Topic(name); code == errNone && !ok && s.cfg.AutoCreateTopics && !s.mayCreateTopic(c, name) {
			codes.set(name, kerr.TopicAuthorizationFailed.Code)
		}
	})
	// The answers in request order, then the appends in windows of
	// partitions: each window's partitions not open yet are opened
	// together first (openConcurrently), so that a request naming more
	// partitions than the store keeps open appends to each while it is
	// open, instead of opening them all ahead and finding the first
	// closed again when their turn comes.
	type item struct {
		topic string
		rp    *kmsg.ProduceRequestTopicPartition
		sp    *kmsg.ProduceResponseTopicPartition
	}
	var items []item
	resp.Topics = answerEach(r.Topics, func(rt *kmsg.ProduceRequestTopic, st *kmsg.ProduceResponseTopic) {
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = answerEach(rt.Partitions, func(rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) {
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			items = append(items, item{rt.Topic, rp, sp})
		})
	})
	window := s.openWindow
	for from := 0; from < len(items); from += window {
		chunk := items[from:min(from+window, len(items))]
		if acksOK && txnCode == errNone && len(chunk) > 1 {
			tps := make([]logstore.PartitionID, 0, len(chunk))
			for _, it := range chunk {
				if codes.of(it.topic) == errNone {
					tps = append(tps, logstore.PartitionID{Topic: it.topic, Partition: it.rp.Partition})
				}
			}
			s.openConcurrently(tps)
		}
		for _, it := range chunk {
			sp := it.sp
			if code := cmp.Or(txnCode, codes.of(it.topic)); code != errNone {
				sp.ErrorCode = code
			} else if !acksOK {
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
				if part, code := s.partition(it.topic, it.rp.Partition, false); code == errNone {
					sp.LogStartOffset = part.StartOffset()
				}
			} else if w, ok := s.produceOne(r.Version, r.TransactionID, it.topic, sp, it.rp.Records); ok {
				w.sp = sp
				waits = append(waits, w)
			}
			p.setErr(sp.ErrorCode)
		}
	}
	p.noResponse = r.Acks == 0
	if r.Acks == 0 && p.errCode != errNone {
		// The client hears of nothing else: as Kafka does, close the
		// connection, so it refreshes its metadata and learns. The
		// batches accepted are still made durable.
		for _, w := range waits {
			if w.part.Mode() == logstore.SyncAlways {
				go w.part.WaitAcked(w.res)
			}
		}
		return closeConn("acks=0 Produce refused (error %d): closing the connection, as Kafka does", p.errCode)
	}
	if len(waits) == 0 || waits[0].part.Mode() != logstore.SyncAlways {
		return nil
	}
	// Under acks=0 the wait still runs: it is what moves the high
	// watermark past the batch.
	complete := c.answerLater(p, nil)
	go complete(func() {
		errs := make([]error, len(waits))
		var wg sync.WaitGroup
		for i, w := range waits {
			wg.Go(func() { errs[i] = w.part.WaitAcked(w.res) })
		}
		wg.Wait()
		p.errCode = 0
		for i, err := range errs {
			if err != nil {
				w := waits[i]
				w.sp.ErrorCode = s.failureCode("produce", w.part.ID(), err)
				w.sp.BaseOffset = -1
			}
		}
		for _, t := range resp.Topics {
			for _, sp := range t.Partitions {
				p.setErr(sp.ErrorCode)
			}
		}
	})
	return nil
}

// openWorkers bounds the partitions a produce request opens at once.
const openWorkers = 16

// maxOpenWindow bounds the partitions of a produce request opened
// together before their appends (handleProduce).
const maxOpenWindow = 256

// produceOpenWindow is how many partitions of a produce request are
// opened together before their appends: maxOpenWindow, or a quarter of
// the store's bound on open partitions (maxOpen, 0 for none) when that
// is less, so that a window never closes partitions of its own.
func produceOpenWindow(maxOpen int) int {
	if maxOpen > 0 {
		return min(maxOpenWindow, max(maxOpen/4, 1))
	}
	return maxOpenWindow
}

// openConcurrently opens the partitions of tps not open yet, several
// at once: a partition's first open makes its files durable (some
// fsyncs under SyncAlways), and a request naming hundreds of new
// partitions (a test suite's first records) would otherwise wait for
// them one after the other. The appends then find them open; an open
// that fails here is tried again, and answered, by the append's own
// lookup.
func (s *Server) openConcurrently(tps []logstore.PartitionID) {
	var closed []logstore.PartitionID
	for _, tp := range tps {
		if !s.store.IsOpen(tp.Topic, tp.Partition) {
			closed = append(closed, tp)
		}
	}
	if len(closed) < 2 {
		return
	}
	next := make(chan logstore.PartitionID)
	var wg sync.WaitGroup
	for range min(openWorkers, len(closed)) {
		wg.Go(func() {
			for x := range next {
				s.partition(x.Topic, x.Partition, true)
			}
		})
	}
	for _, x := range closed {
		next <- x
	}
	close(next)
	wg.Wait()
}

// produceOne appends one partition's records, filling sp; it returns the
// append to wait for when the batch was accepted. version is the
// request's; txnID its transactional id (v3+), nil when it has none.
func (s *Server) produceOne(version int16, txnID *string, topicName string, sp *kmsg.ProduceResponseTopicPartition, records []byte) (ackWait, bool) {
	part, code := s.partition(topicName, sp.Partition, true)
	if code != errNone {
		sp.ErrorCode = code
		s.produced(logstore.PartitionID{Topic: topicName, Partition: sp.Partition}, metrics.OutcomeUnknownTopic, len(records))
		return ackWait{}, false
	}
	sp.LogStartOffset = part.StartOffset()
	if len(records) == 0 {
		sp.ErrorCode = kerr.InvalidRecord.Code
		msg := "the produce request has no record batch for this partition"
		sp.ErrorMessage = &msg
		s.produced(part.ID(), metrics.OutcomeInvalid, 0)
		return ackWait{}, false
	}
	if version < 7 && isZstd(records) {
		// KIP-110: a request below v7 may not carry zstd (Kafka's
		// ProduceRequest.validateRecords refuses it before the log).
		sp.ErrorCode = kerr.UnsupportedCompressionType.Code
		msg := fmt.Sprintf("a zstd batch needs Produce v7 or later (Kafka 2.1); this request is v%d", version)
		sp.ErrorMessage = &msg
		s.produced(part.ID(), metrics.OutcomeInvalid, len(records))
		return ackWait{}, false
	}
	if isTxnData(records) {
		release, code, msg := s.beginTxnProduce(txnID, topicName, sp.Partition, recordbatch.Batch(records))
		if code != errNone {
			sp.ErrorCode = code
			sp.ErrorMessage = &msg
			o := metrics.OutcomeOpenTransaction
			switch code {
			case kerr.InvalidProducerEpoch.Code:
				o = metrics.OutcomeFenced
			case kerr.KafkaStorageError.Code, kerr.NotLeaderForPartition.Code:
				o = metrics.OutcomeFailed
			case kerr.InvalidProducerIDMapping.Code:
				o = metrics.OutcomeInvalid
			}
			s.produced(part.ID(), o, len(records))
			return ackWait{}, false
		}
		// Released once the batch is in the log (not yet durable): until
		// then no marker of its transaction can be written.
		defer release()
	}
	stampLeaderEpoch(records, part.LeaderEpoch())
	res, err := part.AppendWritten(records)
	s.produced(part.ID(), metrics.OutcomeOf(res, err), len(records))
	if err != nil {
		var refused *logstore.RefusedError
		if errors.As(err, &refused) {
			sp.ErrorCode = refusalCode(refused)
			msg := refused.Reason
			sp.ErrorMessage = &msg
			sp.ErrorRecords = recordErrors(sp.ErrorCode, refused)
		} else {
			sp.ErrorCode = s.failureCode("produce", part.ID(), err)
		}
		sp.LogStartOffset = part.StartOffset()
		return ackWait{}, false
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogStartOffset = part.StartOffset()
	return ackWait{part: part, res: res}, true
}

// isZstd reports whether records start with a v2 batch compressed with
// zstd.
func isZstd(records []byte) bool {
	return len(records) >= recordbatch.HeaderSize && records[16] == 2 &&
		recordbatch.Batch(records).Attributes().Codec() == recordbatch.CodecZstd
}

// isTxnData reports whether records start with a transactional v2 data
// batch, which the coordinator must admit (a control batch is refused by
// the partition as from any client).
func isTxnData(records []byte) bool {
	if len(records) < recordbatch.HeaderSize || records[16] != 2 {
		return false
	}
	a := recordbatch.Batch(records).Attributes()
	return a.Transactional() && !a.Control()
}

// stampLeaderEpoch sets a v2 batch's PartitionLeaderEpoch (bytes 12-15,
// outside the CRC) to epoch, the partition's (0, or an adopted
// partition's latest: logstore.Partition.LeaderEpoch), as a Kafka leader
// stamps its own (clients send -1).
func stampLeaderEpoch(b []byte, epoch int32) {
	if len(b) >= recordbatch.HeaderSize && b[16] == 2 {
		binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	}
}
