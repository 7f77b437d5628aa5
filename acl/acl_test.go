package acl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	descr   = kmsg.ACLOperationDescribe
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: Wildcard, Operation: op, Permission: perm}
}

func newAuthorizer(t *testing.T, allowIfNo bool, bindings ...Binding) *Authorizer {
	t.Helper()
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Update(context.Background(), func(bs []Binding) ([]Binding, error) { return Add(bs, bindings...), nil }); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthorizer(f, []string{"User:admin"}, allowIfNo)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAuthorize checks decisions against the rules of Kafka's
// StandardAuthorizer (the package doc's steps).
func TestAuthorize(t *testing.T) {
	a := newAuthorizer(t, false,
		bind(topic, "orders", literal, "User:alice", write, allow),
		bind(topic, "logs-", prefix, "User:alice", read, allow),
		bind(topic, "logs-secret", literal, "User:alice", read, deny),
		bind(topic, "*", literal, "User:*", descr, allow),
		bind(topic, "public", literal, "User:*", kmsg.ACLOperationAll, allow),
		bind(topic, "public", literal, "User:mallory", write, deny),
		bind(group, "g", literal, "User:alice", read, allow),
		bind(topic, "cfg", literal, "User:alice", kmsg.ACLOperationAlterConfigs, allow),
		bind(topic, "denied-read", literal, "User:bob", read, deny),
		Binding{ResourceType: topic, ResourceName: "hosted", PatternType: literal, Principal: "User:bob", Host: "10.0.0.1", Operation: read, Permission: allow},
	)
	for _, c := range []struct {
		principal, host string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		name            string
		want            bool
	}{
		{"User:alice", "127.0.0.1", write, topic, "orders", true},
		{"User:alice", "127.0.0.1", read, topic, "orders", false},       // WRITE does not imply READ
		{"User:alice", "127.0.0.1", descr, topic, "orders", true},       // but implies DESCRIBE (and "*" allows it too)
		{"User:bob", "127.0.0.1", write, topic, "orders", false},        // another principal
		{"User:alice", "127.0.0.1", read, topic, "logs-a", true},        // prefixed
		{"User:alice", "127.0.0.1", read, topic, "logs-", true},         // the prefix itself
		{"User:alice", "127.0.0.1", read, topic, "logs", false},         // shorter than the prefix
		{"User:alice", "127.0.0.1", read, topic, "logs-secret", false},  // DENY before ALLOW
		{"User:alice", "127.0.0.1", read, topic, "logs-secret-2", true}, // the literal DENY is not a prefix
		{"User:carol", "127.0.0.1", descr, topic, "anything", true},     // LITERAL "*" for User:*
		{"User:carol", "127.0.0.1", read, topic, "anything", false},     // matched ("*"), not allowed
		{"User:carol", "127.0.0.1", write, topic, "public", true},       // ALL
		{"User:mallory", "127.0.0.1", write, topic, "public", false},    // DENY of one principal
		{"User:mallory", "127.0.0.1", read, topic, "public", true},      // DENY of WRITE only
		{"User:alice", "127.0.0.1", read, group, "g", true},             // another type
		{"User:alice", "127.0.0.1", read, group, "h", false},            // no binding: denied (allowIfNo false)
		{"User:alice", "127.0.0.1", kmsg.ACLOperationDescribeConfigs, topic, "cfg", true},
		{"User:alice", "127.0.0.1", kmsg.ACLOperationAlterConfigs, topic, "cfg", true},
		{"User:bob", "127.0.0.1", descr, topic, "denied-read", true},                     // a DENY of READ implies no DENY of DESCRIBE
		{"User:bob", "10.0.0.1", read, topic, "hosted", true},                            // host
		{"User:bob", "10.0.0.2", read, topic, "hosted", false},                           // another host
		{"User:admin", "127.0.0.1", kmsg.ACLOperationDelete, cluster, ClusterName, true}, // super user
	} {
		if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("%s from %s: %s %s %q: %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
		}
	}
}

func TestAuthorizeAllowIfNoACL(t *testing.T) {
	a := newAuthorizer(t, true, bind(topic, "orders", literal, "User:alice", write, allow))
	for _, c := range []struct {
		principal, name string
		want            bool
	}{
		{"User:bob", "orders", false},  // the resource has bindings: they decide
		{"User:bob", "other", true},    // no binding matches the resource
		{"User:alice", "orders", true}, //
	} {
		if got := a.Authorize(c.principal, "h", write, topic, c.name); got != c.want {
			t.Errorf("%s WRITE %q: %v, want %v", c.principal, c.name, got, c.want)
		}
	}
	if !a.Authorize("User:bob", "h", read, group, "g") {
		t.Error("a group without bindings was refused with allowIfNoACL")
	}
}

func TestAuthorizeAny(t *testing.T) {
	for _, c := range []struct {
		name     string
		bindings []Binding
		want     bool
	}{
		{"none", nil, false},
		{"literal allow", []Binding{bind(topic, "a", literal, "User:u", write, allow)}, true},
		{"other principal", []Binding{bind(topic, "a", literal, "User:v", write, allow)}, false},
		{"other op", []Binding{bind(topic, "a", literal, "User:u", read, allow)}, false},
		{"denied the same literal", []Binding{bind(topic, "a", literal, "User:u", write, allow), bind(topic, "a", literal, "User:u", write, deny)}, false},
		{"denied a prefix", []Binding{bind(topic, "ab", prefix, "User:u", write, allow), bind(topic, "a", prefix, "User:*", write, deny)}, false},
		{"denied another literal", []Binding{bind(topic, "a", literal, "User:u", write, allow), bind(topic, "b", literal, "User:u", write, deny)}, true},
		{"denied everything", []Binding{bind(topic, "a", literal, "User:u", write, allow), bind(topic, "*", literal, "User:u", kmsg.ACLOperationAll, deny)}, false},
		{"a prefix allow, a longer prefix denied", []Binding{bind(topic, "a", prefix, "User:u", write, allow), bind(topic, "ab", prefix, "User:u", write, deny)}, true},
	} {
		a := newAuthorizer(t, false, c.bindings...)
		if got := a.AuthorizeAny("User:u", "h", write, topic); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	b := bind(topic, "logs-", prefix, "User:alice", read, allow)
	w := bind(topic, "*", literal, "User:alice", read, allow)
	any := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, c := range []struct {
		name string
		edit func(*Filter)
		b    Binding
		want bool
	}{
		{"any", func(*Filter) {}, b, true},
		{"type", func(f *Filter) { f.ResourceType = group }, b, false},
		{"name any pattern", func(f *Filter) { f.ResourceName = ptr("logs-") }, b, true},
		{"other name any pattern", func(f *Filter) { f.ResourceName = ptr("logs-a") }, b, false},
		{"literal pattern", func(f *Filter) { f.PatternType = literal }, b, false},
		{"match by prefix", func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = ptr("logs-a") }, b, true},
		{"match not prefix", func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = ptr("log") }, b, false},
		{"match wildcard", func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = ptr("x") }, w, true},
		{"principal", func(f *Filter) { f.Principal = ptr("User:bob") }, b, false},
		{"host", func(f *Filter) { f.Host = ptr("*") }, b, true},
		{"operation", func(f *Filter) { f.Operation = write }, b, false},
		{"permission", func(f *Filter) { f.Permission = deny }, b, false},
	} {
		f := any
		c.edit(&f)
		if got := f.Matches(c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := bind(topic, "t", literal, "User:a", read, allow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Binding){
		"resource type any": func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		"pattern match":     func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"operation any":     func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"permission any":    func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":        func(b *Binding) { b.ResourceName = "" },
		"cluster name":      func(b *Binding) { b.ResourceType = cluster },
		"principal":         func(b *Binding) { b.Principal = "alice" },
		"empty principal":   func(b *Binding) { b.Principal = "User:" },
		"empty host":        func(b *Binding) { b.Host = "" },
		"unknown operation": func(b *Binding) { b.Operation = 99 },
		"unknown resource":  func(b *Binding) { b.ResourceType = -3 },
	} {
		b := good
		edit(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestFileReload: a change another process makes applies to an
// Authorizer within a second or so; a corrupt file keeps the bindings
// read before.
func TestFileReload(t *testing.T) {
	dir := t.TempDir()
	served, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthorizer(served, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.Authorize("User:a", "h", read, topic, "t") {
		t.Fatal("allowed without a binding")
	}
	other, err := Open(dir) // as `logstore acls add` would
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Update(context.Background(), func(bs []Binding) ([]Binding, error) {
		return Add(bs, bind(topic, "t", literal, "User:a", read, allow)), nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return a.Authorize("User:a", "h", read, topic, "t") })

	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"version": 1, "acls": [{]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, FileName), now, now)
	time.Sleep(2 * recheckInterval)
	if !a.Authorize("User:a", "h", read, topic, "t") {
		t.Error("a corrupt file dropped the bindings read before")
	}
	if _, err := served.List(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("List of a corrupt file: %v, want ErrCorrupt", err)
	}
	if err := served.Update(context.Background(), func(bs []Binding) ([]Binding, error) { return bs, nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Update of a corrupt file: %v, want ErrCorrupt", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUpdateAddRemove(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b1 := bind(topic, "a", literal, "User:u", read, allow)
	b2 := bind(topic, "b", prefix, "User:u", write, deny)
	ctx := context.Background()
	for range 2 { // adding twice is adding once
		if err := f.Update(ctx, func(bs []Binding) ([]Binding, error) { return Add(bs, b1, b2), nil }); err != nil {
			t.Fatal(err)
		}
	}
	reopened, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := reopened.List()
	if err != nil || len(got) != 2 || got[0] != b1 || got[1] != b2 {
		t.Fatalf("reopened: %v %v, want [%s %s]", got, err, b1, b2)
	}
	var removed []Binding
	err = f.Update(ctx, func(bs []Binding) ([]Binding, error) {
		var left []Binding
		left, removed = Remove(bs, Filter{ResourceType: topic, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: deny})
		return left, nil
	})
	if err != nil || len(removed) != 1 || removed[0] != b2 {
		t.Fatalf("remove: %v %v, want [%s]", removed, err, b2)
	}
	if err := f.Update(ctx, func(bs []Binding) ([]Binding, error) {
		return append(bs, Binding{ResourceType: topic}), nil
	}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Update storing an invalid binding: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a temporary file was left: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode([]Binding{bind(topic, "a", prefix, "User:u", read, allow)})
	f.Add(good)
	f.Add([]byte(`{"version": 1, "acls": []}`))
	f.Add([]byte(`{"version": 1, "acls": [{"resource_type": "CLUSTER", "resource_name": "kafka-cluster", "pattern_type": "LITERAL", "principal": "User:*", "host": "*", "operation": "ALL", "permission": "DENY"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		bindings, err := Decode("acls.json", data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := Encode(bindings)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode("acls.json", enc)
		if err != nil || len(again) != len(bindings) {
			t.Fatalf("re-decoding what decoded: %v", err)
		}
		idx := newIndex(bindings, 1)
		for _, b := range bindings {
			idx.decide(b.Principal, b.Host, b.Operation, b.ResourceType, b.ResourceName, false)
		}
	})
}

// BenchmarkAuthorize: one decision (a topic WRITE allowed by a PREFIXED
// ACL) among n ACLs of other topics, half of them prefixed with names
// of many lengths.
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			bindings := []Binding{bind(topic, "orders-", prefix, "User:app", write, allow)}
			for i := range n {
				pt := literal
				if i%2 == 1 {
					pt = prefix
				}
				bindings = append(bindings, bind(topic, "other-"+strings.Repeat("x", i%40)+strconv.Itoa(i), pt, "User:u"+strconv.Itoa(i), read, allow))
			}
			f, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Update(context.Background(), func([]Binding) ([]Binding, error) { return bindings, nil }); err != nil {
				b.Fatal(err)
			}
			a, err := NewAuthorizer(f, nil, false)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !a.Authorize("User:app", "127.0.0.1", write, topic, "orders-eu-1") {
					b.Fatal("refused")
				}
			}
		})
	}
}
