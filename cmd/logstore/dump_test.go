package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore/kafkadump"
	"github.com/logstore/logstore/recordbatch"
	"github.com/logstore/logstore/snapshot"
)

// The dump itself is tested in the kafkadump package, through the same
// flags; these tests check the command around it.

// TestDumpRefused: flags and file names the command refuses, before it
// prints anything, in one line with the exit status 1.
func TestDumpRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	const log = "foo-0/00000000000000000000.log"
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{}, `logstore dump: Missing required argument "[files]"`},
		{[]string{"--deep-iteration"}, `Missing required argument "[files]"`},
		{[]string{"--files", log + ",00000000000000007201-0000000001.checkpoint"}, ".checkpoint files (KRaft snapshots) are not supported yet"},
		{[]string{"--files", "no-suffix"}, `"no-suffix": the file name has no suffix`},
		{[]string{"--files", "foo-0/x.index"}, "foo-0/x.index: the file name does not start with an offset"},
		{[]string{"--files", "foo-0/.timeindex"}, "foo-0/.timeindex: the file name does not start with an offset"},
		{[]string{"--files", "foo-0/abc.txnindex"}, "foo-0/abc.txnindex: the file name does not start with an offset"},
		{[]string{"--key-decoder", "rot13", "--files", log}, `--key-decoder "rot13": want string, hex or base64`},
		{[]string{"--value-decoder", "", "--files", log}, `--value-decoder "": want string, hex or base64`},
		{[]string{"--key-decoder", "hex", "--key-decoder-class=" + kafkadump.StringDecoderClass, "--files", log}, "--key-decoder hex and --key-decoder-class: give one of them"},
		{[]string{"--files", ""}, `"": the file name has no suffix`},
		{[]string{"--files", "foo-0/abc.log"}, "foo-0/abc.log: the file name does not start with an offset"},
		{[]string{"--offsets-decoder", "--files", log}, "--offsets-decoder is not supported yet"},
		{[]string{"--cluster-metadata-decoder", "--files", log}, "--cluster-metadata-decoder is not supported yet"},
		{[]string{"--key-decoder-class=org.example.Custom", "--files", log}, "--key-decoder-class org.example.Custom is not supported yet"},
		{[]string{"--max-bytes", "-1", "--files", log}, "--max-bytes must not be negative"},
		{[]string{"--max-bytes", "3000000000", "--files", log}, `invalid argument "3000000000" for "--max-bytes"`},
		{[]string{"--max-bytes", "0x10", "--files", log}, `invalid argument "0x10" for "--max-bytes"`},
		{[]string{"--files", log, "extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, append([]string{"dump"}, tt.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", tt.args, code)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want nothing", tt.args, out)
		}
		if !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line with %q", tt.args, errOut, tt.want)
		}
	}
}

// TestDumpCommand: the command prints what kafkadump.Dump prints for the
// same flags, stdout and stderr, and exits 1 when Dump fails, here for an
// empty producer-snapshots.db after which the log is still dumped.
func TestDumpCommand(t *testing.T) {
	dir := t.TempDir()
	b := recordbatch.NewBuilder(0)
	for i := range 3 {
		if err := b.Append(1700000000000+int64(i), []byte("k"), []byte("v\x7f"), nil); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(log, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, snapshot.FileName)
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hex := kafkadump.DefaultOptions()
	hex.PrintDataLog, hex.DeepIteration, hex.ValueDecoder = true, true, kafkadump.DecodeHex
	json := kafkadump.DefaultOptions()
	json.JSON, json.DeepIteration = true, true
	for _, tt := range []struct {
		args  []string
		files []string
		opts  kafkadump.Options
		code  int
	}{
		{[]string{"--files", log}, []string{log}, kafkadump.DefaultOptions(), 0},
		{[]string{"--value-decoder", "hex", "--files", log}, []string{log}, hex, 0},
		{[]string{"--json", "--deep-iteration", "--files", db + "," + log}, []string{db, log}, json, 1},
		{[]string{"--files", dir}, []string{dir}, kafkadump.DefaultOptions(), 1},
	} {
		out, errOut, code := runCLI(t, append([]string{"dump"}, tt.args...)...)
		var wantOut, wantErr bytes.Buffer
		if err := kafkadump.Dump(&wantOut, &wantErr, tt.files, tt.opts); err != nil {
			wantErr.WriteString("logstore dump: " + err.Error() + "\n")
		}
		if code != tt.code || out != wantOut.String() || errOut != wantErr.String() {
			t.Errorf("%v: exit %d, want %d\nstdout %q\nwant   %q\nstderr %q\nwant   %q", tt.args, code, tt.code, out, wantOut.String(), errOut, wantErr.String())
		}
	}
	if out, _, _ := runCLI(t, "dump", "--json", "--print-data-log", "--files", log); !strings.Contains(out, "\"value\":\"v\x7f\"") {
		t.Errorf("DEL in a JSON string is escaped: %q", out)
	}
}
