package handlers

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name      string
		peer      string
		header    map[string]string
		tls       bool
		wantAddr  string
		wantHTTPS bool
	}{
		{"no proxy headers", "203.0.113.7:5555", nil, false, "203.0.113.7:5555", false},
		{"untrusted peer: headers ignored", "203.0.113.7:5555",
			map[string]string{"X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "https"}, false, "203.0.113.7:5555", false},
		{"untrusted peer: Forwarded ignored", "203.0.113.7:5555",
			map[string]string{"Forwarded": "for=198.51.100.1;proto=https"}, false, "203.0.113.7:5555", false},
		{"trusted peer: X-Forwarded-For and -Proto", "10.1.2.3:4444",
			map[string]string{"X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "https"}, false, "198.51.100.1:0", true},
		{"a client cannot name itself: the nearest untrusted hop wins", "10.1.2.3:4444",
			map[string]string{"X-Forwarded-For": "1.2.3.4, 198.51.100.1, 10.9.9.9"}, false, "198.51.100.1:0", false},
		{"every hop trusted: the farthest", "10.1.2.3:4444",
			map[string]string{"X-Forwarded-For": "10.5.5.5, 10.9.9.9"}, false, "10.5.5.5:0", false},
		{"RFC 7239 Forwarded, IPv6, quoted", "[::1]:4444",
			map[string]string{"Forwarded": `for="[2001:db8::7]:443";proto=https, for=10.2.2.2`}, false, "[2001:db8::7]:0", true},
		{"Forwarded wins over X-Forwarded-For", "10.1.2.3:4444",
			map[string]string{"Forwarded": "for=198.51.100.9;proto=http", "X-Forwarded-For": "198.51.100.1", "X-Forwarded-Proto": "https"}, false, "198.51.100.9:0", false},
		{"an obfuscated hop stops the walk", "10.1.2.3:4444",
			map[string]string{"Forwarded": "for=198.51.100.1, for=_hidden"}, false, "10.1.2.3:0", false},
		{"garbage is ignored", "10.1.2.3:4444",
			map[string]string{"X-Forwarded-For": "not-an-ip"}, false, "10.1.2.3:0", false},
		{"direct TLS is HTTPS", "203.0.113.7:5555", nil, true, "203.0.113.7:5555", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotAddr string
			var gotHTTPS bool
			h := forwarded(trusted)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAddr, gotHTTPS = r.RemoteAddr, isHTTPS(r)
			}))
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tt.peer
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if gotAddr != tt.wantAddr || gotHTTPS != tt.wantHTTPS {
				t.Fatalf("got %s https=%v, want %s https=%v", gotAddr, gotHTTPS, tt.wantAddr, tt.wantHTTPS)
			}
		})
	}
}

func TestNoTrustedProxiesMeansNoRewriting(t *testing.T) {
	var got string
	h := forwarded(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "127.0.0.1:1"
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if got != "127.0.0.1:1" {
		t.Fatalf("RemoteAddr %s", got)
	}
}

func TestHSTSFollowsAForwardedHTTPSScheme(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	h := forwarded(trusted)(securityHeaders(false)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	for _, proto := range []string{"https", "http"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "10.0.0.1:1"
		req.Header.Set("X-Forwarded-Proto", proto)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Strict-Transport-Security") != ""; got != (proto == "https") {
			t.Fatalf("proto %s: HSTS %v", proto, got)
		}
	}
}
