package handlers

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxyKey marks a request whose scheme a trusted proxy reported as https.
type proxyKey struct{}

// forwarded believes a reverse proxy's forwarding headers only when the request's direct peer
// is one of trusted. Then r.RemoteAddr becomes the client's address (the nearest hop that is
// not itself a trusted proxy, so a client cannot name itself by sending the header first), a
// forwarded https scheme is remembered for the security headers, and a forwarded host becomes
// r.Host (the Host the browser sent, for the check against the configured origins). From anyone
// else the headers are ignored: they are just text a client can send. RFC 7239 Forwarded wins
// over the X-Forwarded-* headers when both are present.
func forwarded(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			peer, ok := addrOf(r.RemoteAddr)
			if !ok || !inPrefixes(peer, trusted) {
				next.ServeHTTP(w, r)
				return
			}
			hops, proto, host := forwardedHeader(r.Header.Values("Forwarded"))
			if hops == nil {
				hops = xForwardedFor(r.Header.Values("X-Forwarded-For"))
				proto = lastValue(r.Header.Values("X-Forwarded-Proto"))
				host = lastValue(r.Header.Values("X-Forwarded-Host"))
			}
			client := peer
			// Walk from the nearest hop outwards; the first one that is not a trusted proxy is
			// the client. Hops that are not addresses (obfuscated, "unknown") stop the walk.
			for i := len(hops) - 1; i >= 0; i-- {
				a, ok := addrOf(hops[i])
				if !ok {
					break
				}
				client = a
				if !inPrefixes(a, trusted) {
					break
				}
			}
			r2 := r.Clone(r.Context())
			r2.RemoteAddr = netip.AddrPortFrom(client, 0).String()
			if host != "" {
				r2.Host = host
			}
			if strings.EqualFold(proto, "https") {
				r2 = r2.WithContext(context.WithValue(r2.Context(), proxyKey{}, true))
			}
			next.ServeHTTP(w, r2)
		})
	}
}

// isHTTPS reports whether the browser reached Maven over HTTPS: directly, or through a trusted
// proxy that said so.
func isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	v, _ := r.Context().Value(proxyKey{}).(bool)
	return v
}

// forwardedHeader reads RFC 7239 Forwarded values: the for= of each element, in order, and the
// proto= and host= of the last element that has one. hops is nil when no element names a for=.
func forwardedHeader(values []string) (hops []string, proto, host string) {
	for _, v := range values {
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok {
					continue
				}
				val = strings.Trim(strings.TrimSpace(val), `"`)
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "for":
					hops = append(hops, val)
				case "proto":
					proto = val
				case "host":
					host = val
				}
			}
		}
	}
	return hops, proto, host
}

// xForwardedFor reads X-Forwarded-For values: a comma-separated list, client first.
func xForwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hops = append(hops, h)
			}
		}
	}
	return hops
}

func lastValue(values []string) string {
	if len(values) == 0 {
		return ""
	}
	parts := strings.Split(values[len(values)-1], ",")
	return strings.TrimSpace(parts[len(parts)-1])
}

// addrOf parses an IP address with or without a port, and Forwarded's bracketed IPv6 form.
func addrOf(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
