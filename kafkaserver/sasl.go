package kafkaserver

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/users"
)

// SASL authentication, as Kafka's SaslServerAuthenticator does it. On a
// listener that requires it (ListenerConfig.SASL: SASL_PLAINTEXT,
// SASL_SSL), a connection may send only ApiVersions, SaslHandshake and
// SaslAuthenticate until it has authenticated; any other request
// closes it, as does a frame larger than maxUnauthenticatedBytes or an
// authentication not done within UnauthenticatedTimeout of the accept.
//
// SaslHandshake (17) names the mechanism: PLAIN or SCRAM-SHA-256/512
// (Config.SASLMechanisms). At v1 the tokens then come in SaslAuthenticate
// requests (36); at v0 (KIP-152's older framing) they come raw, each a
// size and its bytes with no request header, and are answered so.
// PLAIN's one token is "authzid NUL authcid NUL password" (RFC 4616),
// its password verified against the user's SCRAM credential
// (users.File.VerifyPlain); SCRAM takes two (RFC 5802). A failed
// authentication is answered SASL_AUTHENTICATION_FAILED (58) with a
// message that names neither the password nor whether the user exists,
// after AuthFailureDelay, and the connection is closed. Re-authentication
// (KIP-368) is not supported: SessionLifetimeMillis is 0, and a second
// handshake is ILLEGAL_SASL_STATE.

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36

	// maxUnauthenticatedBytes bounds a frame before authentication
	// (Kafka's sasl.server.max.receive.size).
	maxUnauthenticatedBytes = 512 << 10

	// UnauthenticatedTimeout is how long a connection of a SASL
	// listener has to authenticate.
	UnauthenticatedTimeout = 10 * time.Second

	// DefaultAuthFailureDelay is Config.AuthFailureDelay when it is 0.
	DefaultAuthFailureDelay = 500 * time.Millisecond

	mechPlain = "PLAIN"
)

// DefaultSASLMechanisms are Config.SASLMechanisms when it is empty.
var DefaultSASLMechanisms = []string{string(users.ScramSHA256), string(users.ScramSHA512), mechPlain}

// saslState is a connection's authentication, used by its reader only.
type saslState struct {
	required bool // the listener requires SASL
	done     bool // authenticated
	mech     string
	// raw: a v0 handshake was answered, so the next frames are raw
	// tokens.
	raw   bool
	scram *users.ScramConversation
}

// mayServe says whether c may send a request of key now.
func (c *conn) mayServe(key int16) bool {
	return !c.sasl.required || c.sasl.done || key == apiVersionsKey || key == saslHandshakeKey || key == saslAuthenticateKey
}

// maxFrame is the largest frame c may send now.
func (c *conn) maxFrame() int32 {
	if c.sasl.required && !c.sasl.done {
		return min(maxUnauthenticatedBytes, c.s.cfg.MaxRequestBytes)
	}
	return c.s.cfg.MaxRequestBytes
}

func handleSASLHandshake(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	p.resp = resp
	resp.SupportedMechanisms = s.cfg.SASLMechanisms
	switch {
	case !c.sasl.required || c.sasl.done || c.sasl.mech != "":
		// Not a SASL listener, already authenticated (no
		// re-authentication), or a second handshake.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		p.closeAfter = true
	case !slices.Contains(s.cfg.SASLMechanisms, r.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		p.closeAfter = true
	default:
		c.sasl.mech = r.Mechanism
		c.sasl.raw = r.Version == 0
	}
	p.setErr(resp.ErrorCode)
	return nil
}

func handleSASLAuthenticate(s *Server, c *conn, req kmsg.Request, p *pending) error {
	r := req.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	p.resp = resp
	if !c.sasl.required || c.sasl.done || c.sasl.mech == "" || c.sasl.raw {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake v1 naming the mechanism first"
		resp.ErrorMessage = &msg
		p.closeAfter = true
		p.setErr(resp.ErrorCode)
		return nil
	}
	out, err := c.saslStep(r.SASLAuthBytes)
	if err != nil {
		msg := err.Error()
		c.failAuth(p, func() {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = &msg
			p.setErr(resp.ErrorCode)
		})
		return nil
	}
	resp.SASLAuthBytes = out
	return nil
}

// handleRawToken answers frame, a raw token after a v0 handshake, with a
// raw token; a failed authentication closes the connection (v0 has no
// way to say why).
func (s *Server) handleRawToken(c *conn, frame []byte) *pending {
	p := &pending{key: saslAuthenticateKey, start: time.Now()}
	out, err := c.saslStep(frame)
	if err != nil {
		c.failAuth(p, func() { p.setErr(kerr.SaslAuthenticationFailed.Code) })
		return p
	}
	p.rawToken = out
	if p.rawToken == nil {
		p.rawToken = []byte{}
	}
	return p
}

// errAuthFailed is the message of every failed authentication: it
// tells a client neither whether the user exists nor what was wrong.
func errAuthFailed(mech string) error {
	return fmt.Errorf("authentication failed: invalid username or password (SASL mechanism %s)", mech)
}

// saslStep takes one token of the mechanism's exchange and returns the
// answer; c is authenticated once the exchange is done and valid.
func (c *conn) saslStep(token []byte) ([]byte, error) {
	mech := c.sasl.mech
	if c.s.cfg.Users == nil {
		return nil, errAuthFailed(mech)
	}
	if mech == mechPlain {
		name, ok := c.s.plainLogin(token)
		if !ok {
			c.s.authLog(c, mech, name, errors.New("no such user and password"))
			return nil, errAuthFailed(mech)
		}
		c.authenticated(mech, name)
		return nil, nil
	}
	if c.sasl.scram == nil {
		c.sasl.scram = c.s.cfg.Users.NewScram(users.Mechanism(mech))
	}
	out, err := c.sasl.scram.Step(token)
	if err != nil {
		c.s.authLog(c, mech, c.sasl.scram.Username(), err)
		return nil, errAuthFailed(mech)
	}
	if c.sasl.scram.Done() {
		c.authenticated(mech, c.sasl.scram.Username())
	}
	return out, nil
}

// plainLogin reads PLAIN's token and verifies it; it returns the user
// named, when it could read one.
func (s *Server) plainLogin(token []byte) (string, bool) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", false
	}
	authz, name, password := string(parts[0]), string(parts[1]), string(parts[2])
	if name == "" || authz != "" && authz != name {
		return name, false
	}
	return name, s.cfg.Users.VerifyPlain(name, password)
}

func (c *conn) authenticated(mech, name string) {
	c.sasl.done, c.sasl.raw, c.sasl.scram = true, false, nil
	c.principal = "User:" + name
	c.s.authLog(c, mech, name, nil)
}

// failAuth answers p after AuthFailureDelay, with fill setting its
// failure, and closes the connection once it is written.
func (c *conn) failAuth(p *pending, fill func()) {
	p.closeAfter = true
	complete := c.answerLater(p, fill)
	time.AfterFunc(c.s.cfg.AuthFailureDelay, func() { complete(fill) })
}

// authLog counts an authentication and logs it: a failure (failed, the
// reason, which never holds the password) as a warning, once per
// interval for one cause.
func (s *Server) authLog(c *conn, mech, user string, failed error) {
	s.cfg.Metrics.SASLAuthentication(mech, failed == nil)
	if failed == nil {
		s.log.Debug("kafka client authenticated", "remote", c.nc.RemoteAddr().String(), "mechanism", mech, "user", user)
		return
	}
	s.log.Warn("kafka client failed to authenticate", "remote", c.ip, "mechanism", mech, "user", user, "reason", failed.Error())
}
