package clients

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errNotPublic refuses to fetch from an address that is not on the public internet.
var errNotPublic = errors.New("not a public address")

// nonPublic are the address ranges a client ID metadata document is never fetched from: this
// machine, its networks and the special-purpose ranges (RFC 6890), so that naming a document
// cannot make Maven reach what only it can reach (SSRF).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // this network
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("::/128"),          // unspecified
	netip.MustParsePrefix("::1/128"),         // loopback
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: it reaches IPv4 addresses
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo among them)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: it reaches IPv4 addresses
	netip.MustParsePrefix("fc00::/7"),        // unique local
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("fec0::/10"),       // site-local, deprecated
	netip.MustParsePrefix("ff00::/8"),        // multicast
}

// publicAddr reports whether a is an address on the public internet. An IPv4 address written
// as IPv6 (::ffff:a.b.c.d) is judged as the IPv4 address it is.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// publicOnly is the dialer's Control hook: it runs for the address a connection is about to be
// made to, after the name was resolved, so a name that resolves to a private address (DNS
// rebinding included: the name's second answer is the one dialled) is refused at dial time,
// whatever it resolved to when it was first looked at.
func publicOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errNotPublic, address)
	}
	if !publicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", errNotPublic, ap.Addr())
	}
	return nil
}

// guardedTransport is the transport client ID metadata documents are fetched with: public
// addresses only, checked as each connection is dialled; no proxy from the environment (a
// proxy would dial for it, past the check); https only; bounded waits.
func guardedTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: documentTimeout, Control: publicOnly}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    documentTimeout,
		ResponseHeaderTimeout:  documentTimeout,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 8 << 10,
		ForceAttemptHTTP2:      true,
	}
}
