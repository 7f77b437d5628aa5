package catalog_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/crashfs"
	"github.com/logstore/logstore/recordbatch"
)

// checkWhole fails unless topic name has want partitions in the catalog
// and exactly want partition directories, each naming id.
func (f *faultCatalog) checkWhole(name string, id catalog.TopicID, want int32) {
	f.t.Helper()
	got, ok := f.c.Topic(name)
	if !ok || got.ID != id || got.Partitions != want {
		f.t.Fatalf("Topic(%s) = %+v, %v; want id %v, %d partitions", name, got, ok, id, want)
	}
	d := f.dirs(name)
	if len(d) != int(want) {
		f.t.Fatalf("directories of %s: %v, want %d", name, d, want)
	}
	for _, dir := range d {
		got, err := catalog.ReadPartitionMetadata(f.fs, filepath.Join(f.root, dir))
		if err != nil || got != id {
			f.t.Errorf("%s: id %v, %v; want %v", dir, got, err, id)
		}
	}
}

func TestCreatePartitions(t *testing.T) {
	e := open(t, t.TempDir())
	tp, err := e.c.CreateTopic("t", 2, map[string]string{"retention.ms": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	checkWhole := func(want int32) {
		t.Helper()
		got, ok := e.c.Topic("t")
		if !ok || got.ID != tp.ID || got.Partitions != want {
			t.Fatalf("Topic(t) = %+v, %v; want id %v, %d partitions", got, ok, tp.ID, want)
		}
		ids, err := e.s.Partitions()
		if err != nil || len(ids) != int(want) {
			t.Fatalf("partition directories %v, %v; want %d", ids, err, want)
		}
		for _, id := range ids {
			got, err := catalog.ReadPartitionMetadata(e.s.FS(), filepath.Join(e.dir, id.String()))
			if err != nil || got != tp.ID {
				t.Errorf("%s: id %v, %v; want %v", id, got, err, tp.ID)
			}
		}
	}
	b := recordbatch.NewBuilder(0)
	if err := b.Append(1_700_000_000_000, nil, []byte("kept"), nil); err != nil {
		t.Fatal(err)
	}
	batch, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	p0, err := e.s.ExistingPartition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p0.Append(batch); err != nil {
		t.Fatal(err)
	}

	got, err := e.c.CreatePartitions("t", 5, true)
	if err != nil || got.Partitions != 5 || got.ID != tp.ID {
		t.Fatalf("validate only: %+v, %v", got, err)
	}
	checkWhole(2)

	got, err = e.c.CreatePartitions("t", 5, false)
	if err != nil || got.Partitions != 5 || got.ID != tp.ID || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("CreatePartitions(t, 5) = %+v, %v", got, err)
	}
	checkWhole(5)
	// The new partitions open and take records; the old keeps its own.
	p4, err := e.s.ExistingPartition("t", 4)
	if err != nil {
		t.Fatalf("the new partition 4: %v", err)
	}
	if _, err := p4.Append(batch); err != nil {
		t.Fatal(err)
	}
	e = e.reopen()
	checkWhole(5)
	for part, want := range map[int32]int64{0: 1, 4: 1, 2: 0} {
		p, err := e.s.ExistingPartition("t", part)
		if err != nil {
			t.Fatalf("after reopen partition %d: %v", part, err)
		}
		if p.EndOffset() != want {
			t.Fatalf("after reopen partition %d ends at %d, want %d", part, p.EndOffset(), want)
		}
	}
}

func TestCreatePartitionsRefusals(t *testing.T) {
	f := openFaultCatalog(t)
	tp := f.mustCreate("g", 3)
	for _, c := range []struct {
		name  string
		total int32
		err   error
		msg   string
	}{
		{"g", 3, catalog.ErrInvalidPartitions, "Topic already has 3 partition(s)"},
		{"g", 2, catalog.ErrInvalidPartitions, "The topic g currently has 3 partition(s); 2 would not be an increase"},
		{"g", 0, catalog.ErrInvalidPartitions, "0 would not be an increase"},
		{"g", -1, catalog.ErrInvalidPartitions, "-1 would not be an increase"},
		{"g", -2147483648, catalog.ErrInvalidPartitions, "would not be an increase"},
		{"g", catalog.MaxPartitions + 1, catalog.ErrInvalidPartitions, fmt.Sprint(catalog.MaxPartitions)},
		{"g", 2147483647, catalog.ErrInvalidPartitions, "at most"},
		{"nope", 4, catalog.ErrUnknownTopic, ""},
	} {
		for _, validateOnly := range []bool{true, false} {
			_, err := f.c.CreatePartitions(c.name, c.total, validateOnly)
			if !errors.Is(err, c.err) || !strings.Contains(fmt.Sprint(err), c.msg) {
				t.Errorf("CreatePartitions(%s, %d, %v) = %v, want %v with %q", c.name, c.total, validateOnly, err, c.err, c.msg)
			}
		}
	}
	f.checkWhole("g", tp.ID, 3)
	if d := f.dirs("nope"); len(d) != 0 {
		t.Errorf("directories of an unknown topic: %v", d)
	}
	if _, err := f.c.CreatePartitions("g", 4, false); err != nil {
		t.Fatal(err)
	}
	f.checkWhole("g", tp.ID, 4)

	// A topic marked for deletion is unknown to CreatePartitions.
	old := failDelete(f, crashfs.OpRemove)
	if _, err := f.c.CreatePartitions(old.Name, 9, false); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Errorf("CreatePartitions of a topic marked for deletion: %v, want ErrUnknownTopic", err)
	}
}

// failGrow grows topic "t" from 2 to 5 partitions with the second
// directory's partition.metadata rename failing: partition 2 is whole,
// 3 is made without its file, 4 is not made.
func failGrow(f *faultCatalog) catalog.Topic {
	f.t.Helper()
	tp := f.mustCreate("t", 2)
	f.fs.SetFault(func(op crashfs.Op) error {
		if op.Kind == crashfs.OpRename && strings.Contains(op.Path, string(filepath.Separator)+"t-3"+string(filepath.Separator)) {
			return errCatalogFault
		}
		return nil
	})
	if _, err := f.c.CreatePartitions("t", 5, false); !errors.Is(err, errCatalogFault) {
		f.t.Fatalf("CreatePartitions with a failing rename: %v, want the injected error", err)
	}
	f.fs.SetFault(nil)
	if got, _ := f.c.Topic("t"); got.Partitions != 2 {
		f.t.Fatalf("a failed growth shows %d partitions, want the old 2", got.Partitions)
	}
	if len(f.dirs("t")) <= 2 {
		f.t.Fatalf("directories %v: the fault missed", f.dirs("t"))
	}
	return tp
}

func TestCreatePartitionsFailureFinishedByRetry(t *testing.T) {
	f := openFaultCatalog(t)
	tp := failGrow(f)
	// Any later growth first finishes the failed one: a count at or
	// below it is then no increase.
	_, err := f.c.CreatePartitions("t", 4, false)
	if !errors.Is(err, catalog.ErrInvalidPartitions) || !strings.Contains(err.Error(), "currently has 5 partition(s)") {
		t.Fatalf("CreatePartitions(t, 4) after a failed growth to 5: %v", err)
	}
	f.checkWhole("t", tp.ID, 5)
	if _, err := f.c.CreatePartitions("t", 6, false); err != nil {
		t.Fatal(err)
	}
	f.checkWhole("t", tp.ID, 6)
	f.reopen()
	f.checkWhole("t", tp.ID, 6)
}

func TestCreatePartitionsFailureFinishedByOpen(t *testing.T) {
	f := openFaultCatalog(t)
	tp := failGrow(f)
	f.reopen()
	f.checkWhole("t", tp.ID, 5)
	f.reopen()
	f.checkWhole("t", tp.ID, 5)
}

func TestCreatePartitionsFailureThenDelete(t *testing.T) {
	f := openFaultCatalog(t)
	failGrow(f)
	if _, err := f.c.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	f.checkGone("t", false)
	// The name again: nothing of the old growth comes back.
	tp := f.mustCreate("t", 1)
	f.reopen()
	f.checkWhole("t", tp.ID, 1)
}
