package rootfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var errCorrupt = errors.New("corrupt")

var codec = Codec[[]string]{
	Decode: func(path string, data []byte) ([]string, error) {
		var v []string
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", path, errCorrupt, err)
		}
		return v, nil
	},
	Encode:   func(v []string) ([]byte, error) { return json.Marshal(v) },
	Empty:    func() []string { return []string{} },
	MaxBytes: 1 << 20,
	Corrupt:  errCorrupt,
}

// TestConcurrentWriters: two Files of one path (as two processes would
// open it) each add 50 names from 4 goroutines; none is lost, and each
// File reads the other's changes.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	a, err := Open(path, codec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, codec)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		f := a
		if w%2 == 1 {
			f = b
		}
		wg.Go(func() {
			for i := range 50 {
				if err := f.Update(context.Background(), func(v []string) ([]string, error) { return append(v, fmt.Sprint(w, "-", i)), nil }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, f := range []*File[[]string]{a, b} {
		v, err := f.Fresh()
		if err != nil || len(v) != 200 {
			t.Fatalf("%d names (%v), want 200", len(v), err)
		}
	}
}

// TestCorruptFile: a file that stops decoding keeps the value read
// before for Current (with the error), fails Fresh and Update, and is
// read again once it is whole; a file above MaxBytes is corrupt.
func TestCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	f, err := Open(path, codec)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Update(context.Background(), func([]string) ([]string, error) { return []string{"a"}, nil }); err != nil {
		t.Fatal(err)
	}
	_, gen, _ := f.Current()
	write := func(data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Duration(gen) * time.Minute) // a new stamp whatever the clock's grain
		os.Chtimes(path, later, later)
	}
	write(`["a", `)
	if v, _, err := f.Current(); !errors.Is(err, errCorrupt) || !slices.Equal(v, []string{"a"}) {
		t.Errorf("Current of a corrupt file: %v %v, want [a] and the error", v, err)
	}
	if _, err := f.Fresh(); !errors.Is(err, errCorrupt) {
		t.Errorf("Fresh: %v", err)
	}
	if err := f.Update(context.Background(), func(v []string) ([]string, error) { return v, nil }); !errors.Is(err, errCorrupt) {
		t.Errorf("Update: %v", err)
	}
	write(`["b"]`)
	if v, gen2, err := f.Current(); err != nil || !slices.Equal(v, []string{"b"}) || gen2 == gen {
		t.Errorf("after the file was mended: %v %v (generation %d, was %d)", v, err, gen2, gen)
	}
	small := codec
	small.MaxBytes = 3
	if _, err := Open(path, small); !errors.Is(err, errCorrupt) {
		t.Errorf("a file over MaxBytes: %v", err)
	}
}
