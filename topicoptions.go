package logstore

import (
	"fmt"
	"math"
	"time"

	"github.com/logstore/logstore/recordbatch"
)

// TopicOptions override some of the store's Options for the partitions of
// one topic (Store.SetTopicOptions). Each field is a Kafka topic config of
// the same name; nil means "not overridden: use the store's Options", and
// a non-nil value, whatever it is, overrides. So "keep everything" (Kafka's
// retention -1) is a negative value, distinct from nil.
//
// The values mean what the Options field of the same name means, except
// that zero is not "the default" (nil is):
//
//   - SegmentBytes: from recordbatch.HeaderSize (61) to 2 GiB - 1.
//   - SegmentTime: above zero.
//   - MaxMessageBytes: at least recordbatch.HeaderSize (61). No client
//     batch fits in 61 bytes, so 61 refuses every batch.
//   - RetentionBytes, RetentionTime: zero or negative keeps everything.
//     (A caller converting Kafka's retention.ms 0, which deletes every
//     segment whose newest record is in the past, can pass one
//     nanosecond: the store compares whole milliseconds.)
type TopicOptions struct {
	SegmentBytes    *int64
	SegmentTime     *time.Duration
	MaxMessageBytes *int
	RetentionBytes  *int64
	RetentionTime   *time.Duration
}

// validate checks the overrides that are set.
func (t TopicOptions) validate() error {
	switch {
	case t.SegmentBytes != nil && (*t.SegmentBytes < recordbatch.HeaderSize || *t.SegmentBytes > math.MaxInt32):
		return fmt.Errorf("SegmentBytes %d: must be from %d to %d", *t.SegmentBytes, recordbatch.HeaderSize, math.MaxInt32)
	case t.SegmentTime != nil && *t.SegmentTime <= 0:
		return fmt.Errorf("SegmentTime %s: must be above zero", *t.SegmentTime)
	case t.MaxMessageBytes != nil && *t.MaxMessageBytes < recordbatch.HeaderSize:
		return fmt.Errorf("MaxMessageBytes %d: must be at least %d", *t.MaxMessageBytes, recordbatch.HeaderSize)
	}
	return nil
}

// apply returns o with the overrides of t in place of its own values.
func (t TopicOptions) apply(o Options) Options {
	if t.SegmentBytes != nil {
		o.SegmentBytes = *t.SegmentBytes
	}
	if t.SegmentTime != nil {
		o.SegmentTime = *t.SegmentTime
	}
	if t.MaxMessageBytes != nil {
		o.MaxMessageBytes = *t.MaxMessageBytes
	}
	if t.RetentionBytes != nil {
		o.RetentionBytes = *t.RetentionBytes
	}
	if t.RetentionTime != nil {
		o.RetentionTime = *t.RetentionTime
	}
	return o
}

// SetTopicOptions sets the overrides of topic's partitions, replacing the
// ones set before (a zero TopicOptions removes them all). They apply to the
// partitions of topic opened after it returns; a partition already open
// keeps the options it was opened with until it is closed and opened
// again. The overrides live in memory only: whoever keeps them (package
// catalog) sets them again after each Open of the store, before it opens
// the topic's partitions.
//
// A topic name Kafka would not accept is refused with an error wrapping
// ErrInvalidName, an override out of its range with an error that says
// which; nothing is changed then.
func (s *Store) SetTopicOptions(topic string, o TopicOptions) error {
	if err := (PartitionID{Topic: topic}).Validate(); err != nil {
		return fmt.Errorf("logstore: set options of topic %q in store %s: %w", topic, s.dir, err)
	}
	if err := o.validate(); err != nil {
		return fmt.Errorf("logstore: set options of topic %q in store %s: %w", topic, s.dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("logstore: set options of topic %q in store %s: %w", topic, s.dir, ErrClosed)
	}
	if o == (TopicOptions{}) {
		delete(s.topicOpts, topic)
		return nil
	}
	if s.topicOpts == nil {
		s.topicOpts = make(map[string]TopicOptions)
	}
	s.topicOpts[topic] = o
	return nil
}

// optionsFor returns the options a partition of topic opens with: the
// store's, with the topic's overrides.
func (s *Store) optionsFor(topic string) Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.topicOpts[topic]; ok {
		return t.apply(s.opts)
	}
	return s.opts
}
