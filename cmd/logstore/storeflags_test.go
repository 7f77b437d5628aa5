package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreFlagsCap: --max-producers reaches the store. With a cap of
// one, a second producer makes the store forget the first, whose next
// batch is then refused: it is unknown, and must start at sequence 0.
func TestStoreFlagsCap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	app := func(pid, seq string, more ...string) []string {
		return append([]string{"append", "--dir", dir, "--sync", "never", "--producer-id", pid, "--producer-epoch", "0", "--base-sequence", seq, "v"}, more...)
	}
	wantRun(t, "OK base=0 last=0\n", exitOK, app("1", "0", "--max-producers", "1")...)
	wantRun(t, "OK base=1 last=1\n", exitOK, app("2", "0", "--max-producers", "1")...)
	wantRun(t, "OUT_OF_ORDER producer 1 epoch 0: unknown producer must start at sequence 0, got 1\n", exitRefused, app("1", "1", "--max-producers", "1")...)
	// Without the cap the store forgets no one more: producer 2 goes on.
	wantRun(t, "OK base=2 last=2\n", exitOK, app("2", "1")...)
	out, errOut, code := runCLI(t, "producers", "--dir", dir, "--max-producers", "5", "--producer-expiry", "0")
	if code != exitOK || strings.Count(out, "producerId=") != 1 || !strings.HasPrefix(out, "producerId=2 ") {
		t.Fatalf("producers: exit %d\n%s%s", code, out, errOut)
	}
}

// TestStoreFlagsEveryCommand: every command that opens a store takes
// both flags, with their defaults in the help, and refuses negative
// values before it touches anything.
func TestStoreFlagsEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range [][]string{
		{"append", "--dir", dir, "x"},
		{"producers", "--dir", dir},
		{"read", "--dir", dir},
		{"perf", "produce", "--dir", dir, "--records", "1", "--record-size", "1"},
		{"perf", "consume", "--dir", dir},
		{"topics", "list", "--dir", dir},
	} {
		name := cmd[0]
		if cmd[0] == "perf" || cmd[0] == "topics" {
			name += " " + cmd[1]
		}
		help, _, code := runCLI(t, append(strings.Fields(name), "--help")...)
		if code != exitOK || !strings.Contains(help, "--producer-expiry duration") || !strings.Contains(help, "(default 24h0m0s)") ||
			!strings.Contains(help, "--max-producers int") || !strings.Contains(help, "0 for no cap (default 0)") {
			t.Errorf("%s --help: exit %d, the flags or their defaults missing:\n%s", name, code, help)
		}
		for flag, want := range map[string]string{
			"--producer-expiry=-1s": "--producer-expiry -1s: must be 0 (never) or more",
			"--max-producers=-2":    "--max-producers -2: must be 0 (no cap) or more",
		} {
			_, errOut, code := runCLI(t, append(append([]string{}, cmd...), flag)...)
			if code != exitError || !strings.Contains(errOut, want) {
				t.Errorf("%s %s: exit %d, stderr %q, want %q", name, flag, code, errOut, want)
			}
		}
	}
}
