package mcp

import (
	"net/netip"
	"net/url"
	"strings"

	"maven/app/config"
)

// Trust levels of an MCP server (docs/design.md#rule-14): how much of this machine, and of the
// traffic, the far end can reach.
const (
	TrustLocalProcess    = "local-process"
	TrustLoopback        = "loopback"
	TrustRemoteTLS       = "remote-tls"
	TrustRemotePlaintext = "remote-plaintext"
)

// What each trust level means, in words shown to the owner.
const (
	trustTextLocalProcess    = "A local process running as the daemon's user, with full access to this machine."
	trustTextLoopback        = "A service on this machine."
	trustTextRemoteTLS       = "A remote service reached over TLS."
	trustTextRemotePlaintext = "A remote service over plain HTTP: anyone on the path can read its traffic and credentials."
)

// TrustOf says how far the owner trusts a server by configuring it, as a level and a sentence.
// It reads only the configured (unexpanded) server. Anything it cannot place is reported as
// remote plaintext, the level that promises least.
func TrustOf(server config.Server) (trust, text string) {
	if server.Type == config.TransportStdio {
		return TrustLocalProcess, trustTextLocalProcess
	}
	// Each ${secret:NAME} reads as a harmless word so the URL parses; the config refuses
	// references in the host, so the host is what was written.
	parsable, err := config.Expand(server.URL, func(string) ([]byte, bool) { return []byte("secret"), true })
	if err != nil {
		return TrustRemotePlaintext, trustTextRemotePlaintext
	}
	u, err := url.Parse(parsable)
	if err != nil {
		return TrustRemotePlaintext, trustTextRemotePlaintext
	}
	switch {
	case (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname()):
		return TrustLoopback, trustTextLoopback
	case u.Scheme == "https" && u.Hostname() != "":
		return TrustRemoteTLS, trustTextRemoteTLS
	default:
		return TrustRemotePlaintext, trustTextRemotePlaintext
	}
}

// isLoopbackHost reports whether host names this machine: "localhost" or a loopback address.
// Other names that happen to resolve to loopback are not trusted as such: resolution can change.
func isLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	return a.Unmap().IsLoopback()
}
