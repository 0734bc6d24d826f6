package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/scs/sqlite3store"
	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/clients"
	"maven/app/config"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/metrics"
	"maven/app/notify"
	"maven/app/oauth"
	"maven/app/pending"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/app/vault"
	"maven/app/voice"
	"maven/db"
	"maven/handlers"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
	"maven/static"
	"maven/views"
)

// The browser's origin in every test; the RP ID is "localhost".
const (
	testOrigin = "http://localhost:8080"
	testHost   = "localhost:8080"
)

// fakeServers is a fixed MCP status report.
type fakeServers struct {
	mu       sync.Mutex
	statuses []mcp.ServerStatus
}

func (f *fakeServers) Status() []mcp.ServerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]mcp.ServerStatus(nil), f.statuses...)
}

func (f *fakeServers) set(s ...mcp.ServerStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = s
}

// fakeWaker records the servers the handlers woke.
type fakeWaker struct {
	mu    sync.Mutex
	woken []string
}

func (w *fakeWaker) Wake(server string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woken = append(w.woken, server)
}

func (w *fakeWaker) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.woken...)
}

// fixture is the real web app over a real SQLite database in a temp dir, with a real vault
// (none is created until a PRF passkey enrolls). boot builds everything that lives in memory, so
// calling it again is a daemon restart over the same database. It runs a real MCP manager of
// mcpServers (none unless set) wired to the vault the way the daemon wires it.
type fixture struct {
	t     testing.TB
	h     http.Handler
	db    *bun.DB
	tools *allowlist.Service
	// book is the owner's phrases, limits their limits on arguments, feed the activity feed,
	// voice the guides /tools shows.
	book   *phrases.Service
	limits *limits.Service
	feed   *activity.Log
	voice  *voice.Service
	auth   *auth.Service
	gate   *vault.Gate
	// clock is the injected clock of auth, the allowlist and the session limits. It starts at
	// the real time because go-webauthn and scs read time.Now themselves.
	clock *testclock.Clock
	logs  *syncBuffer
	// logger writes to logs.
	logger *slog.Logger
	// servers is the fake status report shown unless mcpServers are set; mgr the real manager,
	// of mcpServers (or of none), which begins every sign-in.
	servers    *fakeServers
	mcpServers map[string]config.Server
	mgr        *mcp.Manager
	oauth      *oauth.Service // the sign-ins of the real manager's servers
	// commands are the real approvals of stdio command lines; waker the fake manager they wake.
	commands *approval.Service
	waker    *fakeWaker
	devices  int // browsers made so far: each gets an address of its own
	// srv, once listen has started it, carries every browser's requests over real HTTP.
	srv *httptest.Server
	tls bool // the daemon is reached over HTTPS: Secure __Host- cookies (set before boot)
	// origins are the configured origins, testOrigin when nil (set before boot); their host
	// is testHost's.
	origins []string
	// problems are the config's problems and the last reload's refusal, as /tools shows them.
	problems *config.Problems
	// configLoaded is what the config source says: the running config came from its file.
	configLoaded atomic.Bool
	// clients are the agents' clients and Maven's authorization server.
	clients *clients.Service
	// notify is the real dispatcher of notifications; pushTransport carries its requests
	// (http.DefaultTransport when nil; set before boot).
	notify        *notify.Dispatcher
	pushTransport http.RoundTripper
	// agents serve /mcp and /sse, when a test sets them before boot.
	agents handlers.AgentDeps
	// pending are the calls waiting for approval, on a real runner of the real manager; a test
	// with its own (an agents' world) sets approvals before boot instead.
	pending   *pending.Service
	approvals handlers.Approvals
}

// The tokens of the fixture's voice webhook and metrics.
const (
	testVoiceToken   = "voice-token"
	testMetricsToken = "metrics-token"
)

// fixedToken accepts one token.
type fixedToken string

func (t fixedToken) Check(s string) bool { return s == string(t) }

// echoTurner answers every utterance by repeating it.
type echoTurner struct{}

func (echoTurner) Turn(_ context.Context, req voice.Request) voice.Reply {
	return voice.Reply{Speech: req.Text, Outcome: voice.OutcomeNoMatch}
}

// noAllowTools reads rows for rule 15 as a server with no allow_tools list would.
type noAllowTools struct{}

func (noAllowTools) Positional(row allowlist.Tool) mcp.Positional {
	return mcp.NewPositional(row, false)
}

// trustedProxy is the proxy the app believes about where a request comes from: over real HTTP
// the tests connect from loopback and name the browser's address in X-Forwarded-For.
var trustedProxy = netip.MustParsePrefix("127.0.0.0/8")

// listen serves the app on a loopback port; from then on browsers talk to it over real HTTP.
func (f *fixture) listen() *httptest.Server {
	f.srv = httptest.NewServer(f.h)
	f.t.Cleanup(f.srv.Close)
	return f.srv
}

// roundTrip sends req (built for the recorder) to the listening app over real HTTP, naming its
// RemoteAddr in X-Forwarded-For, and copies the answer into rec.
func (f *fixture) roundTrip(rec *httptest.ResponseRecorder, req *http.Request) {
	host, _, _ := net.SplitHostPort(req.RemoteAddr)
	out, err := http.NewRequest(req.Method, f.srv.URL+req.URL.RequestURI(), req.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	out.Host = req.Host
	out.Header = req.Header.Clone()
	out.Header.Set("X-Forwarded-For", host)
	res, err := noRedirects.Do(out)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		rec.Header()[k] = vs
	}
	rec.WriteHeader(res.StatusCode)
	if _, err := io.Copy(rec, res.Body); err != nil {
		f.t.Fatal(err)
	}
}

// noRedirects is an HTTP client that shows a redirect instead of following it.
var noRedirects = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// vaultFixture is the name the unlock tests use for the same fixture.
type vaultFixture = fixture

func newFixture(t testing.TB) *fixture { return newVaultFixture(t, "") }

// newVaultFixture opens the database and boots the app; serversJSON, when not empty, is the
// config's mcpServers block for a real manager.
func newVaultFixture(t testing.TB, serversJSON string) *fixture {
	t.Helper()
	f := &fixture{t: t, logs: &syncBuffer{}, clock: testclock.New(time.Now()),
		servers: &fakeServers{}, waker: &fakeWaker{}, problems: &config.Problems{}}
	if serversJSON != "" {
		cfg, err := config.ParseEnv([]byte(`{"mcpServers": `+serversJSON+`}`), os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		f.mcpServers = cfg.MCPServers
	}
	f.db = testdb.Open(t)
	f.boot()
	return f
}

// boot builds everything that lives in memory — vault, auth, manager, handlers — over the
// fixture's database: the first start, or a restart.
func (f *fixture) boot() {
	t := f.t
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.logger = logger
	f.tools = allowlist.NewService(db.NewToolStore(f.db), f.clock.Now)
	f.feed = activity.New(db.NewActivityStore(f.db), f.clock.Now)
	owner, err := auth.New(db.NewAuthStore(f.db), auth.Config{
		RPID: "localhost", Origins: f.configuredOrigins(), StepUpWindow: 5 * time.Minute, Now: f.clock.Now, Logger: logger, Activity: f.feed,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.auth = owner
	gate, err := vault.NewGate(ctx, vault.New(db.NewVaultStore(f.db), "localhost", time.Now), logger)
	if err != nil {
		t.Fatal(err)
	}
	f.gate = gate
	// The real manager begins sign-ins; without mcpServers it has no server, and the card shows
	// the fake status report.
	if f.mgr != nil {
		f.mgr.Close()
	}
	f.oauth = oauth.New(gate, f.feed, oauth.Options{Origins: []string{testOrigin}, Logger: logger})
	f.mgr = mcp.NewManager(f.mcpServers, mcp.NewToolReconciler(f.tools, time.Now, logger), mcp.ManagerOptions{
		DialTimeout: 30 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond, OAuth: f.oauth,
	}, logger)
	gate.OnUnlock(f.mgr.SetSecrets)
	gate.OnLock(func() { f.mgr.SetSecrets(nil) })
	gate.OnLock(f.oauth.EndSignIns)
	mctx, cancel := context.WithCancel(context.Background())
	f.mgr.Run(mctx)
	mgr := f.mgr
	t.Cleanup(func() { cancel(); mgr.Close() })
	gate.OnLock(owner.ForgetStepUps)
	f.commands = approval.NewService(db.NewApprovalStore(f.db), f.clock.Now)
	if f.clients, err = clients.New(ctx, db.NewClientStore(f.db), db.NewSettingsStore(f.db), clients.Options{
		Origins: f.configuredOrigins(), Activity: f.feed, Logger: logger, Now: f.clock.Now,
	}); err != nil {
		t.Fatal(err)
	}
	f.book = phrases.NewService(db.NewPhrasesStore(f.db), f.tools, f.clock.Now)
	f.limits = limits.NewService(db.NewLimitsStore(f.db), f.tools, f.clock.Now)
	f.voice = voice.New(voice.Deps{Rows: f.tools, Binder: noAllowTools{}, Phrases: f.book, Activity: f.feed},
		voice.Options{Now: f.clock.Now, Logger: logger})
	t.Cleanup(f.voice.CancelPending)
	if f.notify, err = notify.New(ctx, db.NewPushStore(f.db), notify.Options{Origins: f.configuredOrigins(),
		Transport: f.pushTransport, Activity: f.feed, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	if f.approvals == nil {
		f.bootPending()
	}
	h, err := handlers.New(f.deps())
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
}

// bootPending builds the pending calls over the fixture's allowlist, the real manager and the
// notifiers, with the vault's lock; their round runs until the test ends.
func (f *fixture) bootPending() {
	t := f.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	f.pending, err = pending.New(pending.Deps{Store: db.NewPendingStore(f.db), Rows: f.tools, Runner: runner.New(f.tools, f.mgr, runner.Options{}),
		Lock: f.gate, Notifier: f.notify, Activity: f.feed, Canonical: mcp.Canonicalize}, pending.Options{Now: f.clock.Now, Logger: f.logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.pending.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	svc := f.pending
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; svc.Close() })
}

// deps are the handlers' dependencies over what boot built: the real services, and the fakes
// of the status report (unless mcpServers runs a real manager), the waker and the machine
// endpoints.
func (f *fixture) deps() handlers.Deps {
	t := f.t
	var statuses handlers.ServerStatuses = f.servers
	if f.mcpServers != nil {
		statuses = f.mgr
	}
	return handlers.Deps{
		Logger:   f.logger,
		Vault:    f.gate,
		Sessions: handlers.NewSessionManager(sqlite3store.NewWithConfig(f.db.DB, sqlite3store.Config{}), f.tls),
		Auth:     f.auth,
		Tools:    f.tools,
		Servers:  statuses,
		Commands: f.commands,
		Wake:     f.waker,
		SignIn:   f.mgr,
		OAuth:    f.oauth,
		Views:    mustViews(t),
		Assets:   mustAssets(t),
		Origins:  f.configuredOrigins(),
		Now:      f.clock.Now,
		// The machine endpoints, behind their tokens.
		Voice: echoTurner{}, VoiceTokens: fixedToken(testVoiceToken),
		Guides: f.voice, Phrases: f.book, Limits: f.limits, Activity: f.feed, Notifications: f.notify,
		Metrics: metrics.New(), MetricsTokens: fixedToken(testMetricsToken),
		MetricsGauges: func(context.Context) []metrics.Sample { return nil },
		// Only the real-HTTP tests connect from loopback (see listen).
		TrustedProxies: []netip.Prefix{trustedProxy},
		// No such file, unless a test says it was read: the defaults run.
		ConfigSource:   func() (string, bool) { return "/etc/maven/maven.json", f.configLoaded.Load() },
		SecretUsers:    config.Config{MCPServers: f.mcpServers}.SecretUsers,
		ConfigProblems: f.problems,
		Clients:        f.clients,
		Agents:         f.agents,
		Approvals:      f.approvalsDep(),
	}
}

// approvalsDep is the pending calls the handlers serve: the test's, else the fixture's own.
func (f *fixture) approvalsDep() handlers.Approvals {
	if f.approvals != nil {
		return f.approvals
	}
	return f.pending
}

// configuredOrigins are the origins, testOrigin unless a test set others.
func (f *fixture) configuredOrigins() []string {
	if f.origins == nil {
		return []string{testOrigin}
	}
	return f.origins
}

// syncBuffer collects the log for assertions about what it never contains.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// setupToken issues a fresh setup link's token.
func (f *fixture) setupToken() string {
	f.t.Helper()
	link, err := f.auth.NewSetupLink(context.Background(), "cli")
	if err != nil {
		f.t.Fatal(err)
	}
	return link.Token
}

// propose adds a local command row and returns it.
func (f *fixture) propose(name string) allowlist.Tool {
	f.t.Helper()
	t, _, err := f.tools.ProposeTool(context.Background(), allowlist.Proposal{
		Name: name, Cmd: []string{"/bin/echo", name}, Scope: allowlist.ScopeLocal,
		Source: allowlist.SourceCLI, Provenance: "test", Actor: "test",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

// state reads a row's state from the database.
func (f *fixture) state(id int64) allowlist.State {
	f.t.Helper()
	t, err := f.tools.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return t.State
}

// browser is one browser profile on a device of its own: a cookie jar, an address, and what
// it claims about where it is.
type browser struct {
	f       *fixture
	cookies map[string]*http.Cookie
	addr    string // RemoteAddr of its requests
	// siteHeader is the Sec-Fetch-Site of unsafe requests; origin their Origin.
	siteHeader, origin string
}

func (f *fixture) browser() *browser {
	f.devices++
	return &browser{f: f, cookies: map[string]*http.Cookie{}, siteHeader: "same-origin", origin: testOrigin,
		addr: fmt.Sprintf("198.51.100.%d:40000", f.devices%250+1)}
}

// do sends one request the way a same-origin page would, and keeps the cookies it gets.
func (b *browser) do(method, path string, body io.Reader, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://"+testHost+path, body)
	req.Host = testHost
	req.RemoteAddr = b.addr
	for k, vs := range header {
		req.Header[k] = vs
	}
	if method != http.MethodGet && method != http.MethodHead {
		if req.Header.Get("Sec-Fetch-Site") == "" && b.siteHeader != "" {
			req.Header.Set("Sec-Fetch-Site", b.siteHeader)
		}
		if req.Header.Get("Origin") == "" && b.origin != "" {
			req.Header.Set("Origin", b.origin)
		}
	}
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	if b.f.srv != nil {
		b.f.roundTrip(rec, req)
	} else {
		b.f.h.ServeHTTP(rec, req)
	}
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return rec
}

func (b *browser) get(path string) *httptest.ResponseRecorder {
	return b.do(http.MethodGet, path, nil, nil)
}

// htmx sends a request as htmx would (HX-Request), with a form body for POSTs.
func (b *browser) htmx(method, path string, form url.Values) *httptest.ResponseRecorder {
	h := http.Header{"Hx-Request": {"true"}}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return b.do(method, path, body, h)
}

// postJSON posts v as maven.js does and decodes the JSON answer into out (if not nil).
func (b *browser) postJSON(path string, v any, out any) *httptest.ResponseRecorder {
	b.f.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		b.f.t.Fatal(err)
	}
	rec := b.do(http.MethodPost, path, bytes.NewReader(body), http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json"},
	})
	if out != nil && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			b.f.t.Fatalf("%s: decode %q: %v", path, rec.Body.String(), err)
		}
	}
	return rec
}

// beginAnswer is what the WebAuthn begin endpoints answer.
type beginAnswer struct {
	Options json.RawMessage `json:"options"`
	Prompt  string          `json:"prompt"`
	Error   string          `json:"error"`
	StepUp  *auth.Approval  `json:"step_up"`
}

type finishAnswer struct {
	OK       bool   `json:"ok"`
	Redirect string `json:"redirect"`
	Error    string `json:"error"`
}

func mustOK(t testing.TB, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", what, rec.Code, rec.Body.String())
	}
}

// register runs the setup ceremony with a and returns the finish response.
func (b *browser) register(token string, a *authtest.Authenticator, name string) *httptest.ResponseRecorder {
	t := b.f.t
	t.Helper()
	var begin beginAnswer
	mustOK(t, "setup begin", b.postJSON("/setup/begin", map[string]string{"token": token}, &begin))
	cred, err := a.Create(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	return b.postJSON("/setup/finish", map[string]any{"name": name, "credential": json.RawMessage(cred)}, nil)
}

// signUp registers a's first passkey through a fresh setup link and returns the signed-in browser.
func (f *fixture) signUp(a *authtest.Authenticator) *browser {
	f.t.Helper()
	b := f.browser()
	mustOK(f.t, "setup finish", b.register(f.setupToken(), a, "Laptop"))
	return b
}

// login runs a discoverable sign-in with a and returns the finish response.
func (b *browser) login(a *authtest.Authenticator) *httptest.ResponseRecorder {
	t := b.f.t
	t.Helper()
	var begin beginAnswer
	mustOK(t, "login begin", b.postJSON("/login/begin", map[string]string{}, &begin))
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	return b.postJSON("/login/finish", map[string]any{"credential": json.RawMessage(cred)}, nil)
}

// stepUp runs a step-up ceremony for approval with a and returns the finish request's body
// (for replays) and response.
func (b *browser) stepUp(a *authtest.Authenticator, approval auth.Approval) ([]byte, *httptest.ResponseRecorder) {
	t := b.f.t
	t.Helper()
	cred, err := a.Get(b.beginStepUp(approval).Options)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"credential": json.RawMessage(cred)})
	return body, b.do(http.MethodPost, "/step-up/finish", bytes.NewReader(body), http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json"},
	})
}

// mustStepUp runs a step-up ceremony for approval with a and fails the test unless it succeeds.
func (b *browser) mustStepUp(a *authtest.Authenticator, approval auth.Approval) {
	b.f.t.Helper()
	_, r := b.stepUp(a, approval)
	mustOK(b.f.t, "step-up", r)
}

// beginStepUp begins a step-up for approval and returns the assertion options.
func (b *browser) beginStepUp(approval auth.Approval) beginAnswer {
	t := b.f.t
	t.Helper()
	var begin beginAnswer
	mustOK(t, "step-up begin", b.postJSON("/step-up/begin", approval, &begin))
	return begin
}

// enableOf is the approval of enabling tool as a page showing it now would ask for it.
func enableOf(tool allowlist.Tool) auth.Approval {
	return auth.One(auth.ActionEnableTool, tool.ID, tool.ApprovalDigest())
}

// enable clicks Enable on a row as htmx does, from a page that showed tool.
func (b *browser) enable(tool allowlist.Tool) *httptest.ResponseRecorder {
	return b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", url.Values{"fingerprint": {tool.ApprovalDigest()}})
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func mustAssets(t testing.TB) *handlers.Assets {
	t.Helper()
	a, err := handlers.NewAssets(static.FS())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustViews(t testing.TB) *views.Templates {
	t.Helper()
	v, err := views.Parse(mustAssets(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jsonRaw(b []byte) json.RawMessage { return json.RawMessage(b) }
