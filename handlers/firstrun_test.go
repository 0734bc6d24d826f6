package handlers_test

import (
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

// A page opened at the machine's LAN address, with the default localhost origin, is refused
// with the reason (localhost is this machine only) and both fixes: the SSH tunnel from the
// computer the browser is on, naming the address it used, and a name with HTTPS.
func TestWrongHostPageExplainsTheLANCase(t *testing.T) {
	f := newFixture(t)
	req := httptest.NewRequest(http.MethodGet, "http://192.168.1.20:8080/setup?token=x", nil)
	req.Host = "192.168.1.20:8080"
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("status %d", rec.Code)
	}
	for _, want := range []string{
		"<code>192.168.1.20:8080</code>", "is on the machine that runs Maven itself",
		"<code class=\"command\">ssh -L 8080:localhost:8080 you@192.168.1.20</code>",
		`<a href="http://localhost:8080/setup?token=x">http://localhost:8080</a>`, "A plain IP address never works", "A headless home server",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("wrong-host page lacks %q:\n%s", want, body)
		}
	}
}

// The wrong-host page puts the Host header into its tunnel command only when it is a host name
// or an IP address: anything else the requester wrote gets the placeholder, and nothing of it
// reaches the page as a command.
func TestWrongHostPageTunnelTakesOnlyAHostName(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ host, command string }{
		{"192.168.1.20:8080", "ssh -L 8080:localhost:8080 you@192.168.1.20"},
		{"[fd00::20]:8080", "ssh -L 8080:localhost:8080 you@fd00::20"},
		{"nas.home.arpa:8080", "ssh -L 8080:localhost:8080 you@nas.home.arpa"},
		{"x$(reboot);y.evil.example:8080", "ssh -L 8080:localhost:8080 you@this-machine"},
		{"x`reboot`.example", "ssh -L 8080:localhost:8080 you@this-machine"},
		{"a'b.example:8080", "ssh -L 8080:localhost:8080 you@this-machine"},
		{"-oProxyCommand=reboot:8080", "ssh -L 8080:localhost:8080 you@this-machine"},
		{"[fe80::1%25eth0]:8080", "ssh -L 8080:localhost:8080 you@this-machine"},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://192.0.2.1/login", nil)
		req.Host = tt.host
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(body, `<code class="command">`+tt.command+`</code>`) {
			t.Errorf("Host %q: %d, want the command %q:\n%s", tt.host, rec.Code, tt.command, body)
		}
		if strings.Contains(body, "reboot") && !strings.Contains(body, "<code>"+template.HTMLEscapeString(tt.host)+"</code>") {
			t.Errorf("Host %q reached the page outside its quoted name", tt.host)
		}
	}
}

// A tunnel whose local end is on another port than Maven's (ssh -L 28400:localhost:8080) brings
// the browser to localhost at that port: the page says so and how to fix it, and its link to the
// configured origin keeps the path and query, so a setup link's token survives.
func TestWrongHostPageRecognisesATunnelOnAnotherPort(t *testing.T) {
	f := newFixture(t)
	token := f.setupToken()
	req := httptest.NewRequest(http.MethodGet, "http://localhost:28400/setup?token="+token, nil)
	req.Host = "localhost:28400"
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("status %d", rec.Code)
	}
	for _, want := range []string{
		"Your tunnel uses 28400; add\n    <code>http://localhost:28400</code> to <code>\"origins\"</code>",
		"or use the\n    same port on both sides",
		`<code class="command">ssh -L 8080:localhost:8080 you@this-machine</code>`,
		`<a href="` + testOrigin + `/setup?token=` + token + `">` + testOrigin + `</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("wrong-host page lacks %q:\n%s", want, body)
		}
	}
	// At another address than localhost, no tunnel port is spoken of.
	req = httptest.NewRequest(http.MethodGet, "http://192.168.1.20:28400/login", nil)
	req.Host = "192.168.1.20:28400"
	rec = httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if body := rec.Body.String(); strings.Contains(body, "Your tunnel uses") || !strings.Contains(body, `<a href="`+testOrigin+`/login">`) {
		t.Errorf("at a LAN address:\n%s", body)
	}
}

// The setup, sign-in and unlock pages carry the configured origins and the text pages.js shows
// when this browser is not in a secure context or not at a configured origin.
func TestPasskeyPagesCarryTheOriginCheck(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	for _, path := range []string{"/setup?token=" + f.setupToken(), "/login", "/unlock"} {
		body := b.get(path).Body.String()
		for _, want := range []string{
			`id="origin-check"`, `data-origins="[&#34;` + testOrigin + `&#34;]"`, `data-why="insecure"`, `data-why="origin"`,
			"ssh -L 8080:localhost:8080 you@this-machine", "iCloud Keychain, Google Password Manager, 1Password",
		} {
			if strings.Contains(want, "iCloud") && !strings.HasPrefix(path, "/setup") {
				continue // which passkeys can unlock is said where one is made (and on a locked /unlock)
			}
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
}

// A setup link opened while an owner exists says it adds a passkey to that owner.
func TestSetupPageSaysItAddsToTheOwner(t *testing.T) {
	f := newFixture(t)
	first := f.browser().get("/setup?token=" + f.setupToken()).Body.String()
	if strings.Contains(first, "already has an owner") {
		t.Fatal("the first setup speaks of an existing owner")
	}
	f.signUp(authtest.New(testOrigin))
	again := f.browser().get("/setup?token=" + f.setupToken()).Body.String()
	if !strings.Contains(again, "Maven already has an owner, with 1 passkey.") || !strings.Contains(again, "adds one more passkey to that same owner") {
		t.Fatalf("setup with an owner:\n%s", again)
	}
}

// Removing the passkey this browser signed in with sends it to a sign-in page that says what
// happened and what to do; a recovery-code unlock, which signs no one in, does the same.
func TestSignInPageSaysWhyItIsShown(t *testing.T) {
	f := newFixture(t)
	laptop, phone := authtest.New(testOrigin), authtest.New(testOrigin)
	b := f.signUp(laptop)
	b.addPasskey(laptop, phone, "Phone")
	b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 1, ""))
	r := b.htmx(http.MethodPost, "/passkeys/1/remove", url.Values{})
	if got := r.Header().Get("HX-Redirect"); got != "/login?why=passkey-removed" {
		t.Fatalf("removing this session's passkey: %d, HX-Redirect %q", r.Code, got)
	}
	if r := b.get("/tools"); r.Code != http.StatusSeeOther {
		t.Fatal("still signed in")
	}
	for why, want := range map[string]string{
		"passkey-removed": "You removed the passkey this browser signed in with",
		"recovered":       "The recovery code unlocked Maven, but it signs no one in",
	} {
		body := b.get("/login?why=" + why).Body.String()
		if !strings.Contains(body, want) || !strings.Contains(body, "maven setup-link") {
			t.Errorf("/login?why=%s lacks %q:\n%s", why, want, body)
		}
	}
	if body := b.get("/login?why=%3Cb%3Ex").Body.String(); strings.Contains(body, "<b>x") || strings.Contains(body, `class="notice"`) {
		t.Error("an unknown reason is shown")
	}
}

// An empty allowlist says which config file Maven read (or would read) and how to add a server.
func TestEmptyToolsNamesTheConfig(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	body := b.get("/tools").Body.String()
	for _, want := range []string{"No tools yet.", "No config file was found at <code>/etc/maven/maven.json</code>",
		`"mcpServers"`, "@modelcontextprotocol/server-memory"} {
		if !strings.Contains(body, want) {
			t.Errorf("empty /tools lacks %q:\n%s", want, body)
		}
	}
	// A reload read the file since: the page follows it.
	f.configLoaded.Store(true)
	body = b.get("/tools").Body.String()
	if !strings.Contains(body, "Maven read its config from <code>/etc/maven/maven.json</code>") {
		t.Errorf("after a reload read the file, /tools says:\n%s", body)
	}
}
