package logstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore/internal/fileutil"
	"github.com/logstore/logstore/internal/kafkackpt"
	"github.com/logstore/logstore/vfs"
)

// lockFileName is the store's lock file, directly in the store directory.
const lockFileName = ".lock"

// maxTopicLen is Kafka's limit on a topic name (Topic.MAX_NAME_LENGTH).
const maxTopicLen = 249

// PartitionID names a partition: a topic and a partition number.
type PartitionID struct {
	Topic     string
	Partition int32
}

// String is the partition's directory name, <topic>-<partition>, as
// Kafka names it.
func (id PartitionID) String() string {
	return id.Topic + "-" + strconv.FormatInt(int64(id.Partition), 10)
}

// Validate checks id by Kafka's rules: a topic of 1 to 249 characters
// from [a-zA-Z0-9._-], not "." or "..", and a partition >= 0, and
// returns an error wrapping ErrInvalidName when it breaks them, whose
// text says what is wrong and has no package prefix (Store.Partition adds
// the context). A valid
// id's directory name has no path separator and is neither "." nor "..",
// so it always stays inside the store directory. Store.Partition checks
// it too; Validate lets a caller check a name without opening anything.
func (id PartitionID) Validate() error {
	t := id.Topic
	switch {
	case t == "":
		return fmt.Errorf("%w: topic name is empty", ErrInvalidName)
	case t == "." || t == "..":
		return fmt.Errorf("%w: topic name cannot be %q", ErrInvalidName, t)
	case len(t) > maxTopicLen:
		return fmt.Errorf("%w: topic name is %d characters long, the limit is %d", ErrInvalidName, len(t), maxTopicLen)
	}
	for i := 0; i < len(t); i++ {
		if !topicChar(t[i]) {
			return fmt.Errorf("%w: topic %q: character %q at %d is not one of [a-zA-Z0-9._-]", ErrInvalidName, t, t[i], i)
		}
	}
	if id.Partition < 0 {
		return fmt.Errorf("%w: topic %q: partition %d is negative", ErrInvalidName, t, id.Partition)
	}
	return nil
}

func topicChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// parsePartitionDir parses a directory name made by PartitionID.String.
// Names it did not make (Kafka's "-delete" and "-future" directories,
// files, a partition number with a sign or leading zeros) do not parse.
func parsePartitionDir(name string) (PartitionID, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return PartitionID{}, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil {
		return PartitionID{}, false
	}
	id := PartitionID{Topic: name[:i], Partition: int32(n)}
	if id.Validate() != nil || id.String() != name {
		return PartitionID{}, false
	}
	return id, true
}

// Store is a directory of partitions, opened by one process at a time.
// It is safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	fs   vfs.FS
	lock *fileLock
	// kafkaStarts are the entries of the store directory's Kafka
	// log-start-offset-checkpoint, read by Open (adopt.go); nil without one.
	kafkaStarts map[kafkackpt.Partition]int64

	mu     sync.Mutex
	closed bool
	parts  map[PartitionID]*partEntry
	// topicOpts are the overrides SetTopicOptions set, by topic, and
	// deleting the topics DeleteTopic is removing (Partition refuses
	// them meanwhile).
	topicOpts map[string]TopicOptions
	deleting  map[string]bool
	// setOptsMu serialises SetTopicOptions, taken before mu: the open
	// partitions end with the options of the call that returned last.
	setOptsMu sync.Mutex

	// txnTracked caches that logstore.transactions-tracked exists
	// (txnmark.go).
	txnTracked atomic.Bool

	// syncer is SyncInterval's background syncer (syncer.go), nil in
	// the other modes.
	syncer *intervalSyncer

	closeOnce sync.Once
	closeErr  error
}

// partEntry is a partition of the cache: being opened until ready is
// closed, then p or err.
type partEntry struct {
	ready chan struct{}
	p     *Partition
	err   error
	// used is when it was last looked up (Store.now, UnixNano), which
	// MaxOpenPartitions's eviction goes by; evicted, set under Store.mu,
	// is closed once an eviction's close of p is done (the entry is
	// gone then, and a lookup opens the partition anew).
	used    atomic.Int64
	evicted chan struct{}
}

// DefaultEvictIdle is Options.EvictIdle when it is 0.
const DefaultEvictIdle = 2 * time.Second

// Open opens the store in dir, creating the directory if needed, and
// takes its lock. It waits up to opts.LockTimeout while another Store
// holds the lock, then fails with an error wrapping ErrStoreInUse.
// Partitions are opened on demand by Store.Partition. Open is
// OpenContext with a context that never ends.
//
// The store directory, its listing and everything below it go through
// the store's filesystem (vfs.OS); only the lock file is on the operating
// system's own (flock needs a real file).
func Open(dir string, opts Options) (*Store, error) {
	return OpenContext(context.Background(), dir, opts)
}

// OpenContext is Open that stops waiting for the lock when ctx ends, with
// an error wrapping ctx's cause (a signal, for the CLI and the server).
func OpenContext(ctx context.Context, dir string, opts Options) (*Store, error) {
	dir = filepath.Clean(dir)
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("logstore: open store %s: %w", dir, err)
	}
	if err := createStoreDir(opts.fs, dir); err != nil {
		return nil, fmt.Errorf("logstore: open store %s: %w", dir, err)
	}
	// The lock stays on the real OS, not opts.fs: flock locks between processes, which an FS cannot model.
	lock, err := lockFile(ctx, filepath.Join(dir, lockFileName), opts.LockTimeout)
	if err != nil {
		return nil, fmt.Errorf("logstore: open store %s: %w", dir, err)
	}
	if err := removeDeletedDirs(opts.fs, dir); err != nil {
		return nil, errors.Join(fmt.Errorf("logstore: open store %s: %w", dir, err), lock.unlock())
	}
	kafkaStarts, err := readKafkaLogStarts(opts.fs, dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("logstore: open store %s: %w (correct it, or remove it to start each adopted partition at its first segment)", dir, err), lock.unlock())
	}
	s := &Store{
		dir:         dir,
		opts:        opts,
		fs:          opts.fs,
		lock:        lock,
		kafkaStarts: kafkaStarts,
		parts:       make(map[PartitionID]*partEntry),
	}
	if d := opts.Sync.Interval(); d > 0 {
		s.syncer = startIntervalSyncer(s, d)
	}
	return s, nil
}

// createStoreDir creates dir and any missing parents, and syncs the
// parent of each directory it created, so the new store survives a crash.
func createStoreDir(fsys vfs.FS, dir string) error {
	fi, err := fsys.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The directories MkdirAll is about to create, deepest first.
	var created []string
	for d := dir; ; {
		if _, err := fsys.Stat(d); err == nil {
			break
		}
		if fi, err := fsys.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// MkdirAll would only say "file exists".
			target, _ := fsys.Readlink(d)
			return fmt.Errorf("%s is a symbolic link to %s, which does not exist", d, target)
		}
		created = append(created, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Options returns the options the store was opened with, after Open's
// checks: a zero segment field still means Kafka's default (see
// Options). The server reports them as the store-wide (broker) values of
// the topic configs it applies (DescribeConfigs).
func (s *Store) Options() Options { return s.opts }

// Partition returns the partition topic-partition, opening it (and
// creating its directory) on first use. Later calls return the same
// *Partition until it is closed. A name Kafka would not accept is refused
// with an error wrapping ErrInvalidName before any file is touched.
//
// Opening a partition recovers its log (see Partition.Recovery); callers
// asking for a partition that is being opened wait for it, others do not.
func (s *Store) Partition(topic string, partition int32) (*Partition, error) {
	return s.partition(topic, partition, true)
}

// partition is Partition, and ExistingPartition without create.
func (s *Store) partition(topic string, partition int32, create bool) (*Partition, error) {
	id := PartitionID{Topic: topic, Partition: partition}
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("logstore: open partition (topic %q, partition %d) in store %s: %w", topic, partition, s.dir, err)
	}
	var e *partEntry
	for e == nil {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, ErrClosed)
		}
		if s.deleting[topic] {
			s.mu.Unlock()
			return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, ErrTopicDeleting)
		}
		if old, ok := s.parts[id]; ok {
			if ev := old.evicted; ev != nil {
				// Being closed for the bound: open it anew after.
				s.mu.Unlock()
				<-ev
				continue
			}
			s.mu.Unlock()
			<-old.ready
			old.used.Store(s.clock().UnixNano())
			return old.p, old.err
		}
		if m := s.opts.MaxOpenPartitions; m > 0 && len(s.parts) >= m {
			victim := s.coldestLocked()
			if victim == nil {
				open := len(s.parts)
				s.mu.Unlock()
				return nil, fmt.Errorf("logstore: open partition %s in store %s: %d open, every one in use: %w", id, s.dir, open, ErrTooManyOpenPartitions)
			}
			victim.evicted = make(chan struct{})
			s.mu.Unlock()
			s.evict(victim)
			continue
		}
		e = &partEntry{ready: make(chan struct{})}
		e.used.Store(s.clock().UnixNano())
		s.parts[id] = e
		s.mu.Unlock()
	}

	began := time.Now()
	p, err := s.openPartition(id, create)
	s.opts.Events.partitionOpened(id, began, p, err)

	s.mu.Lock()
	if err != nil {
		// Forget the failure: a later call tries again.
		delete(s.parts, id)
	}
	e.p, e.err = p, err
	closed := s.closed
	close(e.ready)
	s.mu.Unlock()
	if closed && err == nil {
		// Close began while we opened; it waits for ready and closes p.
		return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, ErrClosed)
	}
	return p, err
}

func (s *Store) openPartition(id PartitionID, create bool) (*Partition, error) {
	pdir := filepath.Join(s.dir, id.String())
	if !create {
		if err := s.existingPartitionDir(pdir); err != nil {
			return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, err)
		}
	} else if err := s.createPartitionDir(pdir); err != nil {
		return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, err)
	}
	p, err := openPartition(s, id, pdir)
	if err != nil {
		return nil, fmt.Errorf("logstore: open partition %s in store %s: %w", id, s.dir, err)
	}
	return p, nil
}

// createPartitionDir creates pdir if it does not exist, and then syncs the
// store directory so the new entry is durable.
func (s *Store) createPartitionDir(pdir string) error {
	_, err := s.fs.ReadDir(pdir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := s.fs.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// IsOpen says whether partition topic-partition is open (or being
// opened) now; it opens nothing.
func (s *Store) IsOpen(topic string, partition int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts[PartitionID{Topic: topic, Partition: partition}]
	return ok
}

// LetIdle says that p, looked up for a glance (a scan of every
// partition, as the transaction coordinator's at its open), will not be
// used again soon: under MaxOpenPartitions it may be closed first,
// whatever EvictIdle says.
func (s *Store) LetIdle(p *Partition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.parts[p.id]; ok && e.p == p {
		e.used.Store(0)
	}
}

// clock is the store's clock: Options' now, or time.Now.
func (s *Store) clock() time.Time {
	if s.opts.now != nil {
		return s.opts.now()
	}
	return time.Now()
}

// coldestLocked is the open partition to close for MaxOpenPartitions:
// the least recently looked up of those idle for EvictIdle, or else of
// all, so that a request naming more partitions than the bound (a fetch
// of hundreds) gets through them instead of finding the same ones
// always in use; never one a DurableWatcher watches (a long-poll
// fetch), nor one being opened. Nil when there is none. s.mu is held.
func (s *Store) coldestLocked() *partEntry {
	idle := cmp.Or(s.opts.EvictIdle, DefaultEvictIdle)
	before := s.clock().Add(-idle).UnixNano()
	var coldest, coldestIdle *partEntry
	for _, e := range s.parts {
		select {
		case <-e.ready:
		default:
			continue // being opened
		}
		if e.p == nil || e.evicted != nil || e.p.durableSig.watched() {
			continue
		}
		used := e.used.Load()
		if coldest == nil || used < coldest.used.Load() {
			coldest = e
		}
		if used <= before && (coldestIdle == nil || used < coldestIdle.used.Load()) {
			coldestIdle = e
		}
	}
	if coldestIdle != nil {
		return coldestIdle
	}
	return coldest
}

// evict closes e's partition for MaxOpenPartitions (Close forgets it),
// then lets the lookups waiting for it go on.
func (s *Store) evict(e *partEntry) {
	err := e.p.Close()
	s.mu.Lock()
	if cur, ok := s.parts[e.p.id]; ok && cur == e {
		delete(s.parts, e.p.id) // a close that failed forgets it too
	}
	s.mu.Unlock()
	close(e.evicted)
	s.opts.Events.partitionEvicted(e.p.id, err)
}

// forget drops p from the cache, if it is still the cached partition.
func (s *Store) forget(p *Partition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.parts[p.id]; ok && e.p == p {
		delete(s.parts, p.id)
	}
}

// Partitions lists the partition directories in the store, open or not,
// sorted by topic and partition. Entries whose names are not
// <topic>-<partition> directories are ignored.
func (s *Store) Partitions() ([]PartitionID, error) {
	names, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: list partitions of store %s: %w", s.dir, err)
	}
	var ids []PartitionID
	for _, name := range names {
		id, ok := parsePartitionDir(name)
		if !ok {
			continue
		}
		// A directory (or a link to one); not a file of the same name.
		// One stat each: a store lists thousands at every open.
		if fi, err := s.fs.Stat(filepath.Join(s.dir, name)); err == nil && fi.IsDir() {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b PartitionID) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return ids, nil
}

// OpenPartitions returns the partitions of the store that are open now,
// sorted by topic and partition; those still being opened are left out
// (it never waits for an open). Unlike Partitions, it reads no directory.
func (s *Store) OpenPartitions() []*Partition {
	s.mu.Lock()
	out := make([]*Partition, 0, len(s.parts))
	for _, e := range s.parts {
		select {
		case <-e.ready:
			if e.p != nil {
				out = append(out, e.p)
			}
		default:
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Partition) int {
		return cmp.Or(strings.Compare(a.id.Topic, b.id.Topic), cmp.Compare(a.id.Partition, b.id.Partition))
	})
	return out
}

// FS returns the filesystem the store keeps its directory on (vfs.OS,
// unless a test set another). Packages that keep files of their own in
// the store's partition directories (package catalog's partition.metadata)
// go through it, so that tests can inject faults and simulate power loss
// in their files as in the store's.
func (s *Store) FS() vfs.FS { return s.fs }

// Close closes every open partition (a clean shutdown of each log, which
// syncs it) and releases the store's lock. Partitions returned earlier
// fail with ErrClosed afterwards. Close returns the errors of every
// partition, joined; calling it again returns the same result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		entries := make([]*partEntry, 0, len(s.parts))
		for _, e := range s.parts {
			entries = append(entries, e)
		}
		s.mu.Unlock()
		// The syncer first: Close syncs every partition anyway.
		if s.syncer != nil {
			s.syncer.close()
		}

		var errs []error
		for _, e := range entries {
			<-e.ready
			if e.p != nil {
				errs = append(errs, e.p.Close())
			}
		}
		if err := s.lock.unlock(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close store %s: %w", s.dir, err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// fileLock is the store's exclusive flock on its lock file
// (fileutil.Flock): one open store per directory, across processes.
type fileLock struct{ f *os.File }

// lockFile takes an exclusive lock on path, creating the file if needed.
// It retries until timeout has passed (once when timeout < 0), then fails
// with an error wrapping ErrStoreInUse; it stops waiting when ctx ends,
// with an error wrapping ctx's cause.
func lockFile(ctx context.Context, path string, timeout time.Duration) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := fileutil.Flock(ctx, f, true, timeout); err != nil {
		f.Close()
		if errors.Is(err, fileutil.ErrLocked) {
			return nil, fmt.Errorf("lock %s: held by another open store (waited %s): %w", path, max(timeout, 0), ErrStoreInUse)
		}
		return nil, err
	}
	return &fileLock{f: f}, nil
}

// unlock releases the lock. The file stays: removing it would let two
// openers lock two different files of the same name.
func (l *fileLock) unlock() error {
	err := fileutil.Funlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
