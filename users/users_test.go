package users

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
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

// scramLogin runs a whole SCRAM exchange of name and password, the
// scram package's client against f's server for mech; it returns the
// step the server refused at (0 if none) and its error.
func scramLogin(t *testing.T, f *File, mech Mechanism, name, password string) (int, error) {
	t.Helper()
	cl, err := mech.hash().NewClient(name, password, "")
	if err != nil {
		t.Fatal(err)
	}
	cc, sc := cl.NewConversation(), f.NewScram(mech)
	msg, err := cc.Step("")
	for step := 1; ; step++ {
		if err != nil {
			t.Fatalf("client step %d: %v", step, err)
		}
		resp, serr := sc.Step([]byte(msg))
		if serr != nil {
			return step, serr
		}
		if sc.Done() {
			if _, err := cc.Step(string(resp)); err != nil {
				t.Fatalf("the client refuses the server's final message: %v", err)
			}
			return 0, nil
		}
		msg, err = cc.Step(string(resp))
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

// librdkafkaFinal is the final message librdkafka before 2.6.1 sends:
// its nonce the client nonce followed by the whole nonce, signed so.
func librdkafkaFinal(t *testing.T, mech Mechanism, password, clientFirstBare, serverFirst, cnonce string) string {
	t.Helper()
	var nonce, salt64 string
	var iters int
	for _, a := range strings.Split(serverFirst, ",") {
		switch {
		case strings.HasPrefix(a, "r="):
			nonce = a[2:]
		case strings.HasPrefix(a, "s="):
			salt64 = a[2:]
		case strings.HasPrefix(a, "i="):
			iters, _ = strconv.Atoi(a[2:])
		}
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		t.Fatal(err)
	}
	h := mech.newHash()
	salted, err := pbkdf2.Key(h, password, salt, iters, h().Size())
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, s string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	withoutProof := "c=biws,r=" + cnonce + nonce
	sig := mac(sum.Sum(nil), clientFirstBare+","+serverFirst+","+withoutProof)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)
}

// TestScramLibrdkafkaNonce: the final message of librdkafka before
// 2.6.1 (its nonce doubled at the front) authenticates, as with Kafka
// 3.8.1 to 3.9; a nonce without the server's part does not.
func TestScramLibrdkafkaNonce(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, f, "alice", "pencil", ScramSHA512)
	const first = "n,,n=alice,r=rOprNGfwEbeRWgbNEkqO"
	sc := f.NewScram(ScramSHA512)
	serverFirst, err := sc.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	final := librdkafkaFinal(t, ScramSHA512, "pencil", first[3:], string(serverFirst), "rOprNGfwEbeRWgbNEkqO")
	if _, err := sc.Step([]byte(final)); err != nil || !sc.Done() {
		t.Fatalf("librdkafka's final message: %v", err)
	}
	sc = f.NewScram(ScramSHA512)
	if _, err := sc.Step([]byte(first)); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO,p=" + base64.StdEncoding.EncodeToString(make([]byte, 64)))); !errors.Is(err, ErrScram) {
		t.Errorf("a final nonce without the server's part: %v, want ErrScram", err)
	}
}

// TestScramMessagesRefused: first messages that break RFC 5802 are
// refused with ErrScram.
func TestScramMessagesRefused(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{
		"", "p=tls-unique,,n=a,r=x", "n,,", "n,,r=x,n=a", "n,,n=a", "n,,n=a,r=", "n,a=bob,n=alice,r=x", "n,,n=a=2Xb,r=x",
		strings.Repeat("x", maxScramMessage+1),
	} {
		if _, err := f.NewScram(ScramSHA256).Step([]byte(msg)); !errors.Is(err, ErrScram) {
			t.Errorf("%.40q: %v, want ErrScram", msg, err)
		}
	}
	if name, err := unescapeName("a=2Cb=3Dc"); err != nil || name != "a,b=c" {
		t.Errorf("unescapeName: %q, %v", name, err)
	}
}

// FuzzScram: any two messages are answered or refused, never a panic,
// and do not prove a password no input holds.
func FuzzScram(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=x"), []byte(""))
	dir := f.TempDir()
	uf, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	c, err := NewCredential(ScramSHA256, "a password no fuzzer guesses", MinIterations)
	if err != nil {
		f.Fatal(err)
	}
	if err := uf.Update(context.Background(), func(us []User) ([]User, error) { return Set(us, "alice", c), nil }); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		sc := uf.NewScram(ScramSHA256)
		if _, err := sc.Step(first); err != nil {
			return
		}
		sc.Step(final)
		if sc.Done() {
			t.Fatalf("proved with %q, %q", first, final)
		}
	})
}
