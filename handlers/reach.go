package handlers

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"maven/views"
)

// reach says how to reach Maven where passkeys work (the setup, sign-in and unlock pages, and
// the page refusing another address): the configured origins and, when they are all on
// localhost, the SSH tunnel from another computer. host is what the browser called this
// machine, for the tunnel command; the address it asked for is a good guess at the SSH host.
func (s *server) reach(r *http.Request) views.Reach {
	rc := views.Reach{Origins: slices.Clone(s.origins), LocalOnly: len(s.origins) > 0}
	if b, err := json.Marshal(s.origins); err == nil {
		rc.OriginsJSON = string(b)
	}
	port, scheme := "", ""
	var ports []string // of every origin
	for _, o := range s.origins {
		u, err := url.Parse(o)
		if err != nil {
			continue
		}
		p := u.Port()
		if p == "" {
			p = defaultPorts[u.Scheme]
		}
		ports = append(ports, p)
		if rc.Origin == "" {
			rc.Origin, port, scheme = o, p, u.Scheme
		}
		if !isLocalhost(u.Hostname()) {
			rc.LocalOnly = false
		}
	}
	host, asked := r.Host, defaultPorts[schemeOf(r)]
	if h, p, err := net.SplitHostPort(host); err == nil {
		host, asked = h, p
	}
	if rc.LocalOnly && isLocalhost(host) && !slices.Contains(ports, asked) {
		// A tunnel's local end on another port than Maven's: the browser is at localhost, only
		// not at the port the origins name.
		rc.TunnelPort, rc.TunnelOrigin = asked, scheme+"://localhost:"+asked
	}
	if host != "" && !isLocalhost(host) && commandHost(host) {
		rc.TunnelHost = host
	}
	target := "this-machine"
	if rc.TunnelHost != "" {
		target = rc.TunnelHost
	}
	rc.Tunnel = "ssh -L " + port + ":localhost:" + port + " " + shellQuote("you@"+target)
	return rc
}

// defaultPorts are the ports a URL without one means, by scheme.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

// schemeOf is the scheme the browser used for r.
func schemeOf(r *http.Request) string {
	if isHTTPS(r) {
		return "https"
	}
	return "http"
}

func isLocalhost(host string) bool {
	h := strings.ToLower(host)
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// commandHost reports whether host, from the request's Host header, may go into a shell command
// the page shows: an IP address (without a zone) or a host name by RFC 1123, nothing else. The
// header is the requester's to write ("x$(reboot);y.example"), and the owner may paste the
// command.
func commandHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Zone() == ""
	}
	if len(host) == 0 || len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// shellQuote makes word one word of a POSIX shell, inert: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func shellQuote(word string) string {
	if word != "" && strings.Trim(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_") == "" {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// askedFor is the path and query r asked for, for a link to the same page at a configured
// origin: a setup link's token survives the detour.
func askedFor(r *http.Request) string {
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if r.URL.RawQuery != "" {
		p += "?" + r.URL.RawQuery
	}
	return p
}
