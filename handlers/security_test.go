package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"maven/app/auth/authtest"
)

const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	for _, path := range []string{"/tools", "/passkeys", "/login", "/setup", "/static/maven.js"} {
		r := b.get(path)
		h := r.Header()
		if h.Get("Content-Security-Policy") != wantCSP {
			t.Errorf("%s CSP: %q", path, h.Get("Content-Security-Policy"))
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s headers: %v", path, h)
		}
		if !strings.HasPrefix(path, "/static/") && h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s Cache-Control: %q", path, h.Get("Cache-Control"))
		}
	}
}

func TestNoInlineScriptOrStyle(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	f.propose("restart_router")
	anon := f.browser()
	for _, path := range []string{"/tools", "/passkeys", "/login", "/setup"} {
		body := b.get(path).Body.String()
		if path == "/login" || path == "/setup" {
			body = anon.get(path).Body.String()
		}
		for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "hx-on", "javascript:"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
		if !strings.Contains(body, `<meta name="htmx-config"`) || !strings.Contains(body, `"allowEval":false`) ||
			!strings.Contains(body, `"historyCacheSize":0`) || !strings.Contains(body, `"selfRequestsOnly":true`) ||
			!strings.Contains(body, `"includeIndicatorStyles":false`) {
			t.Errorf("%s: htmx is not configured safely", path)
		}
	}
}

func TestStaticAssets(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	page := b.get("/login").Body.String()
	for name, ctype := range map[string]string{
		"maven.js": "text/javascript; charset=utf-8", "htmx.min.js": "text/javascript; charset=utf-8",
		"maven.css": "text/css; charset=utf-8",
	} {
		i := strings.Index(page, "/static/"+name+"?v=")
		if i < 0 {
			t.Fatalf("page does not link %s", name)
		}
		url := page[i : i+strings.IndexByte(page[i:], '"')]
		r := b.get(url)
		if r.Code != http.StatusOK || r.Header().Get("Content-Type") != ctype ||
			r.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Body.Len() == 0 {
			t.Errorf("%s: %d %v", url, r.Code, r.Header())
		}
		if r := b.get("/static/" + name); r.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("unversioned %s cached for long: %q", name, r.Header().Get("Cache-Control"))
		}
	}
	if r := b.get("/static/nope.js"); r.Code != http.StatusNotFound {
		t.Errorf("missing asset: %d", r.Code)
	}
}

func TestErrorsShowSafeMessages(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	// A page that does not exist, a tool that does not exist: messages, no internals.
	r := b.get("/no-such-page")
	if r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), "There is no such page.") {
		t.Fatalf("404: %d", r.Code)
	}
	r = b.htmx(http.MethodPost, "/tools/42/disable", nil)
	if r.Code != http.StatusNotFound || r.Header().Get("HX-Retarget") != "#flash" || !strings.Contains(r.Body.String(), "That tool does not exist.") {
		t.Fatalf("missing tool: %d %v %s", r.Code, r.Header(), r.Body.String())
	}
	if strings.Contains(r.Body.String(), "tool not found") {
		t.Fatal("internal error text reached the page")
	}
}

// TestCookiesOverTLS: over HTTPS the ceremony cookie a sign-in begins with and the session
// cookie it ends with are __Host- cookies: Secure, HttpOnly, Path=/, no Domain; the ceremony
// cookie goes once the passkey signed the browser in.
func TestCookiesOverTLS(t *testing.T) {
	f := newFixture(t)
	f.tls = true
	f.boot()
	a := authtest.New(testOrigin)
	f.signUp(a)
	b := f.browser()
	var begin beginAnswer
	mustOK(t, "login begin", b.postJSON("/login/begin", map[string]string{}, &begin))
	hostOnly := func(c *http.Cookie) bool {
		return c != nil && c.Secure && c.HttpOnly && c.Path == "/" && c.Domain == ""
	}
	if c := b.cookies["__Host-maven-ceremony"]; !hostOnly(c) || c.SameSite != http.SameSiteStrictMode || b.cookies["__Host-maven"] != nil {
		t.Fatalf("after begin: ceremony cookie %+v, session cookie %+v", c, b.cookies["__Host-maven"])
	}
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "login finish", b.postJSON("/login/finish", map[string]any{"credential": jsonRaw(cred)}, nil))
	if c := b.cookies["__Host-maven"]; !hostOnly(c) || b.cookies["__Host-maven-ceremony"] != nil {
		t.Fatalf("after sign-in: session cookie %+v, ceremony cookie %+v", c, b.cookies["__Host-maven-ceremony"])
	}
}

// TestKeyBearingRoutesCloseTheirConnection: the answer to every request whose body carries key
// material (a recovery code, a passkey's PRF output) closes its connection, whatever the
// handler makes of the body; other requests keep theirs.
func TestKeyBearingRoutesCloseTheirConnection(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	tests := []struct {
		path  string
		close bool
	}{
		{"/unlock/finish", true},
		{"/unlock/recovery", true},
		{"/setup/finish", true},
		{"/passkeys/add/finish", true},
		{"/passkeys/enroll/finish", true},
		{"/login/finish", false},
		{"/step-up/finish", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := b.postJSON(tt.path, map[string]any{"code": "not-a-code"}, nil)
			if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
				t.Fatalf("POST %s: %d: no such route", tt.path, rec.Code)
			}
			if got := rec.Header().Get("Connection") == "close"; got != tt.close {
				t.Errorf("POST %s (%d): Connection %q, want close %v", tt.path, rec.Code, rec.Header().Get("Connection"), tt.close)
			}
		})
	}
}
