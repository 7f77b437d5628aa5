package catalog

import (
	"fmt"
)

// CreatePartitions grows topic name to total partitions, durably before
// it returns: the new partitions' directories, each with its
// partition.metadata, then the catalog entry with the new count; the
// topic's configs (set on the store per topic) apply to them as to the
// others. It returns the topic as it is now. With validateOnly it checks
// everything and changes nothing (the returned Topic is the one growth
// would make).
//
// Refusals, in Kafka's order (ReplicationControlManager.createPartitions):
// a topic the catalog does not show, including one whose creation or
// deletion is unfinished (ErrUnknownTopic, as Kafka no longer knows a
// deleted topic); total equal to the current count or below it,
// negative included (ErrInvalidPartitions, with Kafka's sentences); a
// total above MaxPartitions (ErrInvalidPartitions: Kafka refuses to add
// more than 10,000 partitions in one operation, and logstore holds every
// topic to CreateTopic's bound). Nothing is allocated per partition
// before these checks.
//
// A growth that failed part way in this process (an I/O error after its
// first commit) is finished by the next CreatePartitions of the topic
// that is not validate-only, before it judges its own request, and by the
// next Open (see the package doc, "Crash safety"). Until then the topic
// shows its old count, and a validate-only call judges against that.
func (c *Catalog) CreatePartitions(name string, total int32, validateOnly bool) (Topic, error) {
	fail := func(err error) (Topic, error) {
		return Topic{}, fmt.Errorf("catalog: create partitions of topic %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fail(ErrClosed)
	}
	t, ok := c.topics[name]
	if !ok {
		return fail(ErrUnknownTopic)
	}
	if target, ok := c.growing[name]; ok && !validateOnly {
		// An earlier growth failed after its first commit: finish it
		// first, as Open would, so its directories are the topic's.
		var err error
		if t, err = c.finishGrowth(t, target); err != nil {
			return fail(fmt.Errorf("finish an earlier growth to %d partitions: %w", target, err))
		}
		c.publish()
	}
	switch {
	case total == t.Partitions:
		return fail(fmt.Errorf("%w: Topic already has %d partition(s)", ErrInvalidPartitions, t.Partitions))
	case total < t.Partitions:
		return fail(fmt.Errorf("%w: The topic %s currently has %d partition(s); %d would not be an increase", ErrInvalidPartitions, name, t.Partitions, total))
	case total > MaxPartitions:
		return fail(fmt.Errorf("%w: %d, a topic may have at most %d", ErrInvalidPartitions, total, MaxPartitions))
	}
	grown := t
	grown.Partitions = total
	if validateOnly {
		return cloneTopic(grown), nil
	}
	// 1. The entry, still with the old count, names the count it grows
	// to: from here the next Open finishes the growth.
	c.growing[name] = total
	if err := c.putTopic(t, stateReady, -1); err != nil {
		// bbolt rolled the commit back: nothing was written.
		delete(c.growing, name)
		return fail(err)
	}
	// 2. The directories and 3. the entry with the new count.
	grown, err := c.finishGrowth(t, total)
	if err != nil {
		// c.growing still holds the target, as catalog.db does: the
		// next CreatePartitions of the topic or the next Open finishes.
		return fail(err)
	}
	c.publish()
	return cloneTopic(grown), nil
}

// finishGrowth is steps 2 and 3 of CreatePartitions, and what Open and a
// later CreatePartitions do with a growth that stopped after step 1:
// make the directories t.Partitions..target-1 (any already there are
// taken if their partition.metadata names the topic's id), sync the
// store directory, write their partition.metadata files, then commit
// the entry with target partitions and no pending count. It returns the
// grown topic, already in c.topics; the caller publishes.
func (c *Catalog) finishGrowth(t Topic, target int32) (Topic, error) {
	from := t.Partitions
	t.Partitions = target
	fsys := c.store.FS()
	for p := from; p < target; p++ {
		if err := fsys.MkdirAll(c.partitionDir(t.Name, p), 0o755); err != nil {
			return Topic{}, err
		}
	}
	if err := fsys.SyncDir(c.store.Dir()); err != nil {
		return Topic{}, err
	}
	if err := c.ensureDirs(t, from); err != nil {
		return Topic{}, err
	}
	delete(c.growing, t.Name)
	if err := c.putTopic(t, stateReady, -1); err != nil {
		c.growing[t.Name] = target
		return Topic{}, err
	}
	c.topics[t.Name] = t
	return t, nil
}

// finishGrowths is Open's repair of growths a crash interrupted (entries
// that name a pending count): each is finished (finishGrowth) before any
// directory is adopted, so the new partitions' directories are taken as
// the topic's own, never as a stray topic or an adopted growth to some
// other count.
func (c *Catalog) finishGrowths() error {
	for name, target := range c.growing {
		t, ok := c.topics[name]
		if !ok {
			delete(c.growing, name)
			continue
		}
		if _, err := c.finishGrowth(t, target); err != nil {
			return fmt.Errorf("topic %q: finish its growth to %d partitions: %w", name, target, err)
		}
	}
	return nil
}
