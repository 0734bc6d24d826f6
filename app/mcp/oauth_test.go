package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/oauth"
	"maven/app/oauth/oauthtest"
	"maven/app/vault"
	"maven/db"
)

// The OAuth tests run the real Manager, vault, allowlist and reconciler over one SQLite
// database against oauthtest's fake authorization server, and sign in as the servers card
// does, with an HTTP client standing in for the browser.

const browserOrigin = "http://localhost:8080"

// daemon is what cmd/maven wires for OAuth, over one database file; a second one over the same
// file is a restart.
type daemon struct {
	bdb   *bun.DB
	gate  *vault.Gate
	tools *allowlist.Service
	feed  *activity.Log
	svc   *oauth.Service
	m     *mcp.Manager
	once  sync.Once
}

// passkey is what unlocks the test vault.
type passkey struct{ id, input, output []byte }

func newPasskey(t *testing.T) passkey {
	in, err := vault.NewPRFInput()
	if err != nil {
		t.Fatal(err)
	}
	out, err := vault.NewPRFInput()
	if err != nil {
		t.Fatal(err)
	}
	return passkey{id: []byte("cred-1"), input: in, output: out}
}

func startDaemon(t *testing.T, dbPath string, servers map[string]config.Server) *daemon {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{bdb: bdb}
	d.gate, err = vault.NewGate(ctx, vault.New(db.NewVaultStore(bdb), "localhost", time.Now), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.tools = allowlist.NewService(db.NewToolStore(bdb), time.Now)
	d.feed = activity.New(db.NewActivityStore(bdb), time.Now)
	d.svc = oauth.New(d.gate, d.feed, oauth.Options{Origins: []string{browserOrigin}})
	opts := mcp.ManagerOptions{RefreshInterval: time.Hour, RefreshGap: 10 * time.Millisecond, DialTimeout: 5 * time.Second,
		ListTimeout: 5 * time.Second, CallTimeout: 5 * time.Second, KeepAlive: 100 * time.Millisecond,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond, TerminateDuration: 200 * time.Millisecond, OAuth: d.svc}
	for name, s := range servers {
		s.Name = name
		servers[name] = s
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	d.m = mcp.NewManager(servers, mcp.NewToolReconciler(d.tools, time.Now, logger), opts, logger)
	d.gate.OnUnlock(d.m.SetSecrets)
	d.gate.OnLock(func() { d.m.SetSecrets(nil) })
	d.gate.OnLock(d.svc.EndSignIns)
	d.m.Run(ctx)
	t.Cleanup(d.stop)
	return d
}

// stop closes the manager and the database, once.
func (d *daemon) stop() {
	d.once.Do(func() {
		d.m.Close()
		d.bdb.Close()
	})
}

func (d *daemon) status(name string) mcp.ServerStatus {
	for _, st := range d.m.Status() {
		if st.Name == name {
			return st
		}
	}
	return mcp.ServerStatus{}
}

func (d *daemon) waitState(t *testing.T, name string, want mcp.State) mcp.ServerStatus {
	t.Helper()
	var st mcp.ServerStatus
	waitUntil(t, 20*time.Second, fmt.Sprintf("%s to be %s", name, want), func() bool {
		st = d.status(name)
		return st.State == want
	})
	return st
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signIn signs in to server as the owner does from its card: the step-up approved what the card
// showed, the browser follows the authorization server back to Maven's callback.
// enrollPasskey makes a passkey that can unlock and enrolls it, which creates the vault.
func (d *daemon) enrollPasskey(t *testing.T) passkey {
	t.Helper()
	key := newPasskey(t)
	if _, err := d.gate.Enroll(context.Background(), key.id, key.input, key.output); err != nil {
		t.Fatal(err)
	}
	return key
}

func (d *daemon) signIn(t *testing.T, server string) {
	t.Helper()
	ctx := context.Background()
	st := d.waitState(t, server, mcp.StateNeedsAuth)
	authURL, err := d.m.SignIn(ctx, server, oauth.Digest(server, st.AuthServer, st.AuthScopes), "owner-session", browserOrigin)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	back, err := oauthtest.Authorize(ctx, authURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.svc.Complete(ctx, "owner-session", back); err != nil {
		t.Fatalf("callback: %v", err)
	}
}

// enableAll enables every row of server with a real step-up each.
func (d *daemon) enableAll(t *testing.T, server string) []allowlist.Tool {
	t.Helper()
	ctx := context.Background()
	rows, err := d.tools.List(ctx, allowlist.Filter{Scope: allowlist.MCPScope(server)})
	if err != nil || len(rows) == 0 {
		t.Fatalf("rows of %s: %v %v", server, rows, err)
	}
	for i, r := range rows {
		if rows[i], err = d.tools.EnableTool(ctx, r.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, r.ID, r.ApprovalDigest()))); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

func (d *daemon) states(t *testing.T, server string) []allowlist.State {
	t.Helper()
	rows, err := d.tools.List(context.Background(), allowlist.Filter{Scope: allowlist.MCPScope(server)})
	if err != nil {
		t.Fatal(err)
	}
	var out []allowlist.State
	for _, r := range rows {
		out = append(out, r.State)
	}
	return out
}

func (d *daemon) actions(t *testing.T) []string {
	t.Helper()
	page, err := d.feed.Query(context.Background(), activity.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range page.Entries {
		if e.Action != activity.ActionServerState {
			out = append(out, e.Action)
		}
	}
	slices.Reverse(out)
	return out
}

// ticker is a server that is always down: its supervisor redials every BackoffMax, and its
// count of dials says how much time the supervisors had, with no sleep in the test.
type ticker struct{ dials atomic.Int64 }

func newTicker(t *testing.T) (*ticker, config.Server) {
	tk := &ticker{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tk.dials.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return tk, config.Server{Type: config.TransportHTTP, URL: srv.URL + "/mcp"}
}

// waitDials waits for n more dials of the always-down server.
func (tk *ticker) waitDials(t *testing.T, n int64) {
	t.Helper()
	target := tk.dials.Load() + n
	waitUntil(t, 20*time.Second, fmt.Sprintf("%d redials of the down server", n), func() bool { return tk.dials.Load() >= target })
}

func scripted() *mcptest.Scripted {
	return mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", ReadOnly: true, Text: "three tasks"})
}

// TestRefusalWaitsForTheOwner is the loop of issue 12: a server that answers 401 is
// discovered once and then waits in needs-auth, never redialled, until the owner signs in.
func TestRefusalWaitsForTheOwner(t *testing.T) {
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{ChallengeScope: "tasks:read"})
	tk, down := newTicker(t)
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{
		"tasks": {Type: config.TransportHTTP, URL: fake.URL}, "down": down})
	d.enrollPasskey(t)
	st := d.waitState(t, "tasks", mcp.StateNeedsAuth)
	if st.AuthServer != fake.Issuer || st.AuthScopes != "tasks:read" {
		t.Fatalf("needs-auth shows %q %q, want the authorization server and the challenge's scope", st.AuthServer, st.AuthScopes)
	}
	requests, discoveries := fake.Requests.Load(), fake.Discoveries.Load()
	tk.waitDials(t, 20)
	if r, disc := fake.Requests.Load(), fake.Discoveries.Load(); r != requests || disc != discoveries || disc != 1 {
		t.Fatalf("while waiting for the owner: %d → %d requests, %d → %d discoveries; want none more, one discovery",
			requests, r, discoveries, disc)
	}
	if got := d.status("tasks"); got.State != mcp.StateNeedsAuth {
		t.Fatalf("state %s, want needs-auth", got.State)
	}
	if _, err := d.m.CallTool(context.Background(), "tasks", "list_tasks", nil); !errors.Is(err, mcp.ErrNeedsSignIn) {
		t.Fatalf("a call to a server that waits for a sign-in: %v, want ErrNeedsSignIn", err)
	}

	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	res, err := d.m.CallTool(context.Background(), "tasks", "list_tasks", nil)
	if err != nil || res.Output != "three tasks" {
		t.Fatalf("call after sign-in: %+v %v", res, err)
	}
	if p := fake.Problems(); len(p) > 0 {
		t.Fatalf("the authorization server saw mistakes: %v", p)
	}
	if got := d.actions(t); !slices.Contains(got, activity.ActionSignedIn) {
		t.Fatalf("activity %v: want the sign-in recorded", got)
	}
}

// TestTokensAreSealedSurviveARestartAndWaitForUnlock: after a sign-in the database holds no
// token in the clear; a restart boots locked and the server shows locked, with no request
// sent, with a token or without; an unlock connects it with the sealed token, no sign-in again.
func TestTokensAreSealedSurviveARestartAndWaitForUnlock(t *testing.T) {
	ctx := context.Background()
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{ScopesSupported: []string{"tasks:read", "offline_access"}})
	tk, down := newTicker(t)
	dbPath := filepath.Join(t.TempDir(), "maven.db")
	servers := func() map[string]config.Server {
		return map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: fake.URL}, "down": down}
	}
	d := startDaemon(t, dbPath, servers())
	key := d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	access, refresh := fake.Tokens()
	if len(access) != 1 || len(refresh) != 1 {
		t.Fatalf("tokens issued: %d access, %d refresh", len(access), len(refresh))
	}
	d.stop()

	for _, f := range []string{dbPath, dbPath + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, tok := range append(access, refresh...) {
			if bytes.Contains(b, []byte(tok)) {
				t.Fatalf("%s holds a token in the clear", filepath.Base(f))
			}
		}
	}

	withToken, requests := fake.WithToken.Load(), fake.Requests.Load()
	d = startDaemon(t, dbPath, servers())
	d.waitState(t, "tasks", mcp.StateLocked)
	for _, st := range d.m.Status() {
		// What the card says it waits for.
		if st.Name == "tasks" && (!st.SignInSealed || st.UsesSecrets) {
			t.Errorf("locked status: sign-in sealed %v, uses secrets %v; want true, false", st.SignInSealed, st.UsesSecrets)
		}
	}
	tk.waitDials(t, 20)
	if fake.Requests.Load() != requests || fake.WithToken.Load() != withToken {
		t.Fatalf("while locked the server got %d requests, %d with a token; want none",
			fake.Requests.Load()-requests, fake.WithToken.Load()-withToken)
	}
	if _, err := d.m.CallTool(ctx, "tasks", "list_tasks", nil); err == nil {
		t.Fatal("a call went through while locked")
	}

	if err := d.gate.UnlockWithPRF(ctx, key.id, key.output); err != nil {
		t.Fatal(err)
	}
	d.waitState(t, "tasks", mcp.StateConnected)
	if res, err := d.m.CallTool(ctx, "tasks", "list_tasks", nil); err != nil || res.Output != "three tasks" {
		t.Fatalf("call after unlock: %+v %v", res, err)
	}
	if n := fake.Exchanges.Load(); n != 1 {
		t.Fatalf("%d code exchanges: the restart should have needed no new sign-in", n)
	}

	d.gate.Lock()
	d.waitState(t, "tasks", mcp.StateLocked)
}

// TestTokensRefreshBeforeTheyExpire: a token about to expire is refreshed by the request that
// finds it so, never sent expired; the rotated refresh token is sealed, so a restart uses it.
func TestTokensRefreshBeforeTheyExpire(t *testing.T) {
	ctx := context.Background()
	// oauth2 refreshes a token with less than 10s left: this one is due a second after issue.
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{TokenLifetime: 11 * time.Second})
	dbPath := filepath.Join(t.TempDir(), "maven.db")
	servers := func() map[string]config.Server {
		return map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: fake.URL}}
	}
	d := startDaemon(t, dbPath, servers())
	key := d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	refused := fake.Refused.Load()
	waitUntil(t, 20*time.Second, "a refresh", func() bool { return fake.Refreshes.Load() >= 2 })
	if res, err := d.m.CallTool(ctx, "tasks", "list_tasks", nil); err != nil || res.Output != "three tasks" {
		t.Fatalf("call after refreshes: %+v %v", res, err)
	}
	if n := fake.Refused.Load() - refused; n != 0 || d.status("tasks").State != mcp.StateConnected {
		t.Fatalf("%d requests refused after the sign-in, state %s: a token went out expired", n, d.status("tasks").State)
	}
	creds, err := d.svc.Load(ctx, "tasks")
	if err != nil {
		t.Fatal(err)
	}
	_, valid := fake.Tokens()
	if creds.Token == nil || !slices.Contains(valid, creds.Token.RefreshToken) {
		t.Fatal("the sealed refresh token is not the newest one")
	}
	d.stop()

	d = startDaemon(t, dbPath, servers())
	if err := d.gate.UnlockWithPRF(ctx, key.id, key.output); err != nil {
		t.Fatal(err)
	}
	d.waitState(t, "tasks", mcp.StateConnected)
	if n := fake.Exchanges.Load(); n != 1 {
		t.Fatalf("%d code exchanges: the restart should have refreshed, not signed in again", n)
	}
}

// TestARevokedRefreshTokenNeedsASignInAndWithdrawsNothing: once the authorization server
// refuses the refresh token, the server needs a sign-in again; the refusal is recorded, and
// every enabled row stays enabled.
func TestARevokedRefreshTokenNeedsASignInAndWithdrawsNothing(t *testing.T) {
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{TokenLifetime: 11 * time.Second})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: fake.URL}})
	d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	waitUntil(t, 10*time.Second, "the tools proposed", func() bool { return len(d.states(t, "tasks")) == 1 })
	d.enableAll(t, "tasks")

	fake.RevokeRefresh()
	d.waitState(t, "tasks", mcp.StateNeedsAuth)
	if got := d.states(t, "tasks"); !slices.Equal(got, []allowlist.State{allowlist.StateEnabled}) {
		t.Fatalf("rows %v after the revocation: want them enabled", got)
	}
	if got := d.actions(t); !slices.Contains(got, activity.ActionTokenRevoked) {
		t.Fatalf("activity %v: want the revocation recorded", got)
	}
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	if got := d.states(t, "tasks"); !slices.Equal(got, []allowlist.State{allowlist.StateEnabled}) {
		t.Fatalf("rows %v after signing in again", got)
	}
}

// TestSignInsReuseTheRegisteredClient: the client Maven registered at the first sign-in is
// sealed and reused by the next sign-in to the same authorization server; once the
// authorization server forgets it (the sign-in never comes back), the next sign-in registers
// again.
func TestSignInsReuseTheRegisteredClient(t *testing.T) {
	ctx := context.Background()
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: fake.URL}})
	d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)

	fake.Revoke()
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	if n := fake.Registrations.Load(); n != 1 {
		t.Fatalf("%d registrations after two sign-ins: want the first client reused", n)
	}

	fake.ForgetClients()
	fake.Revoke()
	st := d.waitState(t, "tasks", mcp.StateNeedsAuth)
	authURL, err := d.m.SignIn(ctx, "tasks", oauth.Digest("tasks", st.AuthServer, st.AuthScopes), "owner-session", browserOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oauthtest.Authorize(ctx, authURL); err == nil {
		t.Fatal("the authorization server sent back a client it forgot")
	}
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	if n := fake.Registrations.Load(); n != 2 {
		t.Fatalf("%d registrations: want one more once the authorization server forgot the first", n)
	}
}

// TestATokenGoesOnlyToItsOrigin: a signed-in server that answers 307 to another port of its own
// host (net/http keeps Authorization across a redirect to the same host name, whatever the
// port) sends Maven on without its token, and without its configured headers: the second
// server, which records what it saw, never sees either.
func TestATokenGoesOnlyToItsOrigin(t *testing.T) {
	var sawToken, sawHeader atomic.Int64
	var reached atomic.Int64
	tasks := scripted().HTTPHandler()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			sawToken.Add(1)
		}
		if r.Header.Get("X-Api-Key") != "" {
			sawHeader.Add(1)
		}
		tasks.ServeHTTP(w, r)
	}))
	t.Cleanup(elsewhere.Close)
	var redirecting atomic.Bool
	fake := oauthtest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if redirecting.Load() {
			http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
			return
		}
		tasks.ServeHTTP(w, r)
	}), oauthtest.Options{})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{
		"tasks": {Type: config.TransportHTTP, URL: fake.URL, Headers: map[string]string{"X-Api-Key": "key-" + t.Name()}}})
	d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)

	redirecting.Store(true)
	_, _ = d.m.CallTool(context.Background(), "tasks", "list_tasks", nil)
	waitUntil(t, 10*time.Second, "the redirect followed", func() bool { return reached.Load() > 0 })
	if n, h := sawToken.Load(), sawHeader.Load(); n != 0 || h != 0 {
		t.Fatalf("the server on another port got the OAuth token %d times and the configured header %d times", n, h)
	}
}

// TestASignInStaysWithItsAddress: a reload that moves a signed-in server to another URL (here
// another server, with an authorization server of its own) sends that URL no token: the sign-in
// was for the old address. The server needs a sign-in, and says why; signing in there works,
// and the old sign-in is replaced.
func TestASignInStaysWithItsAddress(t *testing.T) {
	ctx := context.Background()
	before := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{})
	after := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: before.URL}})
	d.enrollPasskey(t)
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)

	d.m.Reconfigure(map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: after.URL}})
	st := d.waitState(t, "tasks", mcp.StateNeedsAuth)
	if n := after.WithToken.Load(); n != 0 {
		t.Fatalf("the server at the new address got %d requests with the old address's token", n)
	}
	if !strings.Contains(st.LastError, "address changed") || st.AuthServer != after.Issuer {
		t.Fatalf("needs-auth says %q at %q: want it to say the address changed, and the new authorization server", st.LastError, st.AuthServer)
	}
	d.signIn(t, "tasks")
	d.waitState(t, "tasks", mcp.StateConnected)
	creds, err := d.svc.Load(ctx, "tasks")
	if err != nil || creds.Issuer != after.Issuer || creds.Resource != after.URL {
		t.Fatalf("sealed sign-in %q for %q (%v): want the new one", creds.Issuer, creds.Resource, err)
	}
}

// TestAMixUpGetsNoCode is the authorization-server mix-up of RFC 9700 section 4.4: a hostile
// server whose authorization server's metadata points its authorization endpoint at an honest
// authorization server (one that does not check resource indicators, on another port), and
// hands out the client Maven has there. Signing in to it sends the browser to the honest one;
// were its answer to come back, Maven would send the honest code, with the PKCE verifier, to the
// hostile token endpoint. The honest authorization server knows Maven's client only with the
// callback of its own (oauth.CallbackPathFor), so it sends nothing back, and the hostile token
// endpoint never sees a code.
func TestAMixUpGetsNoCode(t *testing.T) {
	ctx := context.Background()
	honest := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{AnyResource: true})
	servers := map[string]config.Server{"honest": {Type: config.TransportHTTP, URL: honest.URL}}
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), servers)
	d.enrollPasskey(t)
	d.signIn(t, "honest")
	d.waitState(t, "honest", mcp.StateConnected)
	creds, err := d.svc.Load(ctx, "honest")
	if err != nil {
		t.Fatal(err)
	}

	hostile := oauthtest.NewMixUp(t, honest, oauthtest.MixUpOptions{ClientID: creds.ClientID})
	d.m.Reconfigure(map[string]config.Server{"honest": servers["honest"], "hostile": {Type: config.TransportHTTP, URL: hostile.URL}})
	st := d.waitState(t, "hostile", mcp.StateNeedsAuth)
	if st.AuthServer != hostile.Issuer || st.AuthEndpoint != honest.Issuer+"/authorize" {
		t.Fatalf("the card shows the authorization server %q and its sign-in page %q", st.AuthServer, st.AuthEndpoint)
	}
	authURL, err := d.m.SignIn(ctx, "hostile", st.SignInDigest(), "owner-session", browserOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := oauthtest.Authorize(ctx, authURL); err == nil {
		// The browser follows the answer back to Maven.
		_, err = d.svc.Complete(ctx, "owner-session", back)
		t.Logf("the honest authorization server answered; the callback: %v", err)
	}
	if codes := hostile.Codes(); len(codes) > 0 {
		t.Fatalf("the hostile token endpoint got %d codes of the honest authorization server", len(codes))
	}
}

// TestAMixUpAnswerNamingAnotherIssuerIsRefused: where the honest authorization server names
// itself in its answer (RFC 9207), an answer that reaches the hostile sign-in's callback (here
// Maven was made to register at the honest one, through the hostile registration endpoint) is
// refused as a mix-up before its code goes anywhere.
func TestAMixUpAnswerNamingAnotherIssuerIsRefused(t *testing.T) {
	ctx := context.Background()
	honest := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{AnyResource: true, Iss: true})
	hostile := oauthtest.NewMixUp(t, honest, oauthtest.MixUpOptions{})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{"hostile": {Type: config.TransportHTTP, URL: hostile.URL}})
	d.enrollPasskey(t)
	st := d.waitState(t, "hostile", mcp.StateNeedsAuth)
	authURL, err := d.m.SignIn(ctx, "hostile", st.SignInDigest(), "owner-session", browserOrigin)
	if err != nil {
		t.Fatal(err)
	}
	back, err := oauthtest.Authorize(ctx, authURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.svc.Complete(ctx, "owner-session", back); !errors.Is(err, oauth.ErrMixUp) {
		t.Fatalf("the callback: %v, want ErrMixUp", err)
	}
	if codes := hostile.Codes(); len(codes) > 0 {
		t.Fatalf("the hostile token endpoint got %d codes of the honest authorization server", len(codes))
	}
	if got := d.status("hostile"); got.State != mcp.StateNeedsAuth || !strings.Contains(got.LastError, "not from the authorization server") {
		t.Fatalf("after the refused answer: %s %q", got.State, got.LastError)
	}
}

// TestNoSignInWithoutTheCodeGrant: a server whose authorization server lists only grant types
// for machines (client credentials) gets no Sign in; it shows failed, saying why.
func TestNoSignInWithoutTheCodeGrant(t *testing.T) {
	fake := oauthtest.New(t, scripted().HTTPHandler(), oauthtest.Options{GrantTypes: []string{"client_credentials"}})
	d := startDaemon(t, filepath.Join(t.TempDir(), "maven.db"), map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: fake.URL}})
	d.enrollPasskey(t)
	st := d.waitState(t, "tasks", mcp.StateFailed)
	if !strings.Contains(st.LastError, "does not offer browser sign-in") || st.AuthServer != "" {
		t.Fatalf("failed with %q (authorization server %q): want it to say there is no browser sign-in", st.LastError, st.AuthServer)
	}
	if _, err := d.m.SignIn(context.Background(), "tasks", st.SignInDigest(), "owner-session", browserOrigin); !errors.Is(err, mcp.ErrNoSignInNeeded) {
		t.Fatalf("sign in: %v, want ErrNoSignInNeeded", err)
	}
}
