package kafkackpt_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/kafkackpt"
)

// TestDecode reads back what Encode writes and refuses what Kafka's
// CheckpointFile refuses, naming the line.
func TestDecode(t *testing.T) {
	in := map[kafkackpt.Partition]int64{{Topic: "x", Partition: 2}: 7, {Topic: "a.b-c", Partition: 0}: 0}
	data := kafkackpt.Encode(in)
	if want := "0\n2\na.b-c 0 0\nx 2 7\n"; string(data) != want {
		t.Fatalf("Encode = %q, want %q", data, want)
	}
	got, err := kafkackpt.Decode(data)
	if err != nil || !maps.Equal(got, in) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, c := range []struct{ in, line string }{
		{"", "line 1:"},
		{"1\n0\n", "line 1:"},
		{"0\n2\nx 0 1\n", "line 2:"},
		{"0\nz\n", "line 2:"},
		{"0\n1\nx 0\n", "line 3:"},
		{"0\n1\nx y 1\n", "line 3:"},
		{"0\n2\nx 0 1\nx 0 z\n", "line 4:"},
		{"0\n1\nx 99999999999 1\n", "line 3:"},
		{"0\n1\nx 0 1 2\n", "line 3:"},
	} {
		_, err := kafkackpt.Decode([]byte(c.in))
		if !errors.Is(err, kafkackpt.ErrMalformed) || !strings.Contains(err.Error(), c.line) {
			t.Errorf("%q: %v, want ErrMalformed at %s", c.in, err, c.line)
		}
	}
	// A long bad line is not quoted whole.
	if _, err := kafkackpt.Decode([]byte("0\n1\n" + strings.Repeat("x", 10000) + "\n")); err == nil || len(err.Error()) > 200 {
		t.Errorf("long line: %d-byte error %v", len(err.Error()), err)
	}
}

// FuzzDecode: arbitrary bytes never panic, and what decodes encodes to
// a file that decodes to the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("0\n2\na 0 3\nb 1 0\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\nt -1 -5"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := kafkackpt.Decode(data)
		if err != nil {
			if !errors.Is(err, kafkackpt.ErrMalformed) {
				t.Fatalf("%q: %v does not wrap ErrMalformed", data, err)
			}
			return
		}
		back, err := kafkackpt.Decode(kafkackpt.Encode(got))
		if err != nil || !maps.Equal(back, got) {
			t.Fatalf("%q decodes to %v, which round-trips to %v, %v", data, got, back, err)
		}
	})
}
