package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// securityProtocol is a listener's security protocol as Kafka's
// listener.security.protocol.map names it.
type securityProtocol string

const (
	protoPlaintext     securityProtocol = "PLAINTEXT"
	protoSSL           securityProtocol = "SSL"
	protoSASLPlaintext securityProtocol = "SASL_PLAINTEXT"
	protoSASLSSL       securityProtocol = "SASL_SSL"
)

var securityProtocols = []securityProtocol{protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL}

// listenerSpec is one listener of serve: Kafka's NAME://HOST:PORT of
// listeners, its security protocol, and its entry of
// advertised.listeners ("" when it has none: clients are told the
// address they connected to).
type listenerSpec struct {
	name      string
	protocol  securityProtocol
	addr      string
	advertise string
}

func (l listenerSpec) String() string { return l.name + "://" + l.addr }

// errListenerFlag is the error of a listener flag that does not parse.
var errListenerFlag = errors.New("bad listener")

// parseListenerURL reads NAME://HOST:PORT; HOST may be empty (every
// interface), as in Kafka's listeners.
func parseListenerURL(flag, s string) (name, addr string, err error) {
	name, addr, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%s %q: want NAME://HOST:PORT: %w", flag, s, errListenerFlag)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", "", fmt.Errorf("%s %q: %w: %w", flag, s, errListenerFlag, err)
	}
	return strings.ToUpper(name), addr, nil
}

// parseProtocolMap reads Kafka's listener.security.protocol.map,
// NAME:PROTOCOL pairs separated by commas, over the default map in
// which each security protocol's name maps to itself.
func parseProtocolMap(s string) (map[string]securityProtocol, error) {
	m := map[string]securityProtocol{}
	for _, p := range securityProtocols {
		m[string(p)] = p
	}
	if s == "" {
		return m, nil
	}
	for _, pair := range strings.Split(s, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(pair), ":")
		p := securityProtocol(strings.ToUpper(proto))
		if !ok || name == "" || !slices.Contains(securityProtocols, p) {
			return nil, fmt.Errorf("--listener-security-protocol-map %q: want NAME:PROTOCOL pairs with a protocol of %v: %w", pair, securityProtocols, errListenerFlag)
		}
		m[strings.ToUpper(name)] = p
	}
	return m, nil
}

// parseListeners reads --listener, --advertised-listener and
// --listener-security-protocol-map: names are unique and each has a
// security protocol, ports are unique, and each advertised listener
// names a listener.
func parseListeners(listeners, advertised []string, protocolMap string) ([]listenerSpec, error) {
	protos, err := parseProtocolMap(protocolMap)
	if err != nil {
		return nil, err
	}
	var out []listenerSpec
	for _, s := range listeners {
		name, addr, err := parseListenerURL("--listener", s)
		if err != nil {
			return nil, err
		}
		proto, ok := protos[name]
		if !ok {
			return nil, fmt.Errorf("--listener %q: no security protocol for listener name %s (name it after one of %v, or map it with --listener-security-protocol-map): %w", s, name, securityProtocols, errListenerFlag)
		}
		_, port, _ := net.SplitHostPort(addr)
		for _, o := range out {
			if o.name == name {
				return nil, fmt.Errorf("--listener %q: listener name %s given twice: %w", s, name, errListenerFlag)
			}
			if _, p, _ := net.SplitHostPort(o.addr); p == port && port != "0" {
				return nil, fmt.Errorf("--listener %q: port %s is listener %s's too: %w", s, port, o.name, errListenerFlag)
			}
		}
		out = append(out, listenerSpec{name: name, protocol: proto, addr: addr})
	}
	for _, s := range advertised {
		name, addr, err := parseListenerURL("--advertised-listener", s)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(l listenerSpec) bool { return l.name == name })
		if i < 0 {
			return nil, fmt.Errorf("--advertised-listener %q: no --listener is named %s: %w", s, name, errListenerFlag)
		}
		if out[i].advertise != "" {
			return nil, fmt.Errorf("--advertised-listener %q: listener %s advertised twice: %w", s, name, errListenerFlag)
		}
		out[i].advertise = addr
	}
	return out, nil
}
