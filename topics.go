package logstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/vfs"
)

// ErrTopicDeleting: Store.Partition was asked for a partition of a topic
// that Store.DeleteTopic is removing at that moment.
var ErrTopicDeleting = errors.New("topic being deleted")

// deleteDirSuffix ends the name a partition directory is renamed to when
// its topic is deleted, as Kafka names it: <topic>-<partition>.<32 hex
// digits>-delete. parsePartitionDir does not parse such a name, so
// Partitions never lists it.
const deleteDirSuffix = "-delete"

// maxDirNameLen is the longest directory name most filesystems take;
// Kafka shortens the topic in a -delete name to stay within it.
const maxDirNameLen = 255

// deleteDirName is the name id's directory is renamed to before it is
// removed: Kafka's, with a random unique id, the topic cut short if the
// whole would pass 255 bytes.
func deleteDirName(id PartitionID) (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", err
	}
	suffix := "-" + strconv.FormatInt(int64(id.Partition), 10) + "." + hex.EncodeToString(u[:]) + deleteDirSuffix
	topic := id.Topic
	if n := maxDirNameLen - len(suffix); len(topic) > n {
		topic = topic[:n]
	}
	return topic + suffix, nil
}

// deleteDirTopic returns the topic of a name deleteDirName makes (or
// Kafka makes for a deleted log), <topic>-<digits>.<32 hex>-delete, with
// the topic as the name holds it (cut short when it was long), and
// whether name is one.
func deleteDirTopic(name string) (string, bool) {
	rest, ok := strings.CutSuffix(name, deleteDirSuffix)
	if !ok || len(rest) < 33 {
		return "", false
	}
	uid := rest[len(rest)-32:]
	for i := 0; i < len(uid); i++ {
		c := uid[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	rest = rest[:len(rest)-32]
	rest, ok = strings.CutSuffix(rest, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || i == len(rest)-1 {
		return "", false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest[:i], true
}

// DeleteTopic removes every partition directory of topic, durably:
//
//  1. Partition refuses the topic (ErrTopicDeleting) until DeleteTopic
//     returns; the topic's open partitions are closed (a *Partition held
//     elsewhere then fails with ErrClosed). A partition that fails to
//     close cleanly does not stop the deletion: its data is going.
//  2. Each partition directory is renamed to <topic>-<p>.<unique>-delete
//     (Kafka's name for a log being deleted), which Partitions never
//     lists, and the store directory is synced: from then on the topic is
//     gone, whatever a crash leaves of the rest.
//  3. The renamed directories are removed, with any -delete directory of
//     the topic an earlier DeleteTopic that failed left behind, and the
//     store directory is synced again. Open removes what a crash left of
//     them.
//
// So after a crash the topic's partitions are each either whole or gone;
// a caller that needs the topic wholly gone (package catalog) records the
// deletion first and calls DeleteTopic again after Open. A topic with no
// partition directory is no error. The topic's options (SetTopicOptions)
// stay set. A name Kafka would not accept is refused with an error
// wrapping ErrInvalidName.
func (s *Store) DeleteTopic(topic string) error {
	if err := (PartitionID{Topic: topic}).Validate(); err != nil {
		return fmt.Errorf("logstore: delete topic %q in store %s: %w", topic, s.dir, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("logstore: delete topic %q in store %s: %w", topic, s.dir, ErrClosed)
	}
	if s.deleting[topic] {
		s.mu.Unlock()
		return fmt.Errorf("logstore: delete topic %q in store %s: %w", topic, s.dir, ErrTopicDeleting)
	}
	if s.deleting == nil {
		s.deleting = make(map[string]bool)
	}
	s.deleting[topic] = true
	var open []*partEntry
	for id, e := range s.parts {
		if id.Topic == topic {
			open = append(open, e)
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.deleting, topic)
		s.mu.Unlock()
	}()

	for _, e := range open {
		<-e.ready
		if e.p != nil {
			_ = e.p.Close() // see step 1 of the doc
		}
	}
	if err := deleteTopicDirs(s.fs, s.dir, topic); err != nil {
		return fmt.Errorf("logstore: delete topic %q in store %s: %w", topic, s.dir, err)
	}
	return nil
}

// deleteTopicDirs is steps 2 and 3 of DeleteTopic. It reads the store
// directory once: the topic's partition directories are renamed, and
// the -delete directories of the topic that a DeleteTopic which failed
// after its renames left are removed with them (a topic cut short in
// the name is left to Open: another long topic may share the cut).
func deleteTopicDirs(fsys vfs.FS, dir, topic string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	var renamed, left []string
	for _, name := range names {
		if t, ok := deleteDirTopic(name); ok {
			if t == topic && len(name) < maxDirNameLen {
				left = append(left, name)
			}
			continue
		}
		id, ok := parsePartitionDir(name)
		if !ok || id.Topic != topic {
			continue
		}
		if _, err := fsys.ReadDir(filepath.Join(dir, name)); err != nil {
			continue // not a directory
		}
		to, err := deleteDirName(id)
		if err != nil {
			return err
		}
		if err := fsys.Rename(filepath.Join(dir, name), filepath.Join(dir, to)); err != nil {
			return err
		}
		renamed = append(renamed, to)
	}
	if len(renamed) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return err
		}
	}
	gone := append(renamed, left...)
	if len(gone) == 0 {
		return nil
	}
	for _, name := range gone {
		if err := removeAll(fsys, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return fsys.SyncDir(dir)
}

// removeDeletedDirs removes what an interrupted DeleteTopic (or Kafka's
// deletion of a log) left in dir: entries named by deleteDirName.
func removeDeletedDirs(fsys vfs.FS, dir string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, name := range names {
		if _, ok := deleteDirTopic(name); !ok {
			continue
		}
		if err := removeAll(fsys, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove %s, left by a topic deletion: %w", name, err)
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return fsys.SyncDir(dir)
}

// removeAll removes path and, if it is a directory (not a symbolic link
// to one), everything below it, through fsys. A path that does not exist
// is no error.
func removeAll(fsys vfs.FS, path string) error {
	fi, err := fsys.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		names, err := fsys.ReadDir(path)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := removeAll(fsys, filepath.Join(path, name)); err != nil {
				return err
			}
		}
	}
	return fsys.Remove(path)
}

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
// ones set before (a zero TopicOptions removes them all). They apply to
// the partitions of topic opened after it returns and, at once, to the
// ones already open (segment.Log.Reconfigure): from its return, the next
// append of each checks its batch against the new MaxMessageBytes and
// SegmentBytes and rolls when the active segment is past the new
// SegmentBytes or SegmentTime, and a retention pass run before it returns
// deletes what the new retention lets go (later ones follow each roll,
// as always). A partition being
// opened meanwhile is waited for and reconfigured too. Concurrent calls
// for one store are serialised, so the open partitions keep the options
// of the call that returned last. The overrides live in memory only:
// whoever keeps them (package catalog) sets them again after each Open of
// the store, before it opens the topic's partitions.
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
	s.setOptsMu.Lock()
	defer s.setOptsMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("logstore: set options of topic %q in store %s: %w", topic, s.dir, ErrClosed)
	}
	if o == (TopicOptions{}) {
		delete(s.topicOpts, topic)
	} else {
		if s.topicOpts == nil {
			s.topicOpts = make(map[string]TopicOptions)
		}
		s.topicOpts[topic] = o
	}
	var open []*partEntry
	for id, e := range s.parts {
		if id.Topic == topic {
			open = append(open, e)
		}
	}
	opts := o.apply(s.opts)
	s.mu.Unlock()
	// An entry added after the unlock opens with the new options.
	var err error
	for _, e := range open {
		<-e.ready
		if e.p != nil {
			err = errors.Join(err, e.p.reconfigure(opts))
		}
	}
	if err != nil {
		return fmt.Errorf("logstore: set options of topic %q in store %s: %w", topic, s.dir, err)
	}
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
