package cliout

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestProgress draws and clears the line with a fake clock.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	p := NewProgress(&buf)
	p.now = func() time.Time { return now }
	p.Printf("%s: %d%%", "a.log", 25)
	p.Printf("%s: %d%%", "a.log", 30) // too soon: not drawn
	now = now.Add(ProgressEvery)
	p.Printf("%s: %d%%", "a.log", 50)
	p.Clear()
	p.Clear()
	p.Printf("%s: %d%%", "a.log", 60) // drawn at once after a clear
	want := "\ra.log: 25%\x1b[K\ra.log: 50%\x1b[K\r\x1b[K\ra.log: 60%\x1b[K"
	if buf.String() != want {
		t.Errorf("progress wrote %q, want %q", buf.String(), want)
	}
	var none *Progress = NewProgress(nil)
	if none != nil {
		t.Fatal("NewProgress(nil) is not nil")
	}
	none.Printf("x")
	none.Clear()
}

// TestNotTerminal: buffers and files are not terminals, so tests and
// pipes get no progress.
func TestNotTerminal(t *testing.T) {
	file, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var buf bytes.Buffer
	if IsTerminal(&buf) || IsTerminal(file) {
		t.Error("a buffer or a file taken for a terminal")
	}
	if ProgressWriter(&buf, file) != nil || ProgressWriter(&buf, &buf) != nil {
		t.Error("progress on a file or buffer")
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"q\"b\\", `"q\"b\\"`},
		{"\n\r\t\x00\x1f\b\f", `"\n\r\t\u0000\u001f\u0008\u000c"`},
		{"del\x7f", "\"del\x7f\""}, // DEL as is, as encoding/json and Jackson write it
		{"é€😀", `"é€😀"`},
		{"a\xffb\xe2\x82", "\"a\uFFFDb\uFFFD\uFFFD\""},
		{"<&>\u2028", "\"<&>\u2028\""},
	} {
		if got := string(AppendJSONString(nil, tt.in)); got != tt.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if got := string(AppendJSONString(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("AppendJSONString([]byte(%q)) = %s, want %s", tt.in, got, tt.want)
		}
	}
	got := string(AppendJSONStringFunc(nil, []byte("a\xe2\x82b"), func([]byte) int { return 2 }))
	if want := "\"a\uFFFDb\""; got != want {
		t.Errorf("with a malformed length of 2: %s, want %s", got, want)
	}
}

// FuzzAppendJSONString: the output is JSON that decodes to the input,
// malformed bytes aside, and for valid UTF-8 agrees byte for byte with
// encoding/json, except where that escapes HTML characters, U+2028 and
// U+2029, or writes \b and \f.
func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain\x7f\x00\"\\\n")
	f.Add("\xff\xe2\x82 é")
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q gives invalid JSON %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q round-trips to %q", s, back)
		}
		if utf8.ValidString(s) && !strings.ContainsAny(s, "<>&\u2028\u2029\b\f") {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(buf.String(), "\n"); string(out) != want {
				t.Fatalf("%q: %s, encoding/json writes %s", s, out, want)
			}
		}
	})
}
