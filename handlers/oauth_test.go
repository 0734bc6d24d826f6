package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/activity"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/oauth"
	"maven/app/oauth/oauthtest"
)

// protectedFixture is the web app with a real manager over one OAuth-protected server, "tasks".
func protectedFixture(t *testing.T) (*vaultFixture, *oauthtest.Server) {
	t.Helper()
	fake := oauthtest.New(t, mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", ReadOnly: true, Text: "none"}).HTTPHandler(),
		oauthtest.Options{ChallengeScope: "tasks:read"})
	return newVaultFixture(t, fmt.Sprintf(`{"tasks": {"type": "http", "url": %q}}`, fake.URL)), fake
}

// signInForm is what the card's Sign in button posts for the server's need as shown now.
func (vf *vaultFixture) signInForm(server string) url.Values {
	for _, st := range vf.mgr.Status() {
		if st.Name == server {
			return url.Values{"server": {server}, "fingerprint": {oauth.Digest(server, st.AuthServer, st.AuthScopes)}}
		}
	}
	return nil
}

// follow requests the authorization URL as the browser does and returns where the
// authorization server sends it back.
func follow(t *testing.T, authURL string) *url.URL {
	t.Helper()
	back, err := oauthtest.Authorize(t.Context(), authURL)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestSignInFromTheServersCard is the owner's path: the card shows what the server asks for and
// a Sign in button; the button needs a step-up naming the server, its authorization server and
// the scopes; then the browser goes to the authorization server and comes back to Maven's
// callback, which only the owner's session can use, once; the server connects.
func TestSignInFromTheServersCard(t *testing.T) {
	vf, fake := protectedFixture(t)
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	eventually(t, "needs-auth", func() bool { return vf.serverState("tasks") == mcp.StateNeedsAuth })

	card := b.get("/tools/servers").Body.String()
	for _, want := range []string{`data-server="tasks" data-state="needs-auth"`, ">Sign in</button>", fake.Issuer, "<code>tasks:read</code>"} {
		if !strings.Contains(card, want) {
			t.Fatalf("the card lacks %q:\n%s", want, card)
		}
	}

	form := vf.signInForm("tasks")
	rec := b.htmx(http.MethodPost, "/servers/sign-in", form)
	var asked map[string]auth.Approval
	if rec.Code != http.StatusForbidden || json.Unmarshal([]byte(rec.Header().Get("HX-Trigger")), &asked) != nil {
		t.Fatalf("sign in without a step-up: %d %q", rec.Code, rec.Header().Get("HX-Trigger"))
	}
	approval := asked["maven:step-up"]
	if approval.Action != auth.ActionSignIn || len(approval.Items) != 1 || approval.Items[0].Digest != form.Get("fingerprint") {
		t.Fatalf("the step-up asked for %+v", approval)
	}
	begin := b.beginStepUp(approval)
	for _, want := range []string{"“tasks”", fake.Issuer, "tasks:read"} {
		if !strings.Contains(begin.Prompt, want) {
			t.Fatalf("the step-up prompt %q does not name %q", begin.Prompt, want)
		}
	}
	b.mustStepUp(a, approval)
	rec = b.htmx(http.MethodPost, "/servers/sign-in", form)
	authURL := rec.Header().Get("HX-Redirect")
	if rec.Code != http.StatusNoContent || !strings.HasPrefix(authURL, fake.Issuer+"/authorize?") {
		t.Fatalf("sign in after the step-up: %d, HX-Redirect %q", rec.Code, authURL)
	}
	back := follow(t, authURL)
	if back.Scheme+"://"+back.Host+back.Path != testOrigin+oauth.CallbackPathFor(fake.Issuer) {
		t.Fatalf("the authorization server sent the browser to %s", back)
	}

	// Someone else's browser cannot use the answer, nor spend it.
	if r := vf.browser().get(back.RequestURI()); r.Code == http.StatusSeeOther && r.Header().Get("Location") == "/tools#mcp-servers" {
		t.Fatal("an anonymous browser finished the owner's sign-in")
	}
	rec = b.get(back.RequestURI())
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/tools#mcp-servers" {
		t.Fatalf("callback: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	eventually(t, "connected", func() bool { return vf.serverState("tasks") == mcp.StateConnected })
	if rec := b.get(back.RequestURI()); rec.Code != http.StatusBadRequest {
		t.Fatalf("a replayed callback: %d", rec.Code)
	}
	if p := fake.Problems(); len(p) > 0 {
		t.Fatalf("the authorization server saw mistakes: %v", p)
	}
	page, err := vf.feed.Query(t.Context(), activity.Filter{Action: activity.ActionSignedIn})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("signed-in events: %+v %v", page.Entries, err)
	}
}

// TestSignInNeedsAVaultAndWhatTheCardShowed: without a vault the card says what must exist
// first and offers no button, and the action is refused; a step-up for a need the card does not
// show (stale, or made up) is refused before any passkey prompt.
func TestSignInNeedsAVaultAndWhatTheCardShowed(t *testing.T) {
	vf, _ := protectedFixture(t)
	a := authtest.New(testOrigin)
	b := vf.signUp(a) // a passkey, but no vault: it was never let unlock
	eventually(t, "needs-auth", func() bool { return vf.serverState("tasks") == mcp.StateNeedsAuth })
	card := b.get("/tools/servers").Body.String()
	if strings.Contains(card, ">Sign in</button>") || !strings.Contains(card, "register a passkey that can unlock Maven") {
		t.Fatalf("the card without a vault:\n%s", card)
	}
	form := vf.signInForm("tasks")
	approval := auth.One(auth.ActionSignIn, 0, form.Get("fingerprint"))
	b.mustStepUp(a, approval)
	if rec := b.htmx(http.MethodPost, "/servers/sign-in", form); rec.Code != http.StatusConflict {
		t.Fatalf("sign in without a vault: %d", rec.Code)
	}

	stale := auth.One(auth.ActionSignIn, 0, oauth.Digest("tasks", "https://elsewhere.example", "tasks:read"))
	var begin beginAnswer
	if rec := b.postJSON("/step-up/begin", stale, &begin); rec.Code != http.StatusConflict {
		t.Fatalf("a step-up for a need the card does not show: %d %+v", rec.Code, begin)
	}
}

// TestSignInToAnUnknownServerIsNotFound: a sign-in naming a server the config does not have,
// after a step-up for one it has, is a plain 404 that names nothing, not Maven failing.
func TestSignInToAnUnknownServerIsNotFound(t *testing.T) {
	vf, _ := protectedFixture(t)
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	eventually(t, "needs-auth", func() bool { return vf.serverState("tasks") == mcp.StateNeedsAuth })
	form := vf.signInForm("tasks")
	b.mustStepUp(a, auth.One(auth.ActionSignIn, 0, form.Get("fingerprint")))
	form.Set("server", "nope")
	rec := b.htmx(http.MethodPost, "/servers/sign-in", form)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no MCP server") {
		t.Fatalf("sign in to an unknown server: %d %s", rec.Code, rec.Body.String())
	}
}

// TestSignInNamesWhereTheBrowserGoes: the card and the step-up prompt name the authorization
// server by its host, and when its metadata sends the browser to a page on another host (as a
// hostile one pointing at an honest one's page does, RFC 9700 section 4.4) they say so.
func TestSignInNamesWhereTheBrowserGoes(t *testing.T) {
	honest := oauthtest.New(t, mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", ReadOnly: true, Text: "none"}).HTTPHandler(),
		oauthtest.Options{AnyResource: true})
	hostile := oauthtest.NewMixUp(t, honest, oauthtest.MixUpOptions{})
	vf := newVaultFixture(t, fmt.Sprintf(`{"hostile": {"type": "http", "url": %q}}`, hostile.URL))
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	eventually(t, "needs-auth", func() bool { return vf.serverState("hostile") == mcp.StateNeedsAuth })
	hostileHost, honestHost := strings.TrimPrefix(hostile.Issuer, "http://"), strings.TrimPrefix(honest.Issuer, "http://")

	card := b.get("/tools/servers").Body.String()
	for _, want := range []string{"<strong>" + hostileHost + "</strong>", "Sign-in page", "<strong>" + honestHost + "</strong>, not the authorization server"} {
		if !strings.Contains(card, want) {
			t.Fatalf("the card lacks %q:\n%s", want, card)
		}
	}
	begin := b.beginStepUp(auth.One(auth.ActionSignIn, 0, vf.signInForm("hostile").Get("fingerprint")))
	for _, want := range []string{"authorization server " + hostileHost, "signs in at " + honestHost + ", which is not " + hostileHost} {
		if !strings.Contains(begin.Prompt, want) {
			t.Fatalf("the step-up prompt %q does not say %q", begin.Prompt, want)
		}
	}
}

// TestAFailedSignInIsLoggedOnce: the owner declines at the authorization server; the callback
// sends the browser back to the card, which says so, and the log says it once (not once by the
// handler and once by the sign-in).
func TestAFailedSignInIsLoggedOnce(t *testing.T) {
	vf, _ := protectedFixture(t)
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	eventually(t, "needs-auth", func() bool { return vf.serverState("tasks") == mcp.StateNeedsAuth })
	form := vf.signInForm("tasks")
	b.mustStepUp(a, auth.One(auth.ActionSignIn, 0, form.Get("fingerprint")))
	rec := b.htmx(http.MethodPost, "/servers/sign-in", form)
	back := follow(t, rec.Header().Get("HX-Redirect"))
	back.RawQuery = url.Values{"error": {"access_denied"}, "state": {back.Query().Get("state")}}.Encode()
	if rec := b.get(back.RequestURI()); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/tools#mcp-servers" {
		t.Fatalf("callback: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	for _, st := range vf.mgr.Status() {
		if st.Name == "tasks" && !strings.Contains(st.LastError, "access_denied") {
			t.Fatalf("the card says %q: want the refusal", st.LastError)
		}
	}
	if n := strings.Count(strings.ToLower(vf.logs.String()), "sign-in failed"); n != 1 {
		t.Fatalf("the failed sign-in is logged %d times:\n%s", n, vf.logs.String())
	}
}
