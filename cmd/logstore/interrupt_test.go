package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/internal/shutdown"
)

// interrupted is a context that a signal has cancelled, as the Catcher's
// context is after the first SIGINT or SIGTERM.
func interrupted(sig os.Signal) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	if sig != nil {
		cancel(&shutdown.Interrupted{Signal: sig})
	}
	return ctx, cancel
}

// runContext runs the command tree as run does, under ctx and with stdin.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	}
	return exitCode(err)
}

// A signal while append waits for another process's lock on the store
// ends the wait at once: 143, nothing sent (not the lock's timeout and
// status 1).
func TestAppendSignalWhileWaitingForTheLock(t *testing.T) {
	dir := t.TempDir()
	held, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ctx, cancel := interrupted(nil)
	// The signal comes once append waits for the lock, or (on a slow
	// machine) before it asks: the answer is the same.
	time.AfterFunc(100*time.Millisecond, func() { cancel(&shutdown.Interrupted{Signal: syscall.SIGTERM}) })
	var out, errb bytes.Buffer
	code := runContext(ctx, []string{"append", "--dir", dir, "--lock-timeout", "20s", "x"}, nil, &out, &errb)
	want := "logstore append: interrupted by SIGTERM: the batch was not sent\n"
	if code != 143 || out.Len() != 0 || errb.String() != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 143 and %q", code, out.String(), errb.String(), want)
	}
}

// A signal while append waits for the next line of an input that stays
// open: the lines answered are said, and the store is closed.
func TestAppendSignalWhileWaitingForInput(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	ctx, cancel := interrupted(nil)
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"append", "--dir", dir, "--input", "-"}, inR, outW, &errb)
		outW.Close()
	}()
	replies := bufio.NewReader(outR)
	for i, want := range []string{"OK base=0 last=0\n", "INVALID line 2: no records\n", "OK base=1 last=1\n"} {
		line := fmt.Sprintf(`{"records":[{"value":"%d"}]}`+"\n", i)
		if i == 1 {
			line = `{"records":[]}` + "\n"
		}
		if _, err := io.WriteString(inW, line); err != nil {
			t.Fatal(err)
		}
		got, err := replies.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("reply %q, %v; want %q", got, err, want)
		}
	}
	cancel(&shutdown.Interrupted{Signal: os.Interrupt})
	if rest, _ := io.ReadAll(replies); len(rest) != 0 {
		t.Fatalf("replies after the signal: %q", rest)
	}
	want := "logstore append: interrupted by SIGINT: lines 1 to 3 were answered; the input from line 4 on was not sent; the store was closed cleanly\n"
	if code := <-done; code != 130 || errb.String() != want {
		t.Fatalf("exit %d, stderr %q; want 130 and %q", code, errb.String(), want)
	}
	if got := storeBatches(t, dir, "events", 0); len(got) != 2 {
		t.Fatalf("%d batches in the store, want 2", len(got))
	}
}

// A signal before append sent anything of a --from-log file says so.
func TestAppendSignalFromLog(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, _ := interrupted(syscall.SIGTERM)
	var out, errb bytes.Buffer
	code := runContext(ctx, []string{"append", "--dir", dir, "--from-log", src}, nil, &out, &errb)
	if want := "logstore append: interrupted by SIGTERM: no batch was answered: nothing of " + src + " was sent"; code != 143 || !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q; want 143 and %q", code, errb.String(), want)
	}
}

// read and perf consume stop between reads of the partition and exit
// with the signal's status.
func TestReadAndConsumeStopOnSignal(t *testing.T) {
	dir := t.TempDir()
	wantRun(t, "OK base=0 last=1\n", 0, "append", "--dir", dir, "a", "b")
	for _, args := range [][]string{
		{"read", "--dir", dir},
		{"perf", "consume", "--dir", dir},
	} {
		ctx, _ := interrupted(os.Interrupt)
		var out, errb bytes.Buffer
		code := runContext(ctx, args, nil, &out, &errb)
		if code != 130 || out.Len() != 0 || !strings.Contains(errb.String(), "interrupted by SIGINT") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 130, nothing printed, and the interruption", strings.Join(args, " "), code, out.String(), errb.String())
		}
	}
	// The store was closed cleanly each time.
	s, err := logstore.Open(dir, logstore.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Partition("events", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Recovery().Clean {
		t.Errorf("not clean after the interrupted runs: %+v", p.Recovery())
	}
}

// An interruption maps to 128+n, before any other status.
func TestExitCodeInterrupted(t *testing.T) {
	err := errors.Join(fmt.Errorf("2 of 3 batches %w", errRefused), fmt.Errorf("x: %w", &shutdown.Interrupted{Signal: syscall.SIGTERM}))
	if got := exitCode(err); got != 143 {
		t.Fatalf("exitCode %d, want 143", got)
	}
}

// perf produce stops its producers on a signal, closes the store and
// exits with the signal's status, without a report.
func TestPerfProduceStopsOnSignal(t *testing.T) {
	dir := t.TempDir()
	ctx, _ := interrupted(syscall.SIGTERM)
	var out, errb bytes.Buffer
	code := runContext(ctx, []string{"perf", "produce", "--dir", dir, "--records", "100000", "--record-size", "10", "--sync", "never"}, nil, &out, &errb)
	if code != 143 || out.Len() != 0 || !strings.Contains(errb.String(), "interrupted after 0 of 100000 records (SIGTERM)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
