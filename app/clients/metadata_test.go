package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// documentServer serves client ID metadata documents over TLS at https://client.example,
// whatever address that name has: the transport dials the test server for it. (The guarded
// transport, which the daemon uses, would refuse it: the test server is on a loopback address.)
func documentServer(t *testing.T, h http.Handler) (*documents, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	rt := srv.Client().Transport.(*http.Transport).Clone()
	rt.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	// httptest's certificate names example.com.
	rt.TLSClientConfig.ServerName = "example.com"
	now := time.Now()
	d := newDocuments(rt, func() time.Time { return now })
	return d, &hits
}

const docURL = "https://client.example/oauth/client.json"

func docJSON(extra string) string {
	return fmt.Sprintf(`{"client_id": %q, "client_name": "VS Code", "redirect_uris": ["http://127.0.0.1:33418", "https://vscode.dev/redirect"],
		"grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"%s}`, docURL, extra)
}

// TestDocumentIsFetchedCheckedAndCached: a document whose client_id is its own URL describes a
// public client; it is fetched once and then served from the cache.
func TestDocumentIsFetchedCheckedAndCached(t *testing.T) {
	d, hits := documentServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, docJSON(""))
	}))
	for range 3 {
		c, err := d.get(context.Background(), docURL)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != docURL || c.Name != "VS Code" || c.Kind != KindMetadata || c.AuthMethod != authNone || len(c.RedirectURIs) != 2 {
			t.Fatalf("client = %+v", c)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the document was fetched %d times, want once", n)
	}
}

// TestDocumentsThatCannotBeUsed: too large, too slow, another client_id, a secret, a redirect
// elsewhere, not JSON, not found — each refused, and nothing of it is used.
func TestDocumentsThatCannotBeUsed(t *testing.T) {
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want error
	}{
		"too large": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, docJSON(`, "logo": "`+strings.Repeat("x", maxDocumentSize)+`"`))
		}, errDocumentTooLarge},
		"slow": {func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // answers only once the client gave up
		}, context.DeadlineExceeded},
		"another client_id": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.Replace(docJSON(""), docURL, "https://other.example/c.json", 1))
		}, ErrInvalid},
		"a secret": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, docJSON(`, "client_secret": "s3cret"`))
		}, ErrInvalid},
		"a confidential method": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.Replace(docJSON(""), `"none"`, `"client_secret_basic"`, 1))
		}, ErrInvalid},
		"a plain http redirect URI": {func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.Replace(docJSON(""), "https://vscode.dev/redirect", "http://evil.example/cb", 1))
		}, ErrInvalid},
		"an HTTP redirect": {func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/elsewhere.json" {
				fmt.Fprint(w, docJSON("")) // what a followed redirect would take
				return
			}
			http.Redirect(w, r, "https://client.example/elsewhere.json", http.StatusFound)
		}, nil},
		"not JSON":  {func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }, ErrInvalid},
		"not found": {func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			d, _ := documentServer(t, tc.h)
			d.client.Timeout = 200 * time.Millisecond
			_, err := d.get(context.Background(), docURL)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("get = %v, want %v", err, tc.want)
			}
			// The failure is remembered for a while: asking again fetches nothing.
			if _, again := d.get(context.Background(), docURL); again == nil || again.Error() != err.Error() {
				t.Errorf("asked again: %v, want the same failure", again)
			}
		})
	}
}

// TestDocumentURLs: a client_id that names a document is https, with a path, and nothing else;
// an address in it must be public.
func TestDocumentURLs(t *testing.T) {
	for _, id := range []string{
		"http://client.example/c.json", "https://client.example", "https://client.example/",
		"https://u@client.example/c.json", "https://client.example/c.json#x", "https://client.example/a/../c.json",
		"https://127.0.0.1/c.json", "https://10.1.2.3/c.json", "https://[::1]/c.json", "https://[fd00::1]/c.json",
		"https://169.254.169.254/latest", "https://100.64.0.1/c.json", "https://[::ffff:192.168.1.1]/c.json",
	} {
		if err := checkDocumentURL(id); err == nil {
			t.Errorf("checkDocumentURL(%q) took it", id)
		}
	}
	for _, id := range []string{"https://client.example/c.json", "https://8.8.8.8/c.json", "https://vscode.dev/oauth/client-metadata.json"} {
		if err := checkDocumentURL(id); err != nil {
			t.Errorf("checkDocumentURL(%q) = %v", id, err)
		}
	}
}

// TestPublicAddresses: loopback, private, link-local, carrier-grade NAT, unique-local and the
// other special ranges are not public, however they are written.
func TestPublicAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.127.255.254", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1", "::", "fe80::1",
		"fc00::1", "fd12:3456::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1", "2001:db8::1", "ff02::1"} {
		if publicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s counts as public", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "100.128.0.1", "2606:4700:4700::1111", "2a00:1450:4001::1"} {
		if !publicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s counts as not public", a)
		}
	}
}

// TestGuardRefusesAtDialTime: the daemon's transport refuses to connect to an address that is
// not public, when it dials: a name that resolves to loopback (as a rebinding name's second
// answer would) is refused though nothing about the name says so. The test server is never
// reached.
func TestGuardRefusesAtDialTime(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, docJSON(""))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	d := newDocuments(guardedTransport(), time.Now)
	for _, id := range []string{
		"https://localhost:" + port + "/c.json", // a name: only the dialer can tell
		"https://127.0.0.1:" + port + "/c.json", // fetch itself, past the URL's check
		"https://[::1]:" + port + "/c.json",
	} {
		if _, err := d.fetch(context.Background(), id); !errors.Is(err, errNotPublic) {
			t.Errorf("fetch(%s) = %v, want a refusal to dial a non-public address", id, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}
