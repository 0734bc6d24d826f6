// Package handlers is Maven's HTTP surface: a chi router, its middleware, and one file per
// area. Handlers stay thin: parse the request, call the app, render a view model.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/mcp"
	"maven/app/metrics"
	"maven/views"
)

// LockState tells whether the daemon is locked (its secrets sealed).
type LockState interface {
	Locked() bool
}

// Auth is what the handlers need of the owner's passkeys and step-ups (*auth.Service). Session
// ids are the opaque "sid" values the handlers keep in each browser session.
type Auth interface {
	HasPasskeys(ctx context.Context) (bool, error)
	CheckSetupToken(ctx context.Context, token string) error
	BeginSetup(ctx context.Context, sid, origin, token string) (*protocol.CredentialCreation, error)
	BeginAddPasskey(ctx context.Context, sid, origin string, proof auth.StepUp) (*protocol.CredentialCreation, error)
	FinishRegistration(ctx context.Context, sid string, resp *protocol.ParsedCredentialCreationData, name string) (auth.Passkey, error)
	BeginLogin(ctx context.Context, sid, origin string) (*protocol.CredentialAssertion, error)
	FinishLogin(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (auth.Passkey, error)
	BeginStepUp(ctx context.Context, sid, origin string, action auth.Action, target int64) (*protocol.CredentialAssertion, error)
	FinishStepUp(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (auth.Action, int64, error)
	// BeginUnlock and BeginEnroll begin assertions that evaluate PRF; their Finish verifies the
	// assertion and returns the PRF output unchecked (only the vault can check it).
	BeginUnlock(ctx context.Context, sid, origin string, inputs map[string][]byte) (*protocol.CredentialAssertion, error)
	FinishUnlock(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (auth.PRFAssertion, error)
	BeginEnroll(ctx context.Context, sid, origin string, passkeyID int64, input []byte) (*protocol.CredentialAssertion, error)
	FinishEnroll(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (auth.PRFAssertion, error)
	// Redeem spends a fresh grant; auth.ErrStepUpRequired if there is none.
	Redeem(sid string, action auth.Action, target int64) (auth.StepUp, error)
	EndSession(sid string)
	Passkeys(ctx context.Context) ([]auth.Passkey, error)
	// Passkey returns auth.ErrPasskeyNotFound if there is no such passkey.
	Passkey(ctx context.Context, id int64) (auth.Passkey, error)
	PasskeyExists(ctx context.Context, id int64) (bool, error)
	RenamePasskey(ctx context.Context, id int64, name string) (auth.Passkey, error)
	RemovePasskey(ctx context.Context, id int64, proof auth.StepUp) error
}

// Tools is what the handlers need of the allowlist (*allowlist.Service).
type Tools interface {
	// Get returns allowlist.ErrNotFound if no row has that id.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	List(ctx context.Context, filter allowlist.Filter) ([]allowlist.Tool, error)
	CountByState(ctx context.Context, filter allowlist.Filter) (map[allowlist.State]int, error)
	EnableTool(ctx context.Context, id int64, proof auth.StepUp) (allowlist.Tool, error)
	DisableTool(ctx context.Context, id int64, actor string) (allowlist.Tool, error)
}

// ServerStatuses reports the MCP servers' connection states (*mcp.Manager).
type ServerStatuses interface {
	Status() []mcp.ServerStatus
}

// ServerCommands is what the handlers need of the approvals of stdio servers' command lines
// (*approval.Service).
type ServerCommands interface {
	Pending(ctx context.Context) ([]approval.PendingCommand, error)
	// Command returns approval.ErrNotFound if no command line has that id.
	Command(ctx context.Context, id int64) (approval.Command, error)
	// Approve needs a step-up for auth.ActionAddServer on id (else auth.ErrStepUpRequired) and
	// returns the server's name; approval.ErrNotFound if no command line has that id.
	Approve(ctx context.Context, id int64, proof auth.StepUp) (string, error)
}

// ServerWaker wakes a server's supervisor after its command line was approved (*mcp.Manager).
type ServerWaker interface {
	Wake(server string)
}

// Deps are what the handlers need from the app. Logger, Lock, Vault and Now may be left zero;
// Servers is nil when no MCP manager runs.
type Deps struct {
	Logger *slog.Logger
	// Vault is the daemon's lock state and sealed secrets; nil serves a daemon without a vault.
	Vault Vault
	// Lock is what /healthz and the lock redirects read; Vault when nil.
	Lock     LockState
	Sessions *scs.SessionManager // from NewSessionManager
	Auth     Auth
	Tools    Tools
	Servers  ServerStatuses
	// Commands approves stdio servers' command lines, after which Wake starts them; nil shows
	// none.
	Commands ServerCommands
	Wake     ServerWaker
	// Voice answers POST /voice for requests carrying a token VoiceTokens accepts; nil
	// leaves the webhook out.
	Voice       VoiceTurner
	VoiceTokens TokenChecker
	// Metrics, when set, counts requests and serves GET /metrics to holders of a token
	// MetricsTokens accepts, with MetricsGauges read at each scrape.
	Metrics       *metrics.Registry
	MetricsTokens TokenChecker
	MetricsGauges MetricsGauges
	Views         *views.Templates
	Assets        *Assets
	// Origins are the configured browser origins; cross-origin protection trusts them.
	Origins []string
	TLS     bool             // served over HTTPS: HSTS
	Now     func() time.Time // the clock of session limits (time.Now)
	// TrustedProxies are the peers whose Forwarded / X-Forwarded-For / X-Forwarded-Proto
	// headers are believed; from anyone else those headers are ignored.
	TrustedProxies []netip.Prefix
}

// server carries the dependencies of every handler.
type server struct {
	log      *slog.Logger
	lock     LockState
	vault    Vault
	sessions *scs.SessionManager
	auth     Auth
	tools    Tools
	servers  ServerStatuses
	commands ServerCommands
	waker    ServerWaker
	views    *views.Templates
	assets   *Assets
	now      func() time.Time
}

// Routes returns the whole URL surface of the daemon:
//
//	public      /healthz, /static/*, POST /voice (its own bearer token)
//	while locked /unlock and its endpoints, /setup, /logout; everything else goes to /unlock
//	session     /, /login and its WebAuthn endpoints
//	signed-in   /tools, /passkeys, /secrets, /step-up/*, /lock, and their actions
//	step-up     enabling a tool, approving a stdio server's command line, adding or removing
//	            a passkey, setting a secret, a new recovery code
//
// Every state change is a POST, and every POST passes cross-origin protection.
func Routes(d Deps) (http.Handler, error) {
	if d.Sessions == nil || d.Auth == nil || d.Tools == nil || d.Views == nil || d.Assets == nil {
		return nil, errors.New("handlers: Sessions, Auth, Tools, Views and Assets are required")
	}
	s := &server{
		log: d.Logger, lock: d.Lock, sessions: d.Sessions, auth: d.Auth, tools: d.Tools,
		servers: d.Servers, commands: d.Commands, waker: d.Wake, views: d.Views, assets: d.Assets, now: d.Now,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.vault = d.Vault
	if s.lock == nil && s.vault != nil {
		s.lock = s.vault
	}
	if s.lock == nil {
		s.lock = unlocked{}
	}
	if s.vault == nil {
		s.vault = noVault{s.lock}
	}
	if s.now == nil {
		s.now = time.Now
	}
	// scs reports store failures through ErrorFunc; route them to the one error path.
	d.Sessions.ErrorFunc = s.sessionError
	crossOrigin, err := s.crossOrigin(d.Origins)
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(forwarded(d.TrustedProxies))
	r.Use(securityHeaders(d.TLS))
	if d.Metrics != nil {
		r.Use(countRequests(d.Metrics))
		r.Get("/metrics", metricsGet(d.Metrics, d.MetricsTokens, d.MetricsGauges))
	}

	// Public: no session.
	r.Get("/healthz", healthz(s.lock))
	r.Method(http.MethodGet, "/static/*", d.Assets)
	r.Method(http.MethodHead, "/static/*", d.Assets)

	// The voice webhook: a bearer token, no session, no cookie, so no cross-origin check; the
	// token can only submit utterances.
	if d.Voice != nil {
		r.Post("/voice", voicePost(d.Voice, d.VoiceTokens, s.log))
	}

	r.Group(func(r chi.Router) {
		// Session: cross-origin POSTs are refused before the session is even loaded.
		r.Use(crossOrigin, d.Sessions.LoadAndSave, sessionLoaded, noStore)
		r.NotFound(s.notFound)
		r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errMethod) })

		// Reachable while locked: unlocking (which also signs the owner in), registering a
		// passkey through a setup link (how a lost passkey is replaced), signing out, locking.
		r.Get("/unlock", s.unlockPage)
		r.Post("/unlock/begin", s.unlockBeginPost)
		r.Post("/unlock/finish", s.unlockFinishPost)
		r.Post("/unlock/recovery", s.unlockRecoveryPost)
		r.Get("/setup", s.setupPage)
		r.Post("/setup/begin", s.setupBeginPost)
		r.Post("/setup/finish", s.setupFinishPost)
		r.Post("/logout", s.logoutPost)
		r.With(s.requireOwner(false)).Post("/lock", s.lockPost)

		// Everything else waits for the unlock (DESIGN.md rule 19).
		r.Group(func(r chi.Router) {
			r.Use(s.requireUnlocked)
			r.Get("/", s.home)
			r.Get("/login", s.loginPage)
			r.Post("/login/begin", s.loginBeginPost)
			r.Post("/login/finish", s.loginFinishPost)

			// Signed in; polling does not count as activity.
			r.With(s.requireOwner(true)).Get("/tools/servers", s.serversCardGet)

			r.Group(func(r chi.Router) {
				r.Use(s.requireOwner(false))
				r.Get("/tools", s.toolsPage)
				r.Post("/tools/{id}/disable", s.toolDisablePost)
				r.Post("/step-up/begin", s.stepUpBeginPost)
				r.Post("/step-up/finish", s.stepUpFinishPost)
				r.Get("/passkeys", s.passkeysPage)
				r.Post("/passkeys/add/finish", s.passkeyAddFinishPost)
				r.Post("/passkeys/{id}/rename", s.passkeyRenamePost)
				r.Post("/passkeys/{id}/enroll/begin", s.enrollBeginPost)
				r.Post("/passkeys/enroll/finish", s.enrollFinishPost)
				r.Get("/secrets", s.secretsPage)
				r.Post("/secrets/delete", s.secretDeletePost)

				// Step-up: the handler runs only with a fresh grant for this very action.
				r.With(s.requireStepUp(auth.ActionEnableTool)).Post("/tools/{id}/enable", s.toolEnablePost)
				r.With(s.requireStepUp(auth.ActionAddServer)).Post("/servers/commands/{id}/approve", s.serverCommandApprovePost)
				r.With(s.requireStepUp(auth.ActionAddPasskey)).Post("/passkeys/add/begin", s.passkeyAddBeginPost)
				r.With(s.requireStepUp(auth.ActionRemovePasskey)).Post("/passkeys/{id}/remove", s.passkeyRemovePost)
				r.With(s.requireStepUp(auth.ActionSetSecret)).Post("/secrets", s.secretSetPost)
				r.With(s.requireStepUp(auth.ActionRotateRecovery)).Post("/secrets/recovery", s.recoveryRotatePost)
			})
		})
	})
	return r, nil
}

// home sends the browser where it belongs.
func (s *server) home(w http.ResponseWriter, r *http.Request) {
	if s.signedIn(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// notFound sends the browser to /unlock while locked and a signed-out browser to /login, like
// every other page, and tells a signed-in owner the page does not exist.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	if s.lock.Locked() {
		s.toUnlock(w, r)
		return
	}
	if !s.signedIn(r) {
		s.toLogin(w, r)
		return
	}
	s.fail(w, r, errNoPage)
}

// unlocked is the LockState of a daemon without a vault.
type unlocked struct{}

func (unlocked) Locked() bool { return false }
