package users

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The server side of SCRAM (RFC 5802, RFC 7677), written here rather
// than taken from the scram package for one reason: librdkafka before
// 2.6.1 (Debian and Ubuntu ship such versions) sends in its final
// message the client nonce followed by the whole nonce (which already
// begins with the client nonce), and signs that. Kafka 3.8.1 to 3.9
// accepted it (a nonce that ends with the one it sent); a strict server
// refuses every such client. The nonce here must be the one sent, or the
// client nonce followed by it; either way it holds the server's part,
// which is what ties the final message to this exchange.

// ErrScram is wrapped by the errors of a SCRAM message that does not
// parse or does not prove the password.
var ErrScram = errors.New("SCRAM authentication failed")

// maxScramMessage bounds a message: a client-first of a long user name
// and nonce is a few hundred bytes.
const maxScramMessage = 4096

// ScramConversation is the server side of one SCRAM exchange: Step
// takes the client's two messages in turn.
type ScramConversation struct {
	f    *File
	mech Mechanism
	step int

	user            string
	cred            Credential
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	cnonce, nonce   string
	valid           bool
}

// NewScram starts a SCRAM exchange of mech with a client.
func (f *File) NewScram(mech Mechanism) *ScramConversation {
	return &ScramConversation{f: f, mech: mech}
}

// Username is the user the client named in its first message.
func (s *ScramConversation) Username() string { return s.user }

// Done says whether the exchange is over and proved the password.
func (s *ScramConversation) Done() bool { return s.valid }

// Step takes the client's next message and returns the server's answer;
// an error ends the exchange.
func (s *ScramConversation) Step(msg []byte) ([]byte, error) {
	if len(msg) > maxScramMessage {
		return nil, fmt.Errorf("%w: a message of %d bytes", ErrScram, len(msg))
	}
	s.step++
	switch s.step {
	case 1:
		return s.clientFirst(string(msg))
	case 2:
		return s.clientFinal(string(msg))
	}
	return nil, fmt.Errorf("%w: a message after the exchange ended", ErrScram)
}

func (s *ScramConversation) clientFirst(msg string) ([]byte, error) {
	// gs2-header: "n" or "y" (no channel binding), then an optional
	// authzid, each followed by a comma.
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || flag != "n" && flag != "y" {
		return nil, fmt.Errorf("%w: channel binding %q is not supported", ErrScram, flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: a first message without its header", ErrScram)
	}
	s.gs2Header, s.clientFirstBare = msg[:len(msg)-len(bare)], bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: a first message without n= and r=", ErrScram)
	}
	user, err := unescapeName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	if authz != "" {
		if z, err := unescapeName(strings.TrimPrefix(authz, "a=")); err != nil || !strings.HasPrefix(authz, "a=") || z != user {
			return nil, fmt.Errorf("%w: authorization id %q is not the user", ErrScram, authz)
		}
	}
	s.user, s.cnonce = user, attrs[1][2:]
	if s.cnonce == "" || strings.ContainsAny(s.cnonce, ",") {
		return nil, fmt.Errorf("%w: an empty nonce", ErrScram)
	}
	s.cred = s.f.lookupOrFake(user, s.mech)
	b := make([]byte, 18)
	rand.Read(b)
	s.nonce = s.cnonce + base64.RawURLEncoding.EncodeToString(b)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), nil
}

func (s *ScramConversation) clientFinal(msg string) ([]byte, error) {
	withoutProof, proof64, ok := strings.Cut(msg, ",p=")
	if !ok || strings.Contains(proof64, ",") {
		return nil, fmt.Errorf("%w: a final message without its proof last", ErrScram)
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, fmt.Errorf("%w: channel binding data that is not the first message's header", ErrScram)
	}
	if nonce := strings.TrimPrefix(attrs[1], "r="); nonce != s.nonce && nonce != s.cnonce+s.nonce || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: nonce received did not match nonce sent", ErrScram)
	}
	proof, err := base64.StdEncoding.DecodeString(proof64)
	h := s.mech.newHash()
	if err != nil || len(proof) != h().Size() {
		return nil, fmt.Errorf("%w: a proof that is not %d bytes of base64", ErrScram, h().Size())
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	sig := hmac.New(h, s.cred.StoredKey)
	sig.Write(authMessage)
	clientKey := sig.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	stored := h()
	stored.Write(clientKey)
	if !hmac.Equal(stored.Sum(nil), s.cred.StoredKey) {
		return nil, fmt.Errorf("%w: the proof does not match the user's credential", ErrScram)
	}
	s.valid = true
	server := hmac.New(h, s.cred.ServerKey)
	server.Write(authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(server.Sum(nil))), nil
}

// unescapeName reads a saslname: "=2C" is a comma, "=3D" an equals
// sign, and no other "=" may appear.
func unescapeName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	out := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
	if strings.Count(s, "=") != strings.Count(s, "=2C")+strings.Count(s, "=3D") {
		return "", fmt.Errorf("%w: user name %q: an \"=\" not of =2C or =3D", ErrScram, s)
	}
	return out, nil
}
