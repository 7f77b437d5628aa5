package catalog

import (
	"fmt"
	"maps"
)

// AlterTopicConfigs makes configs the whole set of topic name's configs
// (a config not in it is removed: the store's value applies again), as
// Kafka's AlterConfigs replaces a topic's dynamic configs
// (UpdateTopicConfigs computes the set from the one held). It returns the topic as it is after the change.
//
// The configs are checked as CreateTopic checks them (ParseConfigs: a
// *ConfigError matching ErrUnknownConfig or ErrInvalidConfig), before the
// topic is looked up, as Kafka validates before it checks that the
// resource exists; then a name the catalog does not hold (or one marked
// for deletion) is ErrUnknownTopic. A refusal changes nothing. With
// validateOnly it checks everything and changes nothing.
//
// The order of writes (see the package doc): the topic's entry with its
// new configs is committed to catalog.db (bbolt fsyncs it), then the
// configs are set on the store, which applies them at once to the
// topic's open partitions (logstore.Store.SetTopicOptions), then the
// change is published to Topic, Topics and SharedTopic, and only then
// does AlterTopicConfigs return. A crash after the commit leaves the new
// configs, which Open sets on the store. If setting them on the store
// fails after the commit (the store closed meanwhile), the catalog still
// shows the committed configs, as catalog.db holds them, and the error
// is returned: they apply from the next Open. A set equal to the one held
// writes nothing.
func (c *Catalog) AlterTopicConfigs(name string, configs map[string]string, validateOnly bool) (Topic, error) {
	return c.UpdateTopicConfigs(name, func(map[string]string) (map[string]string, error) { return configs, nil }, validateOnly)
}

// UpdateTopicConfigs is AlterTopicConfigs with the new set computed from
// the one held, under the catalog's lock, so that two changes of one
// topic (IncrementalAlterConfigs' operations) never lose each other's.
// update gets a copy of the topic's configs (nil for a topic the catalog
// does not hold: it is called then too, so the new set is checked before
// the topic is found missing, as Kafka orders the two) and returns the
// whole new set, or an error that is returned wrapped, with nothing
// changed. update must not call the catalog.
func (c *Catalog) UpdateTopicConfigs(name string, update func(current map[string]string) (map[string]string, error), validateOnly bool) (Topic, error) {
	fail := func(err error) (Topic, error) {
		return Topic{}, fmt.Errorf("catalog: alter configs of topic %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fail(ErrClosed)
	}
	t, ok := c.topics[name]
	configs, err := update(maps.Clone(t.Configs))
	if err != nil {
		return fail(err)
	}
	opts, err := ParseConfigs(configs)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(ErrUnknownTopic)
	}
	next := t
	next.Configs = maps.Clone(configs)
	if len(next.Configs) == 0 {
		next.Configs = nil
	}
	if validateOnly || maps.Equal(t.Configs, next.Configs) {
		return cloneTopic(next), nil
	}
	// 1. The entry: from here the new configs are the topic's.
	if err := c.putTopic(next, stateReady, -1); err != nil {
		// bbolt rolled the commit back: nothing changed.
		return fail(err)
	}
	// 2. The store, 3. the snapshot.
	applyErr := c.store.SetTopicOptions(name, opts)
	c.topics[name] = next
	c.publish()
	if applyErr != nil {
		return cloneTopic(next), fmt.Errorf("catalog: alter configs of topic %q: committed, but not yet applied to its partitions (they take them at the next Open): %w", name, applyErr)
	}
	return cloneTopic(next), nil
}
