package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// agentClient is an OAuth client of Maven's authorization server, registered as go-sdk's
// client registers, whose redirect URI is a small server of the test's: what the owner's
// browser is sent there arrives on got.
type agentClient struct {
	cfg *oauth2.Config
	got chan url.Values
}

// registerAgent registers a public client named name at m.
func registerAgent(t *testing.T, m *mavenProc, name string) agentClient {
	t.Helper()
	got := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, "<!doctype html><title>Back at the client</title><p>Done.</p>")
	}))
	t.Cleanup(cb.Close)
	body, _ := json.Marshal(map[string]any{"redirect_uris": []string{cb.URL + "/callback"}, "token_endpoint_auth_method": "none",
		"client_name": name, "grant_types": []string{"authorization_code", "refresh_token"}})
	res, err := http.Post(m.URL("/oauth/register"), "application/json", strings.NewReader(string(body)))
	check(t, err, "register a client")
	defer res.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&reg) != nil {
		t.Fatalf("registration: %s", res.Status)
	}
	return agentClient{got: got, cfg: &oauth2.Config{ClientID: reg.ClientID, RedirectURL: cb.URL + "/callback",
		Endpoint: oauth2.Endpoint{AuthURL: m.URL("/oauth/authorize"), TokenURL: m.URL("/oauth/token"), AuthStyle: oauth2.AuthStyleInParams}}}
}

// answer waits for what the owner's browser brought to the client's redirect URI.
func (c agentClient) answer(t *testing.T) url.Values {
	t.Helper()
	select {
	case q := <-c.got:
		return q
	case <-time.After(actionTimeout):
		t.Fatal("the browser never came back to the client")
		return nil
	}
}

// enabledTool proposes a local command and enables it from /tools with the passkey.
func enabledTool(t *testing.T, m *mavenProc, tb *tab, name string) toolJSON {
	t.Helper()
	m.CLI("propose", name, "--", "/bin/echo", name)
	tool := waitTool(t, m, name, "proposed")
	tb.Goto(m.URL("/tools"))
	check(t, button(row(tb, tool.ID), "Enable").Click(), "enable "+name)
	check(t, tb.Expect.Locator(row(tb, tool.ID)).ToHaveAttribute("data-state", "enabled"), name+" enabled")
	return tool
}

// TestConsentWithPasskey: a client registers; the owner's phone, signed out, opens its
// authorization URL, signs in with the passkey and is back at the same request, which names the
// client, where its answer goes, and the enabled tool, ticked. Allow with passkey (one more
// gesture, the step-up) sends the browser to the client with the code, the state and iss; the
// code is exchanged; /clients lists the client, and its Revoke ends the refresh token.
func TestConsentWithPasskey(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	owner := newBrowser(t)
	authID := registerOwner(t, m, owner)
	hello := enabledTool(t, m, owner, "hello")
	agent := registerAgent(t, m, "E2E agent")
	verifier := oauth2.GenerateVerifier()
	authURL := agent.cfg.AuthCodeURL("e2e-state-1", oauth2.S256ChallengeOption(verifier))

	tb := newBrowser(t, phone)
	phoneKey := copyPasskeys(t, owner.Page, authID, tb.Page, passkey())
	tb.Goto(authURL)
	check(t, tb.Expect.Locator(tb.Page.Locator("h1")).ToContainText("E2E agent"), "the page names the client")
	check(t, pageButton(tb.Page, "Sign in with passkey").Click(), "sign in from the consent page")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(authURL), "back at the same request")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Allow with passkey")).ToBeVisible(), "Allow offered")
	to, _ := url.Parse(agent.cfg.RedirectURL)
	check(t, tb.Expect.Locator(tb.Page.Locator(".redirect-host")).ToHaveText(to.Host), "the page names where the answer goes")
	check(t, tb.Expect.Locator(tb.Page.Locator(fmt.Sprintf(`input[name="tool"][value="%d"]`, hello.ID))).ToBeChecked(), "the enabled tool is ticked")
	checkAxe(t, tb, "phone consent")
	before := signCount(t, tb, phoneKey)
	check(t, pageButton(tb.Page, "Allow with passkey").Click(), "click Allow with passkey")
	q := agent.answer(t)
	if q.Get("code") == "" || q.Get("state") != "e2e-state-1" || q.Get("iss") != m.BaseURL {
		t.Fatalf("the client got %v", q)
	}
	if after := signCount(t, tb, phoneKey); after != before+1 {
		t.Errorf("sign count %d → %d: want one assertion for the step-up", before, after)
	}
	check(t, tb.Expect.Page(tb.Page).ToHaveTitle("Back at the client"), "the browser is at the client")
	tok, err := agent.cfg.Exchange(context.Background(), q.Get("code"), oauth2.VerifierOption(verifier))
	check(t, err, "exchange the code")

	tb.Goto(m.URL("/clients"))
	item := tb.Page.Locator(fmt.Sprintf(`[data-client="%s"]`, agent.cfg.ClientID))
	check(t, tb.Expect.Locator(item).ToContainText("E2E agent"), "/clients lists the client")
	check(t, tb.Expect.Locator(item).ToContainText("hello"), "with its tool")
	check(t, button(item, "Revoke").Click(), "click Revoke")
	check(t, tb.Expect.Locator(item).ToHaveAttribute("data-state", "revoked"), "the client is revoked")
	if _, err := agent.cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Error("a revoked client's refresh token still works")
	}
}

// TestConsentPageIsNeverFramed: another site that frames the consent page, in the owner's
// signed-in browser, gets no page: its frame holds no Allow.
func TestConsentPageIsNeverFramed(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t)
	registerOwner(t, m, tb)
	agent := registerAgent(t, m, "E2E agent")
	authURL := agent.cfg.AuthCodeURL("e2e-state-2", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>framing</title><iframe src=%q onload="document.title='framed'"></iframe>`, authURL)
	}))
	defer evil.Close()
	tb.Goto(evil.URL)
	check(t, tb.Expect.Page(tb.Page).ToHaveTitle("framed"), "the frame finished loading")
	for _, f := range tb.Page.Frames() {
		if f == tb.Page.MainFrame() {
			continue
		}
		if n, err := f.Locator("button").Count(); err == nil && n > 0 {
			t.Errorf("the framed consent page rendered %d buttons at %s", n, f.URL())
		}
	}
	// The same page opened as itself works.
	tb.Goto(authURL)
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Allow with passkey")).ToBeVisible(), "the page itself shows Allow")
}
