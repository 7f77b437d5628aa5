package producerstate

import (
	"maps"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestEntrySize: a chunk is the 6.5 KiB its doc says.
func TestEntrySize(t *testing.T) {
	if s := unsafe.Sizeof(chunk{}); s != 6656 {
		t.Fatalf("a chunk is %d bytes, want 6656 (entry %d)", s, unsafe.Sizeof(entry{}))
	}
}

// TestTableRandom runs random adds, writes, removes and freezes against a
// plain map, checking after each step that the table holds what the map
// does, index and positions agreeing, and that every frozen copy still
// holds what the map held when it was taken.
func TestTableRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	tab := newTable(0)
	model := map[int64]int64{} // id -> LastTimestamp
	type frozen struct {
		chunks []*chunk
		n      int
		want   map[int64]int64
	}
	var freezes []frozen
	check := func(step int) {
		if tab.n != len(model) || len(tab.index) != len(model) {
			t.Fatalf("step %d: %d entries, %d indexed, want %d", step, tab.n, len(tab.index), len(model))
		}
		for i := range tab.n {
			e := tab.at(i)
			if tab.index[e.ProducerID] != i || model[e.ProducerID] != e.LastTimestamp {
				t.Fatalf("step %d: entry %d is %d (ts %d), indexed at %d, model ts %d", step, i, e.ProducerID, e.LastTimestamp, tab.index[e.ProducerID], model[e.ProducerID])
			}
		}
		for k, f := range freezes {
			got := map[int64]int64{}
			for i := range f.n {
				e := &f.chunks[i/chunkSize][i%chunkSize]
				got[e.ProducerID] = e.LastTimestamp
			}
			if !maps.Equal(got, f.want) {
				t.Fatalf("step %d: freeze %d changed", step, k)
			}
		}
	}
	for step := range 20_000 {
		switch op := rng.IntN(10); {
		case op < 4 || len(model) == 0: // add
			id := rng.Int64N(3000)
			if _, ok := model[id]; ok {
				continue
			}
			ts := rng.Int64()
			tab.add(&entry{ProducerID: id, LastTimestamp: ts})
			model[id] = ts
		case op < 7: // write
			i := rng.IntN(tab.n)
			e := tab.mut(i)
			e.LastTimestamp = rng.Int64()
			model[e.ProducerID] = e.LastTimestamp
		case op < 9: // remove
			i := rng.IntN(tab.n)
			delete(model, tab.at(i).ProducerID)
			tab.remove(i)
		default:
			if len(freezes) == 8 {
				freezes = freezes[1:]
			}
			freezes = append(freezes, frozen{tab.freeze(), tab.n, maps.Clone(model)})
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
}
