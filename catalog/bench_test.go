package catalog_test

import (
	"fmt"
	"testing"
)

// BenchmarkNewProducerID: one bbolt commit (fsync) per ProducerIDBlock
// ids, a mutex otherwise.
func BenchmarkNewProducerID(b *testing.B) {
	e := open(b, b.TempDir())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.c.NewProducerID(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateDeleteTopic: a topic of 3 partitions created and
// deleted, each durable (three catalog.db commits, directories,
// partition.metadata files and their syncs).
func BenchmarkCreateDeleteTopic(b *testing.B) {
	e := open(b, b.TempDir())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("t%d", i)
		i++
		if _, err := e.c.CreateTopic(name, 3, nil, false); err != nil {
			b.Fatal(err)
		}
		if _, err := e.c.DeleteTopic(name); err != nil {
			b.Fatal(err)
		}
	}
}
