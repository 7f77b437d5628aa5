package catalog_test

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logstore/logstore"
	"github.com/logstore/logstore/catalog"
)

// TestAlterTopicConfigs: a new set of configs is what Topic shows,
// applies at once to an open partition (segment.bytes rolls it at the
// next append), survives a close and reopen of store and catalog, and
// an empty set takes every config away.
func TestAlterTopicConfigs(t *testing.T) {
	e := open(t, t.TempDir())
	e.create("t", 1, map[string]string{"retention.ms": "1000000"})
	p, err := e.s.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("v", 300_000)
	for range 4 {
		if _, err := p.Append(batch(-1, value)); err != nil {
			t.Fatal(err)
		}
	}
	if n := logCount(t, filepath.Join(e.dir, "t-0")); n != 1 {
		t.Fatalf("%d segments before, want 1", n)
	}
	want := map[string]string{"segment.bytes": "1048576", "max.message.bytes": "500000"}
	got, err := e.c.AlterTopicConfigs("t", want, false)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Configs, want) {
		t.Fatalf("returned configs %v, want %v", got.Configs, want)
	}
	if tp, _ := e.c.Topic("t"); !maps.Equal(tp.Configs, want) {
		t.Fatalf("Topic shows %v, want %v (retention.ms removed)", tp.Configs, want)
	}
	// The open partition: 1.2 MB in 1 MiB segments has rolled.
	if _, err := p.Append(batch(-1, value)); err != nil {
		t.Fatal(err)
	}
	// The new segment gets its .log name in the roll's background flush.
	if err := p.Flushed(); err != nil {
		t.Fatal(err)
	}
	if n := logCount(t, filepath.Join(e.dir, "t-0")); n != 2 {
		t.Fatalf("%d segments after segment.bytes 1 MiB, want 2", n)
	}
	var r *logstore.RefusedError
	if _, err := p.Append(batch(-1, strings.Repeat("x", 600_000))); !errors.As(err, &r) || r.Kind != logstore.RefusedTooLarge {
		t.Fatalf("a batch past max.message.bytes 500000: %v", err)
	}

	e = e.reopen()
	if tp, _ := e.c.Topic("t"); !maps.Equal(tp.Configs, want) {
		t.Fatalf("after reopen: %v, want %v", tp.Configs, want)
	}
	p, err = e.s.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batch(-1, strings.Repeat("x", 600_000))); !errors.As(err, &r) || r.Kind != logstore.RefusedTooLarge {
		t.Fatalf("after reopen, a batch past max.message.bytes 500000: %v", err)
	}

	if _, err := e.c.AlterTopicConfigs("t", nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(batch(-1, strings.Repeat("x", 600_000))); err != nil {
		t.Fatalf("with no configs, the store's 1 MiB limit: %v", err)
	}
	e = e.reopen()
	if tp, _ := e.c.Topic("t"); len(tp.Configs) != 0 {
		t.Fatalf("after removing them all and reopening: %v", tp.Configs)
	}
}

// TestAlterTopicConfigsRefused: validate_only, bad values, unknown
// configs and unknown topics change nothing, in memory or on disk.
func TestAlterTopicConfigsRefused(t *testing.T) {
	e := open(t, t.TempDir())
	orig := map[string]string{"retention.bytes": "1000"}
	e.create("t", 1, orig)
	check := func(when string) {
		t.Helper()
		if tp, _ := e.c.Topic("t"); !maps.Equal(tp.Configs, orig) {
			t.Fatalf("%s: configs %v, want %v", when, tp.Configs, orig)
		}
	}
	tp, err := e.c.AlterTopicConfigs("t", map[string]string{"retention.bytes": "5"}, true)
	if err != nil || tp.Configs["retention.bytes"] != "5" {
		t.Fatalf("validate only: %+v, %v", tp, err)
	}
	check("validate only")
	for _, tc := range []struct {
		configs map[string]string
		want    error
	}{
		{map[string]string{"segment.bytes": "100"}, catalog.ErrInvalidConfig},
		{map[string]string{"segment.bytes": "99999999999"}, catalog.ErrInvalidConfig},
		{map[string]string{"retention.ms": "-2"}, catalog.ErrInvalidConfig},
		{map[string]string{"max.message.bytes": "lots"}, catalog.ErrInvalidConfig},
		{map[string]string{"retention.bytes": "5", "no.such.config": "1"}, catalog.ErrUnknownConfig},
	} {
		for _, validateOnly := range []bool{false, true} {
			_, err := e.c.AlterTopicConfigs("t", tc.configs, validateOnly)
			var ce *catalog.ConfigError
			if !errors.Is(err, tc.want) || !errors.As(err, &ce) {
				t.Fatalf("%v: %v, want %v in a *ConfigError", tc.configs, err, tc.want)
			}
		}
	}
	if _, err := e.c.AlterTopicConfigs("nope", map[string]string{"retention.bytes": "5"}, false); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	check("refusals")
	e = e.reopen()
	check("refusals and a reopen")
	if _, ok := e.c.Topic("nope"); ok {
		t.Fatal("an alter of an unknown topic made it")
	}
}

// TestUpdateTopicConfigs: the update sees the configs held, its error
// changes nothing, and for an unknown topic the new set is checked
// before the topic is found missing.
func TestUpdateTopicConfigs(t *testing.T) {
	e := open(t, t.TempDir())
	e.create("t", 1, map[string]string{"retention.bytes": "1000"})
	add := func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		cur["segment.ms"] = "60000"
		return cur, nil
	}
	tp, err := e.c.UpdateTopicConfigs("t", add, false)
	if want := map[string]string{"retention.bytes": "1000", "segment.ms": "60000"}; err != nil || !maps.Equal(tp.Configs, want) {
		t.Fatalf("%v, %v, want %v", tp.Configs, err, want)
	}
	boom := errors.New("boom")
	if _, err := e.c.UpdateTopicConfigs("t", func(map[string]string) (map[string]string, error) { return nil, boom }, false); !errors.Is(err, boom) {
		t.Fatalf("update's error: %v", err)
	}
	if tp, _ := e.c.Topic("t"); len(tp.Configs) != 2 {
		t.Fatalf("after a failed update: %v", tp.Configs)
	}
	bad := func(map[string]string) (map[string]string, error) { return map[string]string{"segment.ms": "0"}, nil }
	if _, err := e.c.UpdateTopicConfigs("nope", bad, false); !errors.Is(err, catalog.ErrInvalidConfig) {
		t.Fatalf("a bad set for an unknown topic: %v, want ErrInvalidConfig first", err)
	}
	if _, err := e.c.UpdateTopicConfigs("nope", add, false); !errors.Is(err, catalog.ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// TestUpdateTopicConfigsConcurrent: updates of one topic from several
// goroutines, each adding its own config to the set it is given, lose
// none of each other's.
func TestUpdateTopicConfigsConcurrent(t *testing.T) {
	e := open(t, t.TempDir())
	e.create("t", 1, nil)
	values := map[string]string{"segment.bytes": "1048576", "segment.ms": "60000", "max.message.bytes": "5000", "retention.bytes": "100000000", "retention.ms": "3600000"}
	errs := make(chan error, len(values))
	for name, value := range values {
		go func() {
			_, err := e.c.UpdateTopicConfigs("t", func(cur map[string]string) (map[string]string, error) {
				if cur == nil {
					cur = map[string]string{}
				}
				cur[name] = value
				return cur, nil
			}, false)
			errs <- err
		}()
	}
	for range values {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if tp, _ := e.c.Topic("t"); !maps.Equal(tp.Configs, values) {
		t.Fatalf("configs %v, want %v", tp.Configs, values)
	}
	e = e.reopen()
	if tp, _ := e.c.Topic("t"); !maps.Equal(tp.Configs, values) {
		t.Fatalf("after reopen: %v, want %v", tp.Configs, values)
	}
}
