package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// inProcessServe is `logstore serve` run in the test's process: its
// ready line, its stderr, and stop, which ends its context and returns
// what the command returned.
type inProcessServe struct {
	ready  string
	stderr *lockedBuffer
	stop   func() error
}

// serveInProcess runs serve with args and waits for its ready line (the
// first line of its output; the rest is discarded). The server is
// stopped when the test ends if stop was not called.
func serveInProcess(t *testing.T, args ...string) *inProcessServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &inProcessServe{stderr: &lockedBuffer{}}
	cmd := newServeCommand()
	cmd.SetArgs(args)
	cmd.SetOut(pw)
	cmd.SetErr(s.stderr)
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(ctx)
		pw.Close()
	}()
	var result error
	stopped := false
	s.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = s.stop() })
	br := bufio.NewReader(pr)
	ready, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("serve %v: no ready line: %v; stderr:\n%s", args, err, s.stderr.String())
	}
	go io.Copy(io.Discard, br)
	s.ready = ready
	return s
}

// client returns a kgo client of the server at the address its ready
// line names, closed when the test ends (before the server stops).
func (s *inProcessServe) client(t *testing.T) *kgo.Client {
	t.Helper()
	m := regexp.MustCompile(`^logstore serve: listening on (\S+),`).FindStringSubmatch(s.ready)
	if m == nil {
		t.Fatalf("ready line %q", s.ready)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
