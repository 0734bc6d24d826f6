package e2e

// Helpers the journeys share: a scripted MCP server on loopback, a daemon config pointing at it,
// the owner's registration, the allowlist as `maven tools --json` reports it, and step-ups driven
// from the page with fetch. Every wait polls a condition under a deadline; nothing sleeps.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

const (
	// pollTimeout bounds a wait on the daemon (its database, its MCP discovery).
	pollTimeout = 15 * time.Second
	pollEvery   = 50 * time.Millisecond
)

// waitFor polls cond until it holds, failing the test with what after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// check fails the test at once on a failed Playwright action or assertion.
func check(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ---------------------------------------------------------------------------------------------
// A scripted MCP server

// scriptedHTTP is a scripted MCP server served over streamable HTTP on a loopback port of the
// test process.
type scriptedHTTP struct {
	*mcptest.Scripted
	URL  string // http://127.0.0.1:PORT/mcp
	srv  *http.Server
	once sync.Once
}

// startScripted serves a scripted MCP server offering tools until Stop or the end of the test.
func startScripted(t *testing.T, tools ...mcptest.ToolSpec) *scriptedHTTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedHTTP{Scripted: mcptest.NewScripted(tools...), URL: "http://" + ln.Addr().String() + "/mcp"}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.HTTPHandler())
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	t.Cleanup(s.Stop)
	return s
}

// Stop shuts the server down at once: its listener and every open connection close, as when
// the process behind it dies.
func (s *scriptedHTTP) Stop() {
	s.once.Do(func() {
		s.Close()
		s.srv.Close()
	})
}

// configFor is a daemon config with a fast refresh, the given step-up window, and one HTTP MCP
// server named "tasks" at url.
func configFor(stepUpWindow, url string) string {
	b, err := json.Marshal(map[string]any{
		"refresh_interval": "1s",
		"step_up_window":   stepUpWindow,
		"mcpServers": map[string]any{
			"tasks": map[string]any{"type": "http", "url": url},
		},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ---------------------------------------------------------------------------------------------
// The allowlist as the daemon's database has it

// toolJSON is one row of `maven tools --json`.
type toolJSON struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Cmd         []string `json:"cmd"`
	Scope       string   `json:"scope"`
	State       string   `json:"state"`
	Destructive bool     `json:"destructive"`
	ReadOnly    bool     `json:"read_only"`
	Fingerprint *string  `json:"fingerprint"`
	Provenance  string   `json:"provenance"`
	UpdatedAt   string   `json:"updated_at"`
}

// tools returns the allowlist through `maven tools --json`.
func tools(t *testing.T, m *mavenProc) map[string]toolJSON {
	t.Helper()
	var rows []toolJSON
	out := m.CLI("tools", "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("maven tools --json: %v\n%s", err, out)
	}
	byName := make(map[string]toolJSON, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	return byName
}

// waitTool polls the allowlist until the named row is in state, and returns it.
func waitTool(t *testing.T, m *mavenProc, name, state string) toolJSON {
	t.Helper()
	var row toolJSON
	waitFor(t, pollTimeout, fmt.Sprintf("tool %s to be %s", name, state), func() bool {
		var ok bool
		row, ok = tools(t, m)[name]
		return ok && row.State == state
	})
	return row
}

// toolState is the state of the named row in the database ("" if there is none).
func toolState(t *testing.T, m *mavenProc, name string) string {
	t.Helper()
	return tools(t, m)[name].State
}

// ---------------------------------------------------------------------------------------------
// The owner in the browser

// button finds a button by its label: its accessible name is the label, or the label and then
// what it acts on, as the pages name a row's buttons ("Enable" reads "Enable echo").
func button(in interface {
	GetByRole(playwright.AriaRole, ...playwright.LocatorGetByRoleOptions) playwright.Locator
}, label string) playwright.Locator {
	return in.GetByRole(*playwright.AriaRoleButton, playwright.LocatorGetByRoleOptions{Name: labelled(label)})
}

// pageButton finds a button on the page by its label, as button does.
func pageButton(p playwright.Page, label string) playwright.Locator {
	return p.GetByRole(*playwright.AriaRoleButton, playwright.PageGetByRoleOptions{Name: labelled(label)})
}

// labelled matches an accessible name that is label, or label followed by a space and more.
func labelled(label string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(label) + `( |$)`)
}

// toolsURL matches the /tools page, however the query string reads.
var toolsURL = regexp.MustCompile(`/tools(\?.*)?$`)

// registerOwner attaches a passkey authenticator to the tab, opens the daemon's first setup
// link, registers the owner's passkey with `Register passkey`, and waits until the tab is signed
// in on /tools. A passkey with PRF also unlocks the vault: the first one made shows the vault's
// recovery code once, which this acknowledges. It returns the authenticator's id.
func registerOwner(t *testing.T, m *mavenProc, tb *tab) string {
	t.Helper()
	id := addAuthenticator(t, tb.Page, passkey())
	tb.Goto(m.Rebase(m.SetupLink()))
	check(t, pageButton(tb.Page, "Register passkey").Click(), "click Register passkey")
	// Where registration leads: /tools (its nav), the recovery code, or a notice that the
	// passkey could not be set up to unlock.
	signedIn := tb.Page.Locator(`nav[aria-label="Main"]`)
	recovery := tb.Page.Locator("#recovery-code")
	notice := tb.Page.Locator("main > section.card:not(#recovery-code) > p.warning")
	check(t, registered(tb, signedIn.Or(recovery).Or(notice).First()), "registration finished")
	if !toolsURL.MatchString(tb.Page.URL()) {
		if ok, _ := recovery.IsVisible(); ok {
			check(t, pageButton(tb.Page, "I have saved it").Click(), "acknowledge the recovery code")
		} else if ok, _ := notice.IsVisible(); ok {
			text, _ := notice.TextContent()
			t.Fatalf("registration: %s", text)
		}
	}
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(toolsURL), "signed in on /tools after registering")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Sign out")).ToBeVisible(), "Sign out offered")
	return id
}

// registered waits, for as long as a first registration may take (registerTimeout), until where
// it leads is visible.
func registered(tb *tab, where playwright.Locator) error {
	return tb.Expect.Locator(where).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{
		Timeout: playwright.Float(float64(registerTimeout.Milliseconds())),
	})
}

// holdNext holds the page's next request to a URL pattern matches (a glob, as Page.Route takes
// it) and lets every later one through; the func it returns waits for the held request, for the
// test to Continue when it chooses. what names the request in a failure.
func holdNext(t *testing.T, tb *tab, pattern, what string) func() playwright.Route {
	t.Helper()
	var hold atomic.Bool
	hold.Store(true)
	routes := make(chan playwright.Route, 1)
	check(t, tb.Page.Route(pattern, func(r playwright.Route) {
		if hold.CompareAndSwap(true, false) {
			routes <- r
			return
		}
		r.Continue()
	}), "intercept "+what)
	return func() playwright.Route {
		t.Helper()
		select {
		case r := <-routes:
			return r
		case <-time.After(actionTimeout):
			t.Fatalf("%s: nothing was sent within %s", what, actionTimeout)
			return nil
		}
	}
}

// row is the element of allowlist row id on /tools.
func row(tb *tab, id int64) playwright.Locator {
	return tb.Page.Locator(fmt.Sprintf("#tool-%d", id))
}

// signCount is the sign count of the authenticator's one credential: it grows by one with every
// assertion.
func signCount(t *testing.T, tb *tab, authID string) int {
	t.Helper()
	return onlyCredential(t, cdpSession(t, tb.Page), authID).SignCount
}

// stepUpFromPage performs a step-up for enabling tool id, as its row on the page shows it
// (data-fingerprint), by driving the JSON endpoints with fetch, as maven.js does, and returns
// the status of /step-up/finish (or an error text). Every await has a timeout: page.Evaluate
// itself has none.
const stepUpFromPage = `async (id) => {
	const fingerprint = document.getElementById("tool-" + id).dataset.fingerprint;
	const toB64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
		.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
	const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")
		+ "=".repeat((4 - s.length % 4) % 4)), (c) => c.charCodeAt(0));
	const post = (url, body) => fetch(url, {method: "POST", credentials: "same-origin",
		headers: {"Content-Type": "application/json", "Accept": "application/json"},
		body: JSON.stringify(body), signal: AbortSignal.timeout(10000)});
	const begin = await post("/step-up/begin", {action: "enable_tool", items: [{id: id, fingerprint: fingerprint}]});
	if (!begin.ok) return {error: "begin: " + begin.status + " " + await begin.text()};
	const pk = (await begin.json()).options.publicKey;
	pk.challenge = fromB64u(pk.challenge);
	pk.allowCredentials = (pk.allowCredentials || []).map((c) => ({...c, id: fromB64u(c.id)}));
	let cred;
	try {
		cred = await navigator.credentials.get({publicKey: pk, signal: AbortSignal.timeout(10000)});
	} catch (e) {
		return {error: e.name + ": " + e.message};
	}
	const r = cred.response;
	const finish = await post("/step-up/finish", {credential: {
		id: cred.id, rawId: toB64u(cred.rawId), type: cred.type,
		response: {
			clientDataJSON: toB64u(r.clientDataJSON),
			authenticatorData: toB64u(r.authenticatorData),
			signature: toB64u(r.signature),
			userHandle: r.userHandle ? toB64u(r.userHandle) : undefined,
		},
		clientExtensionResults: {},
	}});
	return {status: finish.status, body: await finish.text()};
}`

// postFromPage POSTs to path from the page with fetch, same-origin with the session cookie, as
// a script of the page would, with form (an object, or null) as its form body, and returns the
// status and the JSON answer.
const postFromPage = `async ([path, form]) => {
	const headers = {"Accept": "application/json"};
	if (form) headers["Content-Type"] = "application/x-www-form-urlencoded";
	const res = await fetch(path, {method: "POST", credentials: "same-origin", redirect: "manual",
		headers: headers, body: form ? new URLSearchParams(form).toString() : undefined,
		signal: AbortSignal.timeout(10000)});
	let body = {};
	try { body = await res.json(); } catch (_) {}
	return {status: res.status, type: res.type, body: body};
}`

// fetchResult is what stepUpFromPage and postFromPage return.
type fetchResult struct {
	Status int            `json:"status"`
	Type   string         `json:"type"` // "opaqueredirect" for a redirect not followed
	Body   map[string]any `json:"body"`
	Error  string         `json:"error"`
}

// stepUp performs a step-up for enabling tool id from the page and fails unless it succeeds.
func stepUp(t *testing.T, tb *tab, id int64) {
	t.Helper()
	var res struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
		Error  string `json:"error"`
	}
	evalJSON(t, tb.Page, stepUpFromPage, int(id), &res) // Playwright passes int, not int64, as a number
	if res.Error != "" || res.Status != http.StatusOK {
		t.Fatalf("step-up for tool %d: status %d %s %s", id, res.Status, res.Body, res.Error)
	}
}

// postFrom POSTs to path from the page (see postFromPage); form may be nil.
func postFrom(t *testing.T, tb *tab, path string, form map[string]any) fetchResult {
	t.Helper()
	var res fetchResult
	evalJSON(t, tb.Page, postFromPage, []any{path, form}, &res)
	return res
}

// enableFrom posts Enable of row id from the page the way its button does: with the
// fingerprint the page rendered on the row.
func enableFrom(t *testing.T, tb *tab, id int64) fetchResult {
	t.Helper()
	fp, err := row(tb, id).GetAttribute("data-fingerprint")
	check(t, err, "read the row's data-fingerprint")
	if fp == "" {
		t.Fatalf("row %d carries no data-fingerprint", id)
	}
	return postFrom(t, tb, "/tools/"+itoa(id)+"/enable", map[string]any{"fingerprint": fp})
}

// copyPasskeys gives page an authenticator with opts holding copies of the credentials of
// authenticator id on another page, private keys and sign counts included (not PRF secrets,
// which CDP cannot carry). It returns the new authenticator's id. Use only one of the two
// afterwards: their sign counts would diverge and the daemon would take one for a clone.
func copyPasskeys(t *testing.T, from playwright.Page, id string, to playwright.Page, opts authenticatorOptions) string {
	t.Helper()
	var res struct {
		Credentials []map[string]any `json:"credentials"`
	}
	cdpSend(t, cdpSession(t, from), "WebAuthn.getCredentials", map[string]any{"authenticatorId": id}, &res)
	if len(res.Credentials) == 0 {
		t.Fatal("the authenticator holds no credential to copy")
	}
	newID := addAuthenticator(t, to, opts)
	for _, c := range res.Credentials {
		cdpSend(t, cdpSession(t, to), "WebAuthn.addCredential", map[string]any{"authenticatorId": newID, "credential": c}, nil)
	}
	return newID
}

// sessionCookie is the tab's Maven session cookie, for requests made outside the browser.
func sessionCookie(t *testing.T, tb *tab, m *mavenProc) *http.Cookie {
	t.Helper()
	cookies, err := tb.Context.Cookies(m.BaseURL)
	check(t, err, "read cookies")
	for _, c := range cookies {
		if c.Name == "maven_session" {
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatalf("no maven_session cookie among %d cookies", len(cookies))
	return nil
}

// noRedirects is an HTTP client that shows a redirect instead of following it.
var noRedirects = &http.Client{
	Timeout:       actionTimeout,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// hasText filters locators to those containing text.
func hasText(text string) playwright.LocatorFilterOptions {
	return playwright.LocatorFilterOptions{HasText: text}
}

// regexpOf compiles a pattern for an assertion.
func regexpOf(pattern string) *regexp.Regexp { return regexp.MustCompile(pattern) }

// taskJourney is how the step-up journeys begin: a scripted server offering a read-only
// list_tasks and a destructive delete_task, the daemon with that step-up window, the owner
// registered, both tools proposed, and /tools open.
type taskJourney struct {
	m         *mavenProc
	tb        *tab
	authID    string // the owner's virtual authenticator
	list, del toolJSON
	mcpServer *scriptedHTTP
}

func startTaskJourney(t *testing.T, stepUpWindow string) taskJourney {
	t.Helper()
	j := taskJourney{mcpServer: startScripted(t,
		mcptest.ToolSpec{Name: "list_tasks", Description: "Lists open tasks.", ReadOnly: true},
		mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task."},
	)}
	j.m = startMaven(t, mavenOptions{Config: configFor(stepUpWindow, j.mcpServer.URL)})
	j.tb = newBrowser(t)
	j.authID = registerOwner(t, j.m, j.tb)
	j.list = waitTool(t, j.m, "tasks_list_tasks", "proposed")
	j.del = waitTool(t, j.m, "tasks_delete_task", "proposed")
	j.tb.Goto(j.m.URL("/tools"))
	return j
}

// ---------------------------------------------------------------------------------------------
// The voice front end

// voiceReply is what POST /voice answers.
type voiceReply struct {
	Speech  string `json:"speech"`
	Outcome string `json:"outcome"`
	Tool    string `json:"tool"`
}

// voiceToken issues a new voice token with `maven voice-token --rotate`.
func voiceToken(t *testing.T, m *mavenProc) string {
	t.Helper()
	return strings.TrimSpace(m.CLI("voice-token", "--rotate"))
}

// say posts an utterance to the daemon's webhook as a voice front end does.
func say(t *testing.T, m *mavenProc, token, text string) voiceReply {
	t.Helper()
	body, err := json.Marshal(map[string]string{"conversation_id": "e2e", "text": text})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, m.URL("/voice"), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("POST /voice %q: %v", text, err)
	}
	defer res.Body.Close()
	var reply voiceReply
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /voice %q: HTTP %d", text, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil {
		t.Fatalf("POST /voice %q: %v", text, err)
	}
	return reply
}

// waitForTurn waits until the activity feed holds a voice turn with these words: the feed is
// written shortly after each reply.
func waitForTurn(t *testing.T, m *mavenProc, utterance string) {
	t.Helper()
	waitFor(t, pollTimeout, fmt.Sprintf("the turn %q in the activity feed", utterance), func() bool {
		var entries []struct {
			Action string          `json:"action"`
			Detail json.RawMessage `json:"detail"`
		}
		if err := json.Unmarshal([]byte(m.CLI("events", "--json")), &entries); err != nil {
			t.Fatalf("maven events --json: %v", err)
		}
		for _, e := range entries {
			var d struct {
				Utterance string `json:"utterance"`
			}
			if e.Action == "voice_turn" && json.Unmarshal(e.Detail, &d) == nil && d.Utterance == utterance {
				return true
			}
		}
		return false
	})
}
