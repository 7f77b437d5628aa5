package users

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func addUser(t *testing.T, f *File, name, password string, mech Mechanism) {
	t.Helper()
	c, err := NewCredential(mech, password, MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Update(context.Background(), func(us []User) ([]User, error) { return Set(us, name, c), nil }); err != nil {
		t.Fatal(err)
	}
}

// scramLogin runs a whole SCRAM exchange of name and password against
// f's server for mech; it returns the step the server refused at (0 if
// none) and its error.
func scramLogin(t *testing.T, f *File, mech Mechanism, name, password string) (int, error) {
	t.Helper()
	srv, err := f.ScramServer(mech)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := mech.hash().NewClient(name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	cc, sc := cl.NewConversation(), srv.NewConversation()
	msg, err := cc.Step("")
	for step := 1; ; step++ {
		if err != nil {
			t.Fatalf("client step %d: %v", step, err)
		}
		resp, serr := sc.Step(msg)
		if serr != nil {
			return step, serr
		}
		if sc.Done() {
			if !sc.Valid() {
				return step, errors.New("not valid")
			}
			if _, err := cc.Step(resp); err != nil {
				t.Fatalf("the client refuses the server's final message: %v", err)
			}
			return 0, nil
		}
		msg, err = cc.Step(resp)
	}
}

// TestScramAndPlain: a user added with a credential of each mechanism
// logs in by SCRAM and by PLAIN with its password, and not with another;
// a user that does not exist fails at the same step as a wrong
// password; what the file holds is not the password.
func TestScramAndPlain(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Mechanisms {
		addUser(t, f, "alice", "pencil ✎", m)
	}
	addUser(t, f, "bob", "secret", ScramSHA512)
	for _, m := range Mechanisms {
		if step, err := scramLogin(t, f, m, "alice", "pencil ✎"); err != nil {
			t.Errorf("%s: alice refused at step %d: %v", m, step, err)
		}
		wrong, _ := scramLogin(t, f, m, "alice", "pen")
		unknown, _ := scramLogin(t, f, m, "mallory", "pencil ✎")
		if wrong == 0 || wrong != unknown {
			t.Errorf("%s: a wrong password refused at step %d, an unknown user at %d: want the same, not 0", m, wrong, unknown)
		}
	}
	if step, err := scramLogin(t, f, ScramSHA256, "bob", "secret"); err == nil {
		t.Errorf("bob has no SCRAM-SHA-256 credential but logged in (step %d)", step)
	}
	for _, tc := range []struct {
		name, password string
		want           bool
	}{{"alice", "pencil ✎", true}, {"alice", "pencil", false}, {"bob", "secret", true}, {"mallory", "secret", false}, {"", "", false}} {
		if got := f.VerifyPlain(tc.name, tc.password); got != tc.want {
			t.Errorf("VerifyPlain(%q, %q) = %v", tc.name, tc.password, got)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "pencil") || strings.Contains(string(data), "secret") {
		t.Errorf("the users file holds a password:\n%s", data)
	}
	// Another opener (serve, while `users add` ran) sees the change.
	g, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, f, "carol", "c", ScramSHA256)
	if _, ok, err := g.Lookup("carol", ScramSHA256); !ok || err != nil {
		t.Errorf("a user added by another File is not seen: %v %v", ok, err)
	}
	us, err := g.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range us {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "alice,bob,carol" {
		t.Errorf("List: %v", names)
	}
	// Remove: one credential, then the user with its last one.
	remove := func(name string, m Mechanism) error {
		return f.Update(context.Background(), func(us []User) ([]User, error) { return Remove(us, name, m) })
	}
	if err := remove("alice", ScramSHA512); err != nil {
		t.Fatal(err)
	}
	if step, _ := scramLogin(t, f, ScramSHA512, "alice", "pencil ✎"); step == 0 {
		t.Error("alice logs in by SCRAM-SHA-512 after its credential was removed")
	}
	if err := remove("bob", ""); err != nil {
		t.Fatal(err)
	}
	if err := remove("bob", ""); !errors.Is(err, ErrNoUser) {
		t.Errorf("removing bob twice: %v, want ErrNoUser", err)
	}
}

// TestUpdatesDoNotLoseEachOther: concurrent adds through two Files of
// one directory (two `users add` at once) all land.
func TestUpdatesDoNotLoseEachOther(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := Open(dir)
			if err != nil {
				t.Error(err)
				return
			}
			c, err := NewCredential(ScramSHA256, "p", MinIterations)
			if err != nil {
				t.Error(err)
				return
			}
			name := string(rune('a' + i))
			if err := f.Update(context.Background(), func(us []User) ([]User, error) { return Set(us, name, c), nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	us, err := f.List()
	if err != nil || len(us) != 8 {
		t.Fatalf("%d users after 8 concurrent adds: %v", len(us), err)
	}
}

// TestDecodeRefuses: files that break the rules are refused with
// ErrCorrupt and the path.
func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"not json", "{"},
		{"version", `{"version": 2, "users": []}`},
		{"unknown field", `{"version": 1, "users": [], "passwords": []}`},
		{"empty name", `{"version": 1, "users": [{"name": "", "credentials": []}]}`},
		{"twice", `{"version": 1, "users": [{"name": "a", "credentials": []}, {"name": "a", "credentials": []}]}`},
		{"mechanism", `{"version": 1, "users": [{"name": "a", "credentials": [{"mechanism": "SCRAM-SHA-1", "iterations": 4096, "salt": "AA==", "stored_key": "AA==", "server_key": "AA=="}]}]}`},
		{"iterations", `{"version": 1, "users": [{"name": "a", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 10, "salt": "AA==", "stored_key": "AA==", "server_key": "AA=="}]}]}`},
		{"key size", `{"version": 1, "users": [{"name": "a", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096, "salt": "AA==", "stored_key": "AA==", "server_key": "AA=="}]}]}`},
	} {
		_, err := Decode("dir/users.json", []byte(tc.data))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "dir/users.json") {
			t.Errorf("%s: %v, want ErrCorrupt naming the file", tc.name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version": 1, "users": []}`))
	f.Add([]byte(`{"version": 1, "users": [{"name": "a", "credentials": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096, "salt": "AA==", "stored_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "server_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		us, err := Decode("users.json", data)
		if err != nil {
			return
		}
		for _, u := range us {
			for _, c := range u.Credentials {
				if c.check() != nil {
					t.Fatalf("decoded a credential that breaks the rules: %+v", c)
				}
			}
		}
	})
}
