package metalog

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// testFormat has a 1-byte meta value that only goes up, and values
// that must start with 'v'.
var testFormat = &Format{
	Magic: "LSTESTLG", Version: 7, What: "test file", MetaSize: 1, MetaName: "meta record",
	CheckMeta: func(prev, next []byte) error {
		if prev != nil && next[0] < prev[0] {
			return &ValueError{Reason: "meta goes down"}
		}
		return nil
	},
	CheckValue: func(_ string, val []byte) error {
		if val[0] != 'v' {
			return &ValueError{Offset: 0, Reason: "not a value"}
		}
		return nil
	},
}

var wideFormat = &Format{Magic: "LSWIDELG", Version: 2, What: "wide test file", WideKeys: true}

func create(t *testing.T, f *Format, meta []byte, recs map[string][]byte, opts Options) *Log {
	t.Helper()
	l, err := Create(filepath.Join(t.TempDir(), "test.db"), f, meta, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func decodeFile(t *testing.T, f *Format, path string) State {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Decode(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantRecords(t *testing.T, got map[string][]byte, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("records %q, want %q", got, want)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Fatalf("records %q, want %q", got, want)
		}
	}
}

func TestCommitReplay(t *testing.T) {
	for _, f := range []*Format{testFormat, wideFormat} {
		t.Run(f.What, func(t *testing.T) {
			var meta []byte
			if f.MetaSize > 0 {
				meta = []byte{3}
			}
			l := create(t, f, meta, map[string][]byte{"a/1": []byte("v1"), "b": []byte("vb")}, Options{})
			for _, puts := range [][]Put{
				{{Key: "a/2", Val: []byte("v2")}, {Key: "a/3", Val: []byte("v3")}},
				{{Key: "b"}}, // a tombstone
				{{Key: "a/4", Val: []byte("v4")}, {Key: "a/", Prefix: true}, {Key: "a/5", Val: []byte("v5")}},
				{{Key: "zz", Prefix: true}}, // deletes nothing: writes nothing
			} {
				size := l.Size()
				if err := l.Commit(puts); err != nil {
					t.Fatal(err)
				}
				if puts[0].Key == "zz" && l.Size() != size {
					t.Fatal("a commit that deletes nothing wrote a frame")
				}
			}
			if err := l.MarkClosed(); err != nil {
				t.Fatal(err)
			}
			st := decodeFile(t, f, l.Path())
			wantRecords(t, st.Records, map[string]string{"a/5": "v5"})
			if !st.Closed || st.Tail != "" || !bytes.Equal(st.Meta, meta) {
				t.Fatalf("closed %v, tail %q, meta %v", st.Closed, st.Tail, st.Meta)
			}
		})
	}
}

// TestTornTailEveryByte: the file cut at every byte replays to the
// commits whole before the cut; a cut inside a frame is a torn tail.
func TestTornTailEveryByte(t *testing.T) {
	l := create(t, testFormat, []byte{1}, nil, Options{})
	ends := []int64{l.Size()}
	states := []map[string]string{{}}
	want := map[string]string{}
	for i := range 5 {
		k, v := fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i)
		if err := l.Commit([]Put{{Key: k, Val: []byte(v)}}); err != nil {
			t.Fatal(err)
		}
		want[k] = v
		ends, states = append(ends, l.Size()), append(states, maps.Clone(want))
	}
	data, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	for cut := ends[0]; cut <= int64(len(data)); cut++ {
		st, err := testFormat.Decode(data[:cut], "file")
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		i := 0
		for i+1 < len(ends) && ends[i+1] <= cut {
			i++
		}
		wantRecords(t, st.Records, states[i])
		if st.End != ends[i] || (st.Tail == "") != (cut == ends[i]) {
			t.Fatalf("cut at %d: end %d tail %q, want end %d", cut, st.End, st.Tail, ends[i])
		}
	}
}

// TestDamage: damage in place and payloads that do not decode are a
// *DamagedError at the right byte.
func TestDamage(t *testing.T) {
	l := create(t, testFormat, []byte{1}, nil, Options{})
	first := l.Size()
	for _, k := range []string{"a", "b"} {
		if err := l.Commit([]Put{{Key: k, Val: []byte("v" + k)}}); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(l.Path())
	hdr := testFormat.AppendHeader(nil)
	meta := AppendFrame(nil, []byte{PayloadMeta, 1})
	for name, tc := range map[string]struct {
		data []byte
		off  int
	}{
		"middle CRC":     {func() []byte { d := bytes.Clone(data); d[first+FrameHeaderSize+3] ^= 1; return d }(), int(first)},
		"bad magic":      {append([]byte("XXXXXXXX"), data[8:]...), 0},
		"header CRC":     {func() []byte { d := bytes.Clone(data); d[13] ^= 1; return d }(), 12},
		"no meta":        {hdr, HeaderSize},
		"value":          {append(bytes.Clone(hdr), append(meta, AppendFrame(nil, []byte{PayloadPuts, 0, 1, 'k', 0, 0, 0, 1, 'x'})...)...), HeaderSize + len(meta) + FrameHeaderSize + 8},
		"meta goes down": {append(append(bytes.Clone(hdr), AppendFrame(nil, []byte{PayloadMeta, 2})...), meta...), HeaderSize + len(meta) + FrameHeaderSize + 1},
		"puts first":     {append(bytes.Clone(hdr), AppendFrame(nil, []byte{PayloadPuts, 0, 1, 'k', 0, 0, 0, 0})...), HeaderSize + FrameHeaderSize},
		"unknown type":   {append(append(bytes.Clone(hdr), meta...), AppendFrame(nil, []byte{9})...), HeaderSize + len(meta) + FrameHeaderSize},
	} {
		_, err := testFormat.Decode(tc.data, "file")
		var de *DamagedError
		if !errors.Is(err, ErrDamaged) || !errors.As(err, &de) || de.Offset != tc.off || de.File != "file" {
			t.Errorf("%s: %v, want damage at byte %d", name, err, tc.off)
		}
	}
}

// TestCompaction: the file stays bounded and holds the live state.
func TestCompaction(t *testing.T) {
	l := create(t, testFormat, []byte{1}, nil, Options{CompactBytes: 4096})
	c := NewCommitter(l, CommitterConfig{Name: "test"})
	for i := range 2000 {
		if err := c.Write(Put{Key: fmt.Sprintf("k%d", i%10), Val: []byte(fmt.Sprintf("v%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if l.Size() > 3*4096 {
		t.Fatalf("file of %d bytes", l.Size())
	}
	st := decodeFile(t, testFormat, l.Path())
	if len(st.Records) != 10 || string(st.Records["k9"]) != "v1999" {
		t.Fatalf("records %q", st.Records)
	}
}

// TestRewriteCrash: a crash at each step of a rewrite leaves the file
// at its name whole, the old one or the new one.
func TestRewriteCrash(t *testing.T) {
	errCrash := errors.New("crash")
	for _, step := range []string{"tmp written", "tmp synced", "renamed", "dir synced"} {
		path := filepath.Join(t.TempDir(), "test.db")
		old, err := Create(path, testFormat, []byte{1}, map[string][]byte{"a": []byte("v1")}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		old.Close()
		_, err = Create(path, testFormat, []byte{2}, map[string][]byte{"a": []byte("v2")}, Options{Step: func(s string) error {
			if s == step {
				return errCrash
			}
			return nil
		}})
		if !errors.Is(err, errCrash) {
			t.Fatalf("%s: %v", step, err)
		}
		st := decodeFile(t, testFormat, path)
		got := string(st.Records["a"])
		if (got != "v1" || st.Meta[0] != 1) && (got != "v2" || st.Meta[0] != 2) {
			t.Fatalf("%s: meta %v, a=%q", step, st.Meta, got)
		}
	}
}

// TestCommitterLazy: lazy items wait for a synchronous one (and go
// before it), a newer put replaces a held one, Prepare sees what was
// queued before it, and Close commits what is held.
func TestCommitterLazy(t *testing.T) {
	l := create(t, testFormat, []byte{1}, nil, Options{})
	var mu sync.Mutex
	commits := 0
	c := NewCommitter(l, CommitterConfig{Name: "test", Delay: time.Hour, OnCommit: func(int, error) { mu.Lock(); commits++; mu.Unlock() }})
	c.Push(&Item{Puts: []Put{{Key: "a", Val: []byte("v1")}}, Lazy: true})
	c.Push(&Item{Puts: []Put{{Key: "b", Val: []byte("vb")}}, Lazy: true})
	c.Push(&Item{Puts: []Put{{Key: "a", Val: []byte("v2")}}, Lazy: true})
	time.Sleep(20 * time.Millisecond)
	if l.Get("a") != nil {
		t.Fatal("a lazy put committed on its own")
	}
	var seen []byte
	c.Push(&Item{Prepare: func() []Put { seen = l.Get("c"); return nil }})
	if err := c.Write(Put{Key: "c", Val: []byte("vc")}); err != nil {
		t.Fatal(err)
	}
	if string(l.Get("a")) != "v2" || string(l.Get("b")) != "vb" || seen != nil {
		t.Fatalf("a=%q b=%q seen=%q", l.Get("a"), l.Get("b"), seen)
	}
	c.Push(&Item{Puts: []Put{{Key: "d", Val: []byte("vd")}}, Lazy: true})
	c.Close()
	if string(l.Get("d")) != "vd" {
		t.Fatal("Close did not commit the held put")
	}
	st := decodeFile(t, testFormat, l.Path())
	wantRecords(t, st.Records, map[string]string{"a": "v2", "b": "vb", "c": "vc", "d": "vd"})
}

// TestLock: a second writer or a reader waits for the lock of an open
// Log, and gets it once it is closed.
func TestLock(t *testing.T) {
	l := create(t, testFormat, []byte{1}, nil, Options{})
	if _, _, err := ReadLocked(l.Path(), false, 20*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("read while open: %v", err)
	}
	l.Close()
	f, data, err := ReadLocked(l.Path(), true, time.Second)
	if err != nil || !testFormat.IsFile(data) {
		t.Fatalf("read after close: %v", err)
	}
	f.Close()
}

// FuzzDecode: the replay of any bytes fails or gives a state whose
// image replays to the same state.
func FuzzDecode(f *testing.F) {
	img := testFormat.Image([]byte{1}, map[string][]byte{"a": []byte("v1"), "bb": []byte("v22")})
	f.Add(img)
	f.Add(append(bytes.Clone(img), AppendFrame(nil, []byte{PayloadPuts, 0, 1, 'a', 0, 0, 0, 0})...))
	f.Add(append(bytes.Clone(img), AppendFrame(nil, []byte{PayloadClosed})...))
	f.Add(img[:len(img)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := testFormat.Decode(data, "file")
		if err != nil {
			var de *DamagedError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(data) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if st.End > int64(len(data)) || (st.Tail == "") != (st.End == int64(len(data))) {
			t.Fatalf("end %d of %d, tail %q", st.End, len(data), st.Tail)
		}
		again, err := testFormat.Decode(testFormat.Image(st.Meta, st.Records), "image")
		if err != nil || !bytes.Equal(again.Meta, st.Meta) || !maps.EqualFunc(again.Records, st.Records, bytes.Equal) {
			t.Fatalf("image of the state replays to %v, %v", again, err)
		}
	})
}

// TestAdopt: a whole file is appended to as it is (no rewrite); one
// with a torn tail is refused.
func TestAdopt(t *testing.T) {
	l := create(t, testFormat, []byte{1}, map[string][]byte{"a": []byte("v1")}, Options{})
	if err := l.Commit([]Put{{Key: "b", Val: []byte("vb")}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	before, _ := os.Stat(l.Path())
	f, data, err := ReadLocked(l.Path(), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := testFormat.Decode(data, l.Path())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Adopt(f, l.Path(), testFormat, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Commit([]Put{{Key: "a"}, {Key: "c", Val: []byte("vc")}}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	after, _ := os.Stat(l.Path())
	if !os.SameFile(before, after) {
		t.Fatal("Adopt rewrote the file")
	}
	got := decodeFile(t, testFormat, l.Path())
	wantRecords(t, got.Records, map[string]string{"b": "vb", "c": "vc"})
	st.Tail = "byte 9: torn"
	if _, err := Adopt(nil, l.Path(), testFormat, st, Options{}); err == nil {
		t.Fatal("adopted a file with a torn tail")
	}
}
