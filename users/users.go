// Package users keeps the credentials of the users that logstore
// serve's SASL listeners authenticate, in users.json at the store root.
//
// A user has a credential for each SCRAM mechanism it may use
// (SCRAM-SHA-256, SCRAM-SHA-512), as Kafka's SCRAM credentials are kept:
// the salt, the iteration count (4096 at least, as Kafka requires), and
// the two keys RFC 5802 derives from the salted password, StoredKey =
// H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
// HMAC(SaltedPassword, "Server Key"). The password is never written:
// SCRAM verifies a client's proof against StoredKey, and PLAIN (over
// TLS) salts the password it is given with a credential's salt and
// iterations and compares the StoredKey it derives.
//
// The file is JSON:
//
//	{"version": 1, "users": [{"name": "app", "credentials": [
//	  {"mechanism": "SCRAM-SHA-256", "iterations": 8192,
//	   "salt": BASE64, "stored_key": BASE64, "server_key": BASE64}]}]}
//
// It is replaced whole by each change, durably and under a flock, as
// package rootfile keeps a file; a reader (serve) reads it again when
// its size or modification time changes, so a user added with
// `logstore users add` while serve runs can authenticate at once.
package users

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xdg-go/scram"

	"github.com/logstore/logstore/internal/rootfile"
)

// FileName is the credentials file at the store root.
const FileName = "users.json"

// Iteration counts of a credential: Kafka's bounds, and the count
// `users add` uses unless told otherwise.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 8192
)

// maxFileBytes bounds what Open reads: a file of thousands of users is
// far below it.
const maxFileBytes = 64 << 20

// Mechanism is a SCRAM mechanism's SASL name.
type Mechanism string

const (
	ScramSHA256 Mechanism = "SCRAM-SHA-256"
	ScramSHA512 Mechanism = "SCRAM-SHA-512"
)

// Mechanisms are the SCRAM mechanisms, in order of preference.
var Mechanisms = []Mechanism{ScramSHA256, ScramSHA512}

// ParseMechanism reads a mechanism's SASL name.
func ParseMechanism(s string) (Mechanism, error) {
	if m := Mechanism(s); slices.Contains(Mechanisms, m) {
		return m, nil
	}
	return "", fmt.Errorf("SASL mechanism %q: want one of %v", s, Mechanisms)
}

func (m Mechanism) hash() scram.HashGeneratorFcn {
	if m == ScramSHA512 {
		return scram.SHA512
	}
	return scram.SHA256
}

func (m Mechanism) newHash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// Credential is a user's SCRAM credential for one mechanism.
type Credential struct {
	Mechanism  Mechanism `json:"mechanism"`
	Iterations int       `json:"iterations"`
	Salt       []byte    `json:"salt"`
	StoredKey  []byte    `json:"stored_key"`
	ServerKey  []byte    `json:"server_key"`
}

// User is a user and its credentials, one per mechanism at most.
type User struct {
	Name        string       `json:"name"`
	Credentials []Credential `json:"credentials"`
}

type fileJSON struct {
	Version int    `json:"version"`
	Users   []User `json:"users"`
}

// ErrNoUser is wrapped by Delete's error when the user (or its
// credential for the mechanism) is not there.
var ErrNoUser = errors.New("no such user")

// ErrCorrupt is wrapped by the error of a users file that does not
// decode or breaks a rule.
var ErrCorrupt = errors.New("users file is corrupt")

// NewCredential salts password (SASLprep'd, as RFC 5802 asks: the scram
// package does it) with 32 random bytes for mech and iterations.
func NewCredential(mech Mechanism, password string, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%d iterations: want %d to %d", iterations, MinIterations, MaxIterations)
	}
	if _, err := ParseMechanism(string(mech)); err != nil {
		return Credential{}, err
	}
	salt := make([]byte, 32)
	rand.Read(salt)
	return derive(mech, password, salt, iterations)
}

// derive computes the credential of password with salt and iterations.
func derive(mech Mechanism, password string, salt []byte, iterations int) (Credential, error) {
	client, err := mech.hash().NewClient("", password, "")
	if err != nil {
		return Credential{}, fmt.Errorf("password: %w", err)
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return Credential{}, err
	}
	return Credential{Mechanism: mech, Iterations: iterations, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// CredentialFromSalted is the credential of a salted password (RFC
// 5802's SaltedPassword, as KIP-554's AlterUserScramCredentials carries
// it: the client salts, the server never sees the password).
func CredentialFromSalted(mech Mechanism, salt, salted []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%d iterations: want %d to %d", iterations, MinIterations, MaxIterations)
	}
	h := mech.newHash()
	if len(salt) == 0 || len(salted) != h().Size() {
		return Credential{}, fmt.Errorf("%s: a salt of %d bytes and a salted password of %d, want a salt and %d", mech, len(salt), len(salted), h().Size())
	}
	mac := func(s string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	stored := h()
	stored.Write(mac("Client Key"))
	return Credential{Mechanism: mech, Iterations: iterations, Salt: slices.Clone(salt), StoredKey: stored.Sum(nil), ServerKey: mac("Server Key")}, nil
}

// check is what Decode demands of a credential.
func (c Credential) check() error {
	if _, err := ParseMechanism(string(c.Mechanism)); err != nil {
		return err
	}
	if c.Iterations < MinIterations || c.Iterations > MaxIterations {
		return fmt.Errorf("%s: %d iterations, want %d to %d", c.Mechanism, c.Iterations, MinIterations, MaxIterations)
	}
	size := c.Mechanism.newHash()().Size()
	if len(c.Salt) == 0 || len(c.StoredKey) != size || len(c.ServerKey) != size {
		return fmt.Errorf("%s: a salt of %d bytes and keys of %d and %d bytes, want a salt and keys of %d", c.Mechanism, len(c.Salt), len(c.StoredKey), len(c.ServerKey), size)
	}
	return nil
}

// Decode reads a users file's bytes; path names it in errors.
func Decode(path string, data []byte) ([]User, error) {
	var f fileJSON
	if err := rootfile.DecodeJSON(path, data, &f, ErrCorrupt); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%s: %w: version %d, want 1", path, ErrCorrupt, f.Version)
	}
	seen := map[string]bool{}
	for i, u := range f.Users {
		if u.Name == "" || seen[u.Name] {
			return nil, fmt.Errorf("%s: %w: user %d: name %q empty or given twice", path, ErrCorrupt, i, u.Name)
		}
		seen[u.Name] = true
		mechs := map[Mechanism]bool{}
		for _, c := range u.Credentials {
			if err := c.check(); err != nil {
				return nil, fmt.Errorf("%s: %w: user %q: %w", path, ErrCorrupt, u.Name, err)
			}
			if mechs[c.Mechanism] {
				return nil, fmt.Errorf("%s: %w: user %q: two %s credentials", path, ErrCorrupt, u.Name, c.Mechanism)
			}
			mechs[c.Mechanism] = true
		}
	}
	return f.Users, nil
}

// File is the users file of a store directory.
type File struct {
	f *rootfile.File[[]User]
	// fake is the key that makes the SCRAM salt answered for a user
	// who does not exist, so that such a user fails as a wrong password
	// does, not sooner.
	fake []byte
}

// Open reads dir's users file; without one there are no users.
func Open(dir string) (*File, error) {
	rf, err := rootfile.Open(filepath.Join(dir, FileName), rootfile.Codec[[]User]{
		Decode: Decode, Encode: encode, Empty: func() []User { return []User{} },
		MaxBytes: maxFileBytes, Corrupt: ErrCorrupt,
	})
	if err != nil {
		return nil, err
	}
	f := &File{f: rf, fake: make([]byte, 32)}
	rand.Read(f.fake)
	return f, nil
}

func encode(us []User) ([]byte, error) {
	data, err := json.MarshalIndent(fileJSON{Version: 1, Users: us}, "", "  ")
	return append(data, '\n'), err
}

// Path is the users file's path.
func (f *File) Path() string { return f.f.Path() }

// List returns the users, in name order, as the file has them now.
func (f *File) List() ([]User, error) {
	us, err := f.f.Fresh()
	if err != nil {
		return nil, err
	}
	out := slices.Clone(us)
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Lookup returns name's credential for mech, reading the file again if
// it changed; false when there is none. A file that changed and does
// not read keeps the users read before (and says why in err).
func (f *File) Lookup(name string, mech Mechanism) (c Credential, ok bool, err error) {
	us, _, err := f.f.Current()
	for _, u := range us {
		if u.Name != name {
			continue
		}
		for _, c := range u.Credentials {
			if c.Mechanism == mech {
				return c, true, err
			}
		}
	}
	return Credential{}, false, err
}

// Update changes the file with fn, which gets the users as the file has
// them (read again under the lock) and returns them changed; the result
// is written durably before Update returns.
func (f *File) Update(ctx context.Context, fn func([]User) ([]User, error)) error {
	return f.f.Update(ctx, fn)
}

// Set gives name a new credential for mech (replacing one it had), in
// users; a new user is added.
func Set(users []User, name string, c Credential) []User {
	for i := range users {
		if users[i].Name == name {
			creds := slices.DeleteFunc(slices.Clone(users[i].Credentials), func(o Credential) bool { return o.Mechanism == c.Mechanism })
			users[i].Credentials = append(creds, c)
			return users
		}
	}
	return append(users, User{Name: name, Credentials: []Credential{c}})
}

// Remove takes name's credential for mech out of users (every
// credential when mech is ""), and the user with its last credential.
func Remove(users []User, name string, mech Mechanism) ([]User, error) {
	for i := range users {
		if users[i].Name != name {
			continue
		}
		before := len(users[i].Credentials)
		users[i].Credentials = slices.DeleteFunc(users[i].Credentials, func(c Credential) bool { return mech == "" || c.Mechanism == mech })
		if len(users[i].Credentials) == before {
			return nil, fmt.Errorf("user %q has no %s credential: %w", name, mech, ErrNoUser)
		}
		if len(users[i].Credentials) == 0 {
			users = slices.Delete(users, i, i+1)
		}
		return users, nil
	}
	return nil, fmt.Errorf("user %q: %w", name, ErrNoUser)
}

// lookupOrFake returns name's credential for mech; for a user that
// does not exist, one made up all the same (a salt derived from its name
// and a key of this process, keys no password matches), so that the
// exchange fails at its proof as a wrong password does and does not
// tell which.
func (f *File) lookupOrFake(name string, mech Mechanism) Credential {
	if c, ok, _ := f.Lookup(name, mech); ok {
		return c
	}
	m := hmac.New(mech.newHash(), f.fake)
	m.Write([]byte(name))
	c := Credential{Mechanism: mech, Iterations: DefaultIterations, Salt: m.Sum(nil), StoredKey: make([]byte, m.Size()), ServerKey: make([]byte, m.Size())}
	rand.Read(c.StoredKey)
	return c
}

// VerifyPlain says whether password is name's, by its SCRAM-SHA-256
// credential or else its SCRAM-SHA-512 one (SASL PLAIN).
func (f *File) VerifyPlain(name, password string) bool {
	for _, mech := range Mechanisms {
		c, ok, _ := f.Lookup(name, mech)
		if !ok {
			continue
		}
		got, err := derive(mech, password, c.Salt, c.Iterations)
		if err != nil {
			return false
		}
		return hmac.Equal(got.StoredKey, c.StoredKey)
	}
	// A user that does not exist costs the same salting, so that the
	// time taken does not tell it from a wrong password.
	fake := f.lookupOrFake(name, ScramSHA256)
	derive(ScramSHA256, password, fake.Salt, fake.Iterations)
	return false
}
