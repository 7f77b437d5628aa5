package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An --input line whose partition cannot be opened is answered INVALID,
// and the lines after it are still sent: a valid name whose directory
// name is longer than the filesystem allows, and a partition whose
// directory is a regular file.
func TestAppendPartitionThatCannotBeOpened(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "blocked-0"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("t", 249) // Kafka's longest topic name
	in := writeFile(t, "in.jsonl",
		`{"topic":"`+long+`","partition":2147483647,"records":[{"value":"a"}]}`+"\n"+
			`{"records":[{"value":"b"}]}`+"\n"+
			`{"topic":"blocked","records":[{"value":"c"}]}`+"\n"+
			`{"records":[{"value":"d"}]}`+"\n")
	want := "INVALID line 1: partition " + long + "-2147483647 cannot be opened: its directory name is 260 bytes, longer than the filesystem allows\n" +
		"OK base=0 last=0\n" +
		"INVALID line 3: partition blocked-0 cannot be opened: not a directory\n" +
		"OK base=1 last=1\n"
	wantRun(t, want, 3, "append", "--dir", dir, "--input", in)
}

// --topic and --partition are checked before the store is created, and
// the error names the flag.
func TestAppendPartitionFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args         []string
		prefix, want string
	}{
		{[]string{"--partition", "-1", "x"}, "logstore append: --partition -1: ", `topic "events": partition -1 is negative` + "\n"},
		{[]string{"--topic", "a/b", "--input", "-"}, `logstore append: --topic "a/b": `, `topic "a/b": character '/' at 1 is not one of [a-zA-Z0-9._-]` + "\n"},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		out, errOut, code := runCLI(t, append([]string{"append", "--dir", dir}, tc.args...)...)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, tc.prefix) || !strings.HasSuffix(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and %q...%q", tc.args, code, out, errOut, tc.prefix, tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: the store directory was created: %v", tc.args, err)
		}
	}
}
