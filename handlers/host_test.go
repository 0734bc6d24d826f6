package handlers_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"maven/app/auth/authtest"
)

// TestBrowserRequestsAtAnotherHostAreRefused: a page served at another name for this machine
// (a DNS-rebound one: the attacker's name, resolving to Maven) is same-origin with itself, so
// cross-origin protection lets its POSTs through. The Host check refuses every browser-facing
// request at a host that is not a configured origin's: pages get a short page linking to the
// configured origin, ceremonies and the recovery form are refused untried. /healthz, /voice and
// /metrics answer at any Host.
func TestBrowserRequestsAtAnotherHostAreRefused(t *testing.T) {
	vf := newVaultFixture(t, "")
	_, code := vf.setUp(authtest.New(testOrigin))
	vf.boot()
	const evil = "rebound.example:8080"
	send := func(method, path, contentType, body string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://"+evil+path, strings.NewReader(body))
		req.Host = evil
		req.RemoteAddr = "198.51.100.200:1234"
		// The rebound page is same-origin with itself.
		req.Header.Set("Origin", "http://"+evil)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		vf.h.ServeHTTP(rec, req)
		return rec
	}

	for _, path := range []string{"/unlock", "/login", "/setup?token=x", "/tools", "/"} {
		r := send(http.MethodGet, path, "", "")
		body := r.Body.String()
		if r.Code != http.StatusMisdirectedRequest || !strings.Contains(body, `<a href="`+testOrigin+`/">`+testOrigin+`</a>`) ||
			!strings.Contains(body, "not at this address") {
			t.Errorf("GET %s at %s: %d\n%s", path, evil, r.Code, body)
		}
		if len(r.Result().Cookies()) != 0 {
			t.Errorf("GET %s at %s set a cookie", path, evil)
		}
	}
	// The recovery form: refused untried, however often.
	for range 20 {
		if r := send(http.MethodPost, "/unlock/recovery", "application/x-www-form-urlencoded", "code="+code); r.Code != http.StatusMisdirectedRequest {
			t.Fatalf("recovery at %s: %d", evil, r.Code)
		}
	}
	if vf.healthz() != healthLocked || strings.Contains(vf.logs.String(), `method="recovery code"`) {
		t.Fatal("a recovery code posted at another host was tried")
	}
	// The ceremonies: refused as JSON, no ceremony begun.
	for _, path := range []string{"/unlock/begin", "/login/begin", "/setup/begin"} {
		r := send(http.MethodPost, path, "application/json", "{}", "Accept", "application/json")
		if r.Code != http.StatusMisdirectedRequest || !strings.Contains(r.Body.String(), "origins") {
			t.Errorf("POST %s at %s: %d %s", path, evil, r.Code, r.Body.String())
		}
	}

	// The machine endpoints answer at any Host, by IP included.
	for _, host := range []string{evil, "127.0.0.1:8080", "[::1]:8080"} {
		machine := func(method, path, token, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, "http://"+host+path, strings.NewReader(body))
			req.Host = host
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			vf.h.ServeHTTP(rec, req)
			return rec
		}
		if r := machine(http.MethodGet, "/healthz", "", ""); r.Code != http.StatusOK {
			t.Errorf("/healthz at %s: %d", host, r.Code)
		}
		if r := machine(http.MethodPost, "/voice", testVoiceToken, `{"conversation_id":"c","text":"hello"}`); r.Code != http.StatusOK {
			t.Errorf("/voice at %s: %d %s", host, r.Code, r.Body.String())
		}
		if r := machine(http.MethodGet, "/metrics", testMetricsToken, ""); r.Code != http.StatusOK {
			t.Errorf("/metrics at %s: %d", host, r.Code)
		}
	}

	// The owner's normal path at the configured origin.
	owner := vf.browser()
	wantRedirect(t, "recovery at the configured origin", owner.recovery(code), "/login?why=recovered")
	if vf.healthz() != healthUnlocked {
		t.Fatal("the recovery code did not unlock at the configured origin")
	}
}

// TestHostCheckBehindATrustedProxy: the Host a trusted proxy forwards is the one checked; from
// anyone else the header is ignored.
func TestHostCheckBehindATrustedProxy(t *testing.T) {
	f := newFixture(t)
	srv := f.listen()
	get := func(host, forwardedHost string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if forwardedHost != "" {
			req.Header.Set("X-Forwarded-Host", forwardedHost)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if got := get("upstream:9000", testHost); got != http.StatusOK {
		t.Errorf("the proxy forwards the configured host: %d", got)
	}
	if got := get(testHost, "rebound.example"); got != http.StatusMisdirectedRequest {
		t.Errorf("the proxy forwards another host: %d", got)
	}
	// A request that does not come through the proxy gets no say.
	req := httptest.NewRequest(http.MethodGet, "http://upstream:9000/login", nil)
	req.Host = "upstream:9000"
	req.Header.Set("X-Forwarded-Host", testHost)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("X-Forwarded-Host from a client: %d", rec.Code)
	}
}
