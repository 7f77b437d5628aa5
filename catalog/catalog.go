package catalog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/boltfile"
)

// FileName is the catalog's bbolt file, at the root of the store
// directory.
const FileName = "catalog.db"

// ProducerIDBlock is how many producer ids are reserved, durably, in one
// bbolt commit before any of them is handed out.
const ProducerIDBlock = 1000

// MaxPartitions is the most partitions CreateTopic makes for one topic:
// Kafka refuses more than 10,000 partitions in one request.
const MaxPartitions = 10000

// formatVersion is the layout of catalog.db this package writes.
const formatVersion = 1

// Buckets and keys of catalog.db.
var (
	bucketMeta   = []byte("meta")
	bucketTopics = []byte("topics")
	keyVersion   = []byte("version")
	keyClusterID = []byte("cluster-id")
	keyNextPID   = []byte("producer-ids-reserved")
)

// Topic states in catalog.db.
const (
	stateCreating = "creating"
	stateReady    = "ready"
	stateDeleting = "deleting"
)

// Topic is a topic the catalog holds.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions int32
	// Configs are the Kafka topic configs it was created with, or last
	// given to AlterTopicConfigs, as given.
	Configs map[string]string
}

// topicRecord is a topic's value in the topics bucket (JSON).
type topicRecord struct {
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	State      string            `json:"state"`
	// Growing is the count a CreatePartitions grows a "ready" topic to,
	// above Partitions, until the growth's last commit (0: none).
	Growing int32 `json:"growing,omitempty"`
}

// unfinishedTopic is a topic whose creation (state stateCreating) or
// deletion (stateDeleting) failed part way in this process.
type unfinishedTopic struct {
	t     Topic
	state string
}

// Catalog is the durable cluster-wide state of a store. It is safe for
// concurrent use.
type Catalog struct {
	store *logstore.Store
	db    *bolt.DB
	path  string

	clusterID string

	// mu guards topics, unfinished and growing and serializes
	// CreateTopic, DeleteTopic, CreatePartitions and UpdateTopicConfigs.
	mu     sync.Mutex
	topics map[string]Topic
	// shown is what Topic, Topics and SharedTopic read, without mu: a
	// copy of topics, published (under mu) after each change to it.
	// Neither a published map nor the Configs of a Topic in it is ever
	// modified: a change publishes a new map.
	shown atomic.Pointer[map[string]Topic]
	// unfinished holds the topics whose creation or deletion failed
	// part way (an I/O error): catalog.db says "creating" or
	// "deleting", some directories may be left. They are not in topics.
	unfinished map[string]unfinishedTopic
	// growing holds the topics whose growth (CreatePartitions)
	// is committed in catalog.db but not finished: name -> the count it
	// grows to. putTopic writes it into the entry.
	growing map[string]int32
	closed  bool

	// pidMu guards the producer id allocator: nextPID is the next id to
	// hand out, reserved the first id not reserved in catalog.db.
	pidMu    sync.Mutex
	nextPID  int64
	reserved int64
}

// Open opens the catalog of store, DIR/catalog.db (created if absent),
// and brings the store in line with it (see the package doc): it
// finishes or undoes what a crash interrupted, adopts partition
// directories the catalog does not know, and sets every topic's configs
// on the store (a partition of a catalog topic already open takes them
// at once, as logstore.Store.SetTopicOptions applies them).
func Open(store *logstore.Store) (*Catalog, error) {
	path := filepath.Join(store.Dir(), FileName)
	db, err := openBolt(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: open %s: %w", path, err)
	}
	c := &Catalog{store: store, db: db, path: path, topics: map[string]Topic{}, unfinished: map[string]unfinishedTopic{}, growing: map[string]int32{}}
	if err := c.load(); err != nil {
		return nil, errors.Join(fmt.Errorf("catalog: open %s: %w", path, err), db.Close())
	}
	if err := c.reconcile(); err != nil {
		return nil, errors.Join(fmt.Errorf("catalog: open %s: %w", path, err), db.Close())
	}
	c.publish()
	return c, nil
}

// publish makes the topics as they are now what Topic, Topics and
// SharedTopic show. The caller holds mu (or is Open). A copy of the
// whole map per change: changes are rare (each is a catalog.db commit at
// least), lookups are per partition of every request.
func (c *Catalog) publish() {
	m := maps.Clone(c.topics)
	c.shown.Store(&m)
}

// shownTopics is the map last published (nil before Open publishes).
func (c *Catalog) shownTopics() map[string]Topic {
	if m := c.shown.Load(); m != nil {
		return *m
	}
	return nil
}

// openBolt opens path (boltfile.Open): a damaged file is an error
// matching ErrDamaged.
func openBolt(path string) (*bolt.DB, error) {
	return boltfile.Open(path, &bolt.Options{Timeout: 10 * time.Second}, ErrDamaged)
}

// load creates the buckets and the cluster id on first open, and reads
// the topics and the producer id reservation.
func (c *Catalog) load() error {
	return c.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		topics, err := tx.CreateBucketIfNotExists(bucketTopics)
		if err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v == nil {
			if err := meta.Put(keyVersion, []byte{formatVersion}); err != nil {
				return err
			}
		} else if len(v) != 1 || v[0] != formatVersion {
			return fmt.Errorf("%w: format version %v, this build reads %d", ErrDamaged, v, formatVersion)
		}
		if v := meta.Get(keyClusterID); v != nil {
			c.clusterID = string(v)
		} else {
			id, err := newKafkaUUID()
			if err != nil {
				return err
			}
			c.clusterID = id.String()
			if err := meta.Put(keyClusterID, []byte(c.clusterID)); err != nil {
				return err
			}
		}
		if v := meta.Get(keyNextPID); v != nil {
			if len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < 0 {
				return fmt.Errorf("%w: the producer id reservation %x is not a non-negative 64-bit integer", ErrDamaged, v)
			}
			c.reserved = int64(binary.BigEndian.Uint64(v))
		}
		// Ids below the reservation may have been handed out before a
		// crash: start after it.
		c.nextPID = c.reserved
		return topics.ForEach(func(k, v []byte) error {
			var r topicRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("%w: topic %q: %w", ErrDamaged, k, err)
			}
			id, err := ParseTopicID(r.ID)
			if err != nil {
				return fmt.Errorf("%w: topic %q: %w", ErrDamaged, k, err)
			}
			name := string(k)
			if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
				return fmt.Errorf("%w: topic %q: %w", ErrDamaged, k, err)
			}
			if r.Partitions < 1 {
				return fmt.Errorf("%w: topic %q: %d partitions", ErrDamaged, k, r.Partitions)
			}
			switch r.State {
			case stateReady:
				c.topics[name] = Topic{Name: name, ID: id, Partitions: r.Partitions, Configs: r.Configs}
				if r.Growing != 0 {
					if r.Growing <= r.Partitions || r.Growing > MaxPartitions {
						return fmt.Errorf("%w: topic %q: %d partitions growing to %d", ErrDamaged, k, r.Partitions, r.Growing)
					}
					c.growing[name] = r.Growing
				}
			case stateCreating, stateDeleting:
				// reconcile finishes these.
				c.topics[name] = Topic{Name: name, ID: id, Partitions: -1}
			default:
				return fmt.Errorf("%w: topic %q: unknown state %q", ErrDamaged, k, r.State)
			}
			return nil
		})
	})
}

// reconcile is the second half of Open: interrupted creations and
// deletions are removed, configs are set on the store, and unknown
// partition directories are adopted.
func (c *Catalog) reconcile() error {
	for name, t := range c.topics {
		if t.Partitions >= 0 {
			continue
		}
		// Created or deleted half-way: either way the topic goes.
		if err := c.store.DeleteTopic(name); err != nil {
			return err
		}
		if err := c.deleteRecord(name); err != nil {
			return err
		}
		delete(c.topics, name)
	}
	for name, t := range c.topics {
		o, err := ParseConfigs(t.Configs)
		if err != nil {
			return fmt.Errorf("topic %q: %w", name, err)
		}
		if err := c.store.SetTopicOptions(name, o); err != nil {
			return err
		}
	}
	if err := c.finishGrowths(); err != nil {
		return err
	}
	ids, err := c.store.Partitions()
	if err != nil {
		return err
	}
	found := map[string]int32{} // topic -> highest partition directory
	var names []string
	for _, id := range ids {
		if _, ok := found[id.Topic]; !ok {
			names = append(names, id.Topic)
		}
		found[id.Topic] = max(found[id.Topic], id.Partition)
	}
	for _, name := range names {
		if err := c.adopt(name, found[name]+1); err != nil {
			return err
		}
	}
	// A topic whose directories are all gone (removed by hand) is made
	// whole again too.
	for name, t := range c.topics {
		if _, ok := found[name]; !ok {
			if err := c.ensureDirs(t, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// adopt makes the catalog hold topic name with at least count
// partitions: a topic it does not know is added, with the id its
// partition.metadata files name or a new one; one it knows grows to
// count if a directory above its partitions appeared. Every partition
// directory gets its partition.metadata (and missing ones are made)
// before the catalog commits, so a crash in between adopts again with
// the same id. The caller publishes the change (Open once at its end, so
// adopting many topics does not copy the map for each).
func (c *Catalog) adopt(name string, count int32) error {
	t, known := c.topics[name]
	if known && count <= t.Partitions {
		return c.ensureDirs(t, 0)
	}
	if !known {
		t = Topic{Name: name}
		for p := range count {
			id, err := ReadPartitionMetadata(c.store.FS(), c.partitionDir(name, p))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("adopt topic %q: %w", name, err)
			}
			if t.ID.IsZero() {
				t.ID = id
			} else if id != t.ID {
				return fmt.Errorf("adopt topic %q: %w: partition %d names %s, an earlier one %s", name, ErrInconsistentTopicID, p, id, t.ID)
			}
		}
		if t.ID.IsZero() {
			id, err := c.newTopicID()
			if err != nil {
				return err
			}
			t.ID = id
		}
	}
	t.Partitions = count
	if err := c.ensureDirs(t, 0); err != nil {
		return err
	}
	var reserve int64 = -1
	if !known {
		reserve = c.maxProducerID(t)
	}
	if err := c.putTopic(t, stateReady, reserve); err != nil {
		return err
	}
	c.topics[name] = t
	return nil
}

// maxProducerID opens the partitions of an adopted topic and returns the
// highest producer id their state remembers (-1 for none), so that the
// allocator hands out none of them: a producer the log remembers at
// epoch 0 would see its new batches refused. A partition that does not
// open is skipped (it cannot be served either).
func (c *Catalog) maxProducerID(t Topic) int64 {
	var hi int64 = -1
	for p := range t.Partitions {
		part, err := c.store.Partition(t.Name, p)
		if err != nil {
			continue
		}
		for _, e := range part.ProducerSnapshot().Producers {
			hi = max(hi, e.ProducerID)
		}
	}
	return hi
}

// ensureDirs makes partition directories from..t.Partitions-1 exist,
// each with a partition.metadata naming t.ID, and syncs the store
// directory. A partition.metadata naming another id is an error.
func (c *Catalog) ensureDirs(t Topic, from int32) error {
	fsys := c.store.FS()
	made := false
	good := c.goodMetadata(t, from)
	for p := from; p < t.Partitions; p++ {
		if good[p-from] {
			continue
		}
		pdir := c.partitionDir(t.Name, p)
		if _, err := fsys.Stat(pdir); errors.Is(err, fs.ErrNotExist) {
			if err := fsys.MkdirAll(pdir, 0o755); err != nil {
				return err
			}
			made = true
		} else if err != nil {
			return err
		}
		id, err := ReadPartitionMetadata(fsys, pdir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := WritePartitionMetadata(fsys, pdir, t.ID); err != nil {
				return fmt.Errorf("topic %q: %w", t.Name, err)
			}
		case err != nil:
			return fmt.Errorf("topic %q: %w", t.Name, err)
		case id != t.ID:
			return fmt.Errorf("topic %q: %w: %s names %s, the catalog %s", t.Name, ErrInconsistentTopicID, filepath.Join(pdir, MetadataFileName), id, t.ID)
		}
	}
	if made {
		return fsys.SyncDir(c.store.Dir())
	}
	return nil
}

// metadataReaders bounds the partition.metadata files goodMetadata
// reads at once.
const metadataReaders = 8

// goodMetadata says, for each partition of t from from on, whether its
// directory's partition.metadata names t's id: read several at once, as
// every open of a store of thousands of partitions reads them all.
func (c *Catalog) goodMetadata(t Topic, from int32) []bool {
	n := int(t.Partitions - from)
	good := make([]bool, max(n, 0))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(metadataReaders, n) {
		wg.Go(func() {
			for i := range next {
				id, err := ReadPartitionMetadata(c.store.FS(), c.partitionDir(t.Name, from+int32(i)))
				good[i] = err == nil && id == t.ID
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return good
}

func (c *Catalog) partitionDir(topic string, p int32) string {
	return filepath.Join(c.store.Dir(), logstore.PartitionID{Topic: topic, Partition: p}.String())
}

// newTopicID returns a random id no topic of the catalog has.
func (c *Catalog) newTopicID() (TopicID, error) {
	for {
		id, err := newKafkaUUID()
		if err != nil {
			return id, err
		}
		if !slices.ContainsFunc(slices.Collect(maps.Values(c.topics)), func(t Topic) bool { return t.ID == id }) {
			return id, nil
		}
	}
}

// putTopic commits t in state, with the count it grows to if a growth
// is pending (c.growing); reserve >= 0 also moves the producer id
// reservation past it, in the same transaction.
func (c *Catalog) putTopic(t Topic, state string, reserve int64) error {
	v, err := json.Marshal(topicRecord{ID: t.ID.String(), Partitions: t.Partitions, Configs: t.Configs, State: state, Growing: c.growing[t.Name]})
	if err != nil {
		return err
	}
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	next := c.reserved
	if reserve >= c.reserved {
		if reserve == math.MaxInt64 {
			return fmt.Errorf("adopt topic %q: %w: its partitions remember producer id %d", t.Name, ErrProducerIDsExhausted, reserve)
		}
		next = reserve + 1
	}
	err = c.db.Update(func(tx *bolt.Tx) error {
		if next != c.reserved {
			if err := tx.Bucket(bucketMeta).Put(keyNextPID, binary.BigEndian.AppendUint64(nil, uint64(next))); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketTopics).Put([]byte(t.Name), v)
	})
	if err != nil {
		return err
	}
	if next != c.reserved {
		// The ids between are skipped: none of the block is out yet.
		c.reserved, c.nextPID = next, next
	}
	return nil
}

func (c *Catalog) deleteRecord(name string) error {
	return c.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTopics).Delete([]byte(name))
	})
}

// Close closes catalog.db. It does not close the store.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("catalog: close %s: %w", c.path, err)
	}
	return nil
}

// ClusterID is the store's cluster id, made at the first Open and kept
// in catalog.db: Kafka's form, a random UUID as 22 base64url characters.
func (c *Catalog) ClusterID() string { return c.clusterID }

// NewProducerID hands out a producer id no call has returned before, in
// this process or any earlier one, however it ended: ids are reserved in
// blocks of ProducerIDBlock, and a block is committed to catalog.db
// (fsynced) before its first id is returned; an Open starts after the
// last reservation. Ids start at 0 and never go negative.
func (c *Catalog) NewProducerID() (int64, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("catalog: new producer id: %w", ErrClosed)
	}
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	if c.nextPID == c.reserved {
		if c.reserved == math.MaxInt64 {
			return 0, fmt.Errorf("catalog: new producer id: %w", ErrProducerIDsExhausted)
		}
		next := c.reserved + min(ProducerIDBlock, math.MaxInt64-c.reserved)
		err := c.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyNextPID, binary.BigEndian.AppendUint64(nil, uint64(next)))
		})
		if err != nil {
			return 0, fmt.Errorf("catalog: reserve producer ids in %s: %w", c.path, err)
		}
		c.reserved = next
	}
	id := c.nextPID
	c.nextPID++
	return id, nil
}

// Topics returns every topic, sorted by name; their Configs are the
// caller's own. It takes no lock (see Topic).
func (c *Catalog) Topics() []Topic {
	shown := c.shownTopics()
	out := make([]Topic, 0, len(shown))
	for _, t := range shown {
		out = append(out, cloneTopic(t))
	}
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Topic returns the topic named name, its Configs the caller's own (a
// copy). It takes no lock: it reads the topics as the last change left
// them, and does not wait for a CreateTopic or DeleteTopic under way
// (see the package doc for when a change shows).
func (c *Catalog) Topic(name string) (Topic, bool) {
	t, ok := c.shownTopics()[name]
	return cloneTopic(t), ok
}

// SharedTopic is Topic without the copy: it takes no lock and allocates
// nothing, for a lookup on every partition of every request. The
// returned Configs map is the catalog's own, shared with every other
// caller: it is read-only, and must not be modified (the catalog never
// modifies it either; a change of the topic publishes a new one).
func (c *Catalog) SharedTopic(name string) (Topic, bool) {
	t, ok := c.shownTopics()[name]
	return t, ok
}

func cloneTopic(t Topic) Topic {
	t.Configs = maps.Clone(t.Configs)
	return t
}

// collisionKey is name with '.' as '_': Kafka refuses a topic whose key
// equals another's (their metric names would be the same).
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// internalTopics are the names of Kafka's internal topics, which
// CreateTopic refuses: logstore serve keeps their state in groups.db and
// transactions.db, and routes a transaction's marker for a partition of
// __consumer_offsets to the group coordinator, so a topic of that name
// would never get its markers. (Kafka refuses __cluster_metadata and
// makes the others itself.)
var internalTopics = []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata"}

// CreateTopic creates topic name with partitions partitions and the
// given Kafka configs, durably before it returns: the catalog entry, each
// partition directory with its partition.metadata, and the configs set on
// the store. With validateOnly it checks everything and changes nothing
// (the returned Topic then has a zero ID).
//
// Refusals, in Kafka's order: a bad name (ErrInvalidTopic, wrapping
// logstore.ErrInvalidName), the name of one of Kafka's internal topics
// (ErrInvalidTopic: see internalTopics), a name the catalog holds (ErrTopicExists),
// a name that collides with one it holds when '.' and '_' are taken as
// the same (ErrInvalidTopic), a partition count outside 1..MaxPartitions
// (ErrInvalidPartitions), a config (*ConfigError).
func (c *Catalog) CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (Topic, error) {
	fail := func(err error) (Topic, error) {
		return Topic{}, fmt.Errorf("catalog: create topic %q: %w", name, err)
	}
	if err := (logstore.PartitionID{Topic: name}).Validate(); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrInvalidTopic, err))
	}
	if slices.Contains(internalTopics, name) {
		return fail(fmt.Errorf("%w: the name of one of Kafka's internal topics, whose state logstore serve keeps in files of its own (groups.db, transactions.db)", ErrInvalidTopic))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fail(ErrClosed)
	}
	if _, ok := c.topics[name]; ok {
		return fail(ErrTopicExists)
	}
	if u, ok := c.unfinished[name]; ok && u.state == stateDeleting {
		return fail(ErrTopicMarkedForDeletion)
	}
	if strings.ContainsAny(name, "._") {
		key := collisionKey(name)
		collides := func(other string) error {
			if collisionKey(other) == key {
				return fmt.Errorf("%w: it collides with existing topic %q ('.' and '_' are the same in metric names)", ErrInvalidTopic, other)
			}
			return nil
		}
		for other := range c.topics {
			if err := collides(other); err != nil {
				return fail(err)
			}
		}
		for other, u := range c.unfinished {
			if u.state != stateDeleting {
				continue
			}
			if err := collides(other); err != nil {
				return fail(err)
			}
		}
	}
	if partitions < 1 || partitions > MaxPartitions {
		return fail(fmt.Errorf("%w: %d, must be from 1 to %d", ErrInvalidPartitions, partitions, MaxPartitions))
	}
	opts, err := ParseConfigs(configs)
	if err != nil {
		return fail(err)
	}
	t := Topic{Name: name, Partitions: partitions, Configs: maps.Clone(configs)}
	if len(t.Configs) == 0 {
		t.Configs = nil
	}
	if validateOnly {
		return cloneTopic(t), nil
	}
	if _, ok := c.unfinished[name]; ok {
		// An earlier attempt failed and could not undo itself: undo it
		// now, before anything of it could be taken as adoptable.
		if err := c.removeUnfinished(name); err != nil {
			return fail(fmt.Errorf("undo an earlier failed creation: %w", err))
		}
	}
	if err := c.adoptStray(name, partitions); err != nil {
		return fail(err)
	}
	if t.ID, err = c.newTopicID(); err != nil {
		return fail(err)
	}
	// 1. The entry, "creating": from here a crash undoes the topic at
	// the next Open.
	if err := c.putTopic(t, stateCreating, -1); err != nil {
		// bbolt rolled the commit back: nothing was written.
		return fail(err)
	}
	err = c.createDirs(t, opts)
	if err == nil {
		// 4. "ready": the topic exists.
		err = c.putTopic(t, stateReady, -1)
	}
	if err != nil {
		// Undo now if we can; if not, a retried CreateTopic or the
		// next Open does, and until then the name is held here so
		// nothing adopts what is left of it.
		c.unfinished[name] = unfinishedTopic{t: t, state: stateCreating}
		_ = c.removeUnfinished(name)
		return fail(err)
	}
	c.topics[name] = t
	c.publish()
	return cloneTopic(t), nil
}

// removeUnfinished removes topic name, whose creation or deletion
// failed part way: its directories (logstore.Store.DeleteTopic), its
// configs on the store, then its catalog.db entry. Only then does it
// forget the name; on an error it stays unfinished.
func (c *Catalog) removeUnfinished(name string) error {
	if err := c.store.DeleteTopic(name); err != nil {
		return err
	}
	_ = c.store.SetTopicOptions(name, logstore.TopicOptions{})
	if err := c.deleteRecord(name); err != nil {
		return err
	}
	delete(c.unfinished, name)
	delete(c.growing, name)
	return nil
}

// adoptStray handles partition directories of name made since Open
// outside the catalog (logstore.Store.Partition of an unknown topic): if
// one of the first partitions partitions exists, the directories are
// adopted as Open would adopt them, and the creation is refused with
// ErrTopicExists rather than mixing them into a new topic (or, on a
// failure, deleting what was there before).
func (c *Catalog) adoptStray(name string, partitions int32) error {
	fsys := c.store.FS()
	stray := false
	for p := range partitions {
		if _, err := fsys.Lstat(c.partitionDir(name, p)); err == nil {
			stray = true
			break
		}
	}
	if !stray {
		return nil
	}
	ids, err := c.store.Partitions()
	if err != nil {
		return err
	}
	var count int32
	for _, id := range ids {
		if id.Topic == name {
			count = max(count, id.Partition+1)
		}
	}
	if count == 0 {
		// A file, not a directory: the store cannot use the name.
		return fmt.Errorf("%w: an entry of the store directory that is not a partition directory has the name of one of its partitions", ErrInvalidTopic)
	}
	if err := c.adopt(name, count); err != nil {
		return err
	}
	c.publish()
	return fmt.Errorf("%w: its partition directories were made outside the catalog, and are now adopted as they are", ErrTopicExists)
}

// createDirs is steps 2 and 3 of CreateTopic: the configs on the store,
// then the directories, the store directory synced, then each
// directory's partition.metadata. Directories of the name that exist already (made
// outside the catalog since Open) are taken as they are; one naming
// another topic id is an error.
func (c *Catalog) createDirs(t Topic, opts logstore.TopicOptions) error {
	if err := c.store.SetTopicOptions(t.Name, opts); err != nil {
		return err
	}
	fsys := c.store.FS()
	for p := range t.Partitions {
		if err := fsys.MkdirAll(c.partitionDir(t.Name, p), 0o755); err != nil {
			return err
		}
	}
	if err := fsys.SyncDir(c.store.Dir()); err != nil {
		return err
	}
	return c.ensureDirs(t, 0)
}

// DeleteTopic deletes topic name durably: once it returns the topic is
// gone, and after a crash at any point the next Open shows it wholly
// there or wholly gone. Its partitions are closed and its directories
// removed (logstore.Store.DeleteTopic). It returns the topic as it was.
// An unknown name is ErrUnknownTopic.
//
// If the deletion fails after its catalog.db entry says "deleting" (an
// I/O error removing a directory), the topic stays marked for deletion:
// Topics and Topic no longer show it, CreateTopic of the name is refused
// (ErrTopicMarkedForDeletion), and a retried DeleteTopic finishes the
// deletion and returns the topic, as Kafka accepts a second deletion of
// a topic marked for deletion; the next Open finishes it too.
func (c *Catalog) DeleteTopic(name string) (Topic, error) {
	fail := func(err error) (Topic, error) {
		return Topic{}, fmt.Errorf("catalog: delete topic %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fail(ErrClosed)
	}
	t, ok := c.topics[name]
	if !ok {
		u, ok := c.unfinished[name]
		if !ok || u.state != stateDeleting {
			// A failed creation never made a topic.
			return fail(ErrUnknownTopic)
		}
		t = u.t
	} else {
		// 1. "deleting": from here the next Open finishes the deletion.
		if err := c.putTopic(t, stateDeleting, -1); err != nil {
			return fail(err)
		}
		delete(c.topics, name)
		c.publish()
		c.unfinished[name] = unfinishedTopic{t: t, state: stateDeleting}
	}
	// 2. The directories (renamed, synced, removed), then 3. the entry.
	if err := c.removeUnfinished(name); err != nil {
		return fail(err)
	}
	return cloneTopic(t), nil
}
