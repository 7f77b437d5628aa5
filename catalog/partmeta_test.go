package catalog_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/catalog"
	"github.com/logstore/logstore/internal/testutil"
	"github.com/logstore/logstore/vfs"
)

// The bytes Kafka writes: no newline at the end (PartitionMetadata.encode).
func TestEncodePartitionMetadataGolden(t *testing.T) {
	id, err := catalog.ParseTopicID("7B-J9HsITNi_ibx5MV4oqA")
	if err != nil {
		t.Fatal(err)
	}
	want := "version: 0\ntopic_id: 7B-J9HsITNi_ibx5MV4oqA"
	if got := catalog.EncodePartitionMetadata(id); string(got) != want {
		t.Fatalf("Encode = %q, want %q", got, want)
	}
}

// Every partition.metadata Kafka wrote in the shared test data decodes,
// and encodes back to the same bytes.
func TestPartitionMetadataKafkaFiles(t *testing.T) {
	root := filepath.Join(testutil.SharedDir(t), "testdata")
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != catalog.MetadataFileName {
			return err
		}
		n++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		id, err := catalog.DecodePartitionMetadata(path, data)
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if got := catalog.EncodePartitionMetadata(id); !bytes.Equal(got, data) {
			t.Errorf("%s: encodes back as %q, was %q", path, got, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Skip("no partition.metadata in the shared test data")
	}
}

func TestDecodePartitionMetadata(t *testing.T) {
	const id = "7B-J9HsITNi_ibx5MV4oqA"
	for _, ok := range []string{
		"version: 0\ntopic_id: " + id,
		"version: 0\ntopic_id: " + id + "\n",
		"version: 0\r\ntopic_id: " + id + "\r\n",
		"version:\t 0\rtopic_id:  " + id,
		"version: 1\ntopic_id: " + id,        // a newer version: Kafka reads it
		"version: 0\ntopic_id: " + id + "==", // Java's decoder takes padding
	} {
		got, err := catalog.DecodePartitionMetadata("f", []byte(ok))
		if err != nil || got.String() != id {
			t.Errorf("Decode(%q) = %s, %v", ok, got, err)
		}
	}
	for _, tc := range []struct {
		data string
		off  int
	}{
		{"", 0},
		{"version: 0", 10},
		{"version: 0\n", 11},
		{"Version: 0\ntopic_id: " + id, 0},
		{"version:0\ntopic_id: " + id, 8},
		{"version: x\ntopic_id: " + id, 9},
		{"version: -1\ntopic_id: " + id, 9},
		{"version: 0\ntopic-id: " + id, 11},
		{"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 21}, // the zero id
		{"version: 0\ntopic_id: " + id[:21], 21},
		{"version: 0\ntopic_id: " + id + "\n\n", 44},
		{"version: 0\ntopic_id: " + id + "\nmore", 44},
		{"version: 0: 1\ntopic_id: " + id, 10},
		{"version: 0\ntopic_id: " + strings.Repeat("A", 30), 21},
		{strings.Repeat("x", 1025), 1024},
	} {
		_, err := catalog.DecodePartitionMetadata("dir/partition.metadata", []byte(tc.data))
		var me *catalog.MetadataError
		if !errors.As(err, &me) || !errors.Is(err, catalog.ErrMalformedMetadata) {
			t.Errorf("Decode(%q) = %v, want a *MetadataError", tc.data, err)
			continue
		}
		if me.Offset != tc.off || me.File != "dir/partition.metadata" || !strings.Contains(err.Error(), "dir/partition.metadata") {
			t.Errorf("Decode(%q): %v, offset %d, want %d", tc.data, err, me.Offset, tc.off)
		}
	}
}

func TestWriteReadPartitionMetadata(t *testing.T) {
	dir := t.TempDir()
	id, _ := catalog.ParseTopicID("o0FXnquCRr6EnyJdHJ1_xQ")
	if err := catalog.WritePartitionMetadata(vfs.OS, dir, id); err != nil {
		t.Fatal(err)
	}
	got, err := catalog.ReadPartitionMetadata(vfs.OS, dir)
	if err != nil || got != id {
		t.Fatalf("Read = %s, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want partition.metadata alone", len(entries))
	}
	// A file too large is refused before it is read.
	big := filepath.Join(dir, catalog.MetadataFileName)
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.ReadPartitionMetadata(vfs.OS, dir); !errors.Is(err, catalog.ErrMalformedMetadata) {
		t.Fatalf("a 1 GiB file: %v", err)
	}
	if _, err := catalog.ReadPartitionMetadata(vfs.OS, t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no file: %v", err)
	}
}

func FuzzDecodePartitionMetadata(f *testing.F) {
	f.Add([]byte("version: 0\ntopic_id: 7B-J9HsITNi_ibx5MV4oqA"))
	f.Add([]byte("version: 0\r\ntopic_id: 7B-J9HsITNi_ibx5MV4oqA==\r\n"))
	f.Add([]byte("version: 99999999999\ntopic_id: x"))
	f.Add([]byte(""))
	if shared, ok := testutil.SharedDirIfPresent(); ok {
		_ = filepath.WalkDir(filepath.Join(shared, "testdata"), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == catalog.MetadataFileName {
				if data, err := os.ReadFile(path); err == nil {
					f.Add(data)
				}
			}
			return nil
		})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := catalog.DecodePartitionMetadata("f", data)
		if err != nil {
			var me *catalog.MetadataError
			if !errors.As(err, &me) || me.Offset < 0 || me.Offset > len(data) && me.Offset != 1024 {
				t.Fatalf("error %v: not a *MetadataError with an offset inside the data", err)
			}
			return
		}
		if id.IsZero() {
			t.Fatal("decoded the zero id")
		}
		back, err := catalog.DecodePartitionMetadata("f", catalog.EncodePartitionMetadata(id))
		if err != nil || back != id {
			t.Fatalf("re-encoded %s decodes as %s, %v", id, back, err)
		}
	})
}
