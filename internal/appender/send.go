package appender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/metrics"
)

// Reply outcomes: the first word of each reply line.
const (
	outcomeOK         = "OK"
	outcomeDuplicate  = "DUPLICATE"
	outcomeOutOfOrder = "OUT_OF_ORDER"
	outcomeFenced     = "FENCED"
	outcomeInvalid    = "INVALID"
)

// origin says where a batch came from, for its reply: a line of --input,
// a batch of --from-log, or neither.
type origin struct {
	line     int   // line number of --input, from 1
	batch    int   // ordinal in --from-log, from 1
	position int64 // byte position in --from-log
	next     int64 // byte position of the next batch in --from-log
}

// item is one batch to send, or a refusal decided before sending.
type item struct {
	from      origin
	topic     string
	partition int32
	batch     []byte
	invalid   string // non-empty: refused with this reason, not sent
}

// Source yields the batches of one run: Args, Lines or Log. next
// returns io.EOF at the end; its other errors end the run. The item's
// batch is valid until the next call. unsent says what of the source
// was not sent when last was the last batch answered.
type Source interface {
	next() (item, error)
	unsent(last origin) string
}

// Run sends batches to a store and prints the replies.
type Run struct {
	store *logstore.Store
	out   replyWriter
	last  origin // of the last batch answered
	eof   bool   // the source ended: every batch was answered
}

// New is a run that prints its replies to w, as JSON Lines when asJSON.
func New(w io.Writer, asJSON bool) *Run {
	return &Run{out: replyWriter{w: w, json: asJSON}}
}

// Counts says how many batches were answered, and how many of them the
// store refused (OUT_OF_ORDER, FENCED or INVALID).
func (a *Run) Counts() (total, refused int) { return a.out.total, a.out.refused }

// Unsent says what of src was not sent, for the message of a run a
// signal stopped: so that a producer knows where to resume.
func (a *Run) Unsent(src Source) string {
	if a.eof {
		return "every batch was answered"
	}
	return src.unsent(a.last)
}

// SendAll sends the batches of src to store until src ends, an error,
// or ctx is done; then it takes no more input (the batch in flight is
// answered first) and returns nil. Errors are those of src, of the
// store other than refusals, and of writing a reply.
func (a *Run) SendAll(ctx context.Context, store *logstore.Store, src Source) error {
	a.store = store
	f := startFeed(src)
	defer f.stop()
	for ctx.Err() == nil {
		it, err, ok := f.next(ctx)
		if !ok {
			return nil
		}
		if err == io.EOF {
			a.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		r := refusal(it.from, outcomeInvalid, it.invalid)
		if it.invalid == "" {
			if r, err = a.send(it); err != nil {
				return err
			}
		}
		if err := a.out.write(r); err != nil {
			return err
		}
		a.last = it.from
	}
	return nil
}

// send appends one batch and turns the store's answer into a reply.
// Errors other than refusals are returned.
func (a *Run) send(it item) (reply, error) {
	if it.from.line > 0 {
		// The line may name a partition Kafka would not accept.
		if err := (logstore.PartitionID{Topic: it.topic, Partition: it.partition}).Validate(); err != nil {
			return refusal(it.from, outcomeInvalid, err.Error()), nil
		}
	}
	p, err := a.store.Partition(it.topic, it.partition)
	if err != nil {
		if it.from.line > 0 && !errors.Is(err, logstore.ErrClosed) {
			// Its partition alone cannot be opened (a directory name too
			// long for the filesystem, a damaged partition): the other
			// lines may still be sent.
			return refusal(it.from, outcomeInvalid, partitionOpenRefusal(it.topic, it.partition, err)), nil
		}
		return reply{}, err
	}
	res, err := p.Append(it.batch)
	outcome, ok := replyOutcome(metrics.OutcomeOf(res, err))
	if !ok {
		return reply{}, err
	}
	if refused := (*logstore.RefusedError)(nil); errors.As(err, &refused) {
		return refusal(it.from, outcome, refused.Reason), nil
	}
	return reply{from: it.from, Outcome: outcome, Base: &res.BaseOffset, Last: &res.LastOffset}, nil
}

// replyOutcome is the first word of the reply to an append of outcome
// o; not ok for a failure, which is an error, not a reply.
func replyOutcome(o metrics.Outcome) (word string, ok bool) {
	switch o {
	case metrics.OutcomeOK:
		return outcomeOK, true
	case metrics.OutcomeDuplicate:
		return outcomeDuplicate, true
	case metrics.OutcomeUnknownProducer, metrics.OutcomeOutOfOrder:
		return outcomeOutOfOrder, true
	case metrics.OutcomeFenced:
		return outcomeFenced, true
	case metrics.OutcomeFailed, metrics.OutcomeUnknownTopic:
		return "", false
	}
	return outcomeInvalid, true // invalid, too large, a plain batch in an open transaction
}

// feed calls a Source's next in a goroutine of its own, one call at
// a time and only when asked, so that a signal stops the wait for input
// (a pipe that stays open) without the source being read further. An
// item handed out stays valid until the next request, as the source
// promises.
type feed struct {
	req chan struct{}
	res chan fed
}

type fed struct {
	it  item
	err error
}

func startFeed(src Source) *feed {
	f := &feed{req: make(chan struct{}), res: make(chan fed, 1)}
	go func() {
		for range f.req {
			it, err := src.next()
			f.res <- fed{it, err} // buffered: never blocks, even once abandoned
			if err != nil {
				return
			}
		}
	}()
	return f
}

// next asks for the next item and waits for it, or for ctx to be done
// (ok false). After an error or ok false, next must not be called again.
func (f *feed) next(ctx context.Context) (it item, err error, ok bool) {
	f.req <- struct{}{}
	select {
	case r := <-f.res:
		return r.it, r.err, true
	case <-ctx.Done():
		return item{}, nil, false
	}
}

// stop lets the goroutine end once its call in flight returns.
func (f *feed) stop() { close(f.req) }

// partitionOpenRefusal is the reason of the INVALID reply to an --input
// line whose partition the store could not open (err from
// Store.Partition, not a refused name): the run goes on with the next
// line.
func partitionOpenRefusal(topic string, partition int32, err error) string {
	id := logstore.PartitionID{Topic: topic, Partition: partition}
	if errors.Is(err, syscall.ENAMETOOLONG) {
		return fmt.Sprintf("partition %s cannot be opened: its directory name is %d bytes, longer than the filesystem allows", id, len(id.String()))
	}
	detail := err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		detail = pe.Err.Error() // the path is the partition's, named already
	} else if _, after, ok := strings.Cut(detail, " in store "); ok {
		// Store.Partition's context: "... in store DIR: why".
		if _, why, ok := strings.Cut(after, ": "); ok {
			detail = why
		}
	}
	return fmt.Sprintf("partition %s cannot be opened: %s", id, detail)
}
