// Package handlers is Maven's HTTP surface: a chi router, its middleware, and one file per
// area. Handlers stay thin: parse the request, call the app, render a view model.
package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"golang.org/x/time/rate"

	"maven/app/auth"
	"maven/app/metrics"
	"maven/app/oauth"
	"maven/app/vault"
	"maven/views"
)

// Deps are what the handlers need from the app. Every field is one the daemon always sets, and
// New refuses a Deps that leaves one out, but for the four that say they are optional.
type Deps struct {
	Logger *slog.Logger
	// Vault is the daemon's lock state and sealed secrets (it holds none until one is created).
	Vault    *vault.Gate
	Sessions *scs.SessionManager // from NewSessionManager
	// Auth runs the passkey ceremonies and holds the step-up grants.
	Auth    *auth.Service
	Tools   Tools
	Servers ServerStatuses
	// Commands approves stdio servers' command lines, after which Wake starts them.
	Commands ServerCommands
	Wake     ServerWaker
	// SignIn begins sign-ins to OAuth-protected servers and OAuth finishes them on Maven's
	// callback.
	SignIn ServerSignIn
	OAuth  OAuthClient
	// Voice answers POST /voice for requests carrying a token VoiceTokens accepts.
	Voice       VoiceTurner
	VoiceTokens TokenChecker
	// Guides and Phrases give enabled rows how to say them and their phrases box; Activity is
	// the feed /activity shows, where the owner's changes to secrets and the recovery code are
	// recorded.
	Guides   VoiceGuides
	Phrases  PhraseBook
	Activity ActivityFeed
	// Limits are the owner's limits on enabled MCP rows' arguments, which /tools shows and
	// edits (docs/design.md#rule-33).
	Limits ArgumentLimits
	// Notifications keeps the browsers subscribed to Web Push, and sends the test of the
	// notifications card.
	Notifications Notifications
	// Approvals are the calls that wait for the owner's approval on the phone.
	Approvals Approvals
	// Metrics counts requests and serves GET /metrics to holders of a token MetricsTokens
	// accepts, with MetricsGauges read at each scrape. Optional: nil with "metrics": false, and
	// then nothing is counted and /metrics is not served.
	Metrics       *metrics.Registry
	MetricsTokens TokenChecker
	MetricsGauges MetricsGauges
	Views         *views.Templates
	Assets        *Assets
	// Origins are the configured browser origins: pages and ceremonies answer only at their
	// hosts, and cross-origin protection trusts them.
	Origins []string
	// TLS says the daemon serves HTTPS itself: HSTS. Optional: false behind a proxy or on
	// plain HTTP.
	TLS bool
	// Now is the clock of session limits. Optional: nil is time.Now, which the daemon uses.
	Now func() time.Time
	// TrustedProxies are the peers whose Forwarded / X-Forwarded-For / X-Forwarded-Proto
	// headers are believed; from anyone else those headers are ignored. Optional: none is
	// believed, as with no trusted_proxies in the config.
	TrustedProxies []netip.Prefix
	// ConfigSource returns the config file the daemon reads, and whether the config running
	// came from it (false: it does not exist and the defaults run), as of now: a reload changes
	// it. An empty /tools names it.
	ConfigSource func() (path string, loaded bool)
	// SecretUsers maps each secret the running config refers to onto the servers that use it
	// (config.Config.SecretUsers), as of now: a reload changes it. /secrets lists them, and
	// which are missing.
	SecretUsers func() map[string][]string
	// ConfigProblems are what the running config holds that Maven runs despite, and the last
	// reload's refusal; /tools shows them.
	ConfigProblems ConfigProblems
	// Clients are the agents' clients and Maven's authorization server: the OAuth endpoints,
	// the consent page and /clients.
	Clients Clients
	// Agents, with its Servers and Tokens set, serves MCP to agents at /mcp and /sse
	// (mcpserver.go). Optional until the daemon has clients to verify tokens with (issue 20's
	// app/clients): without both, neither path is served.
	Agents AgentDeps
}

// missing names the required fields of d that are nil (or, for Origins, empty).
func (d Deps) missing() []string {
	var out []string
	for _, dep := range []struct {
		name string
		set  bool
	}{
		{"Logger", d.Logger != nil}, {"Vault", d.Vault != nil}, {"Sessions", d.Sessions != nil},
		{"Auth", d.Auth != nil}, {"Tools", d.Tools != nil}, {"Servers", d.Servers != nil},
		{"Commands", d.Commands != nil}, {"Wake", d.Wake != nil}, {"SignIn", d.SignIn != nil},
		{"OAuth", d.OAuth != nil}, {"Voice", d.Voice != nil}, {"VoiceTokens", d.VoiceTokens != nil},
		{"Guides", d.Guides != nil}, {"Phrases", d.Phrases != nil}, {"Activity", d.Activity != nil},
		{"Limits", d.Limits != nil},
		{"Notifications", d.Notifications != nil}, {"Approvals", d.Approvals != nil},
		{"MetricsTokens", d.MetricsTokens != nil}, {"MetricsGauges", d.MetricsGauges != nil},
		{"Views", d.Views != nil}, {"Assets", d.Assets != nil}, {"Origins", len(d.Origins) > 0},
		{"ConfigSource", d.ConfigSource != nil}, {"SecretUsers", d.SecretUsers != nil},
		{"ConfigProblems", d.ConfigProblems != nil}, {"Clients", d.Clients != nil},
	} {
		if !dep.set {
			out = append(out, dep.name)
		}
	}
	return out
}

// server carries the dependencies of every handler.
type server struct {
	log      *slog.Logger
	vault    *vault.Gate
	sessions *scs.SessionManager
	auth     *auth.Service
	tools    Tools
	servers  ServerStatuses
	commands ServerCommands
	waker    ServerWaker
	signIns  ServerSignIn
	oauth    OAuthClient
	voice    VoiceTurner
	// voiceTokens open POST /voice; metricsTokens GET /metrics, served with metrics' counts and
	// metricsGauges when metrics is not nil.
	voiceTokens   TokenChecker
	metrics       *metrics.Registry
	metricsTokens TokenChecker
	metricsGauges MetricsGauges
	guides        VoiceGuides
	phrases       PhraseBook
	limits        ArgumentLimits
	activity      ActivityFeed
	notify        Notifications
	approvals     Approvals
	views         *views.Templates
	assets        *Assets
	now           func() time.Time
	tls           bool
	proxies       []netip.Prefix
	// configSource: the config file and whether the running config came from it, as of now.
	configSource func() (path string, loaded bool)
	origins      []string
	// secretUsers: secret name → the configured servers that refer to it, as of now.
	secretUsers    func() map[string][]string
	configProblems ConfigProblems
	clients        Clients
	// offers say what the step-ups of consents, clients' tools and limits approve (consent.go).
	offers offers
	// atOriginHost and sameOrigin are the browser-facing checks, built once from origins: the
	// request's Host is a configured origin's (requireOriginHost), and a POST is not
	// cross-origin (crossOrigin).
	atOriginHost, sameOrigin func(http.Handler) http.Handler
	// Budgets of anonymous requests: beginning a ceremony and trying a recovery code, per
	// source or per known browser; recovery codes in total too.
	ceremoniesBySource  *sourceLimits
	ceremoniesByBrowser *limits[string]
	recoveryBySource    *sourceLimits
	recoveryByBrowser   *limits[string]
	recoveryTotal       *rate.Limiter
	// Budgets of the authorization server's anonymous requests: registering a client, and
	// asking for a consent page (which may fetch a client's metadata document).
	registrations      *sourceLimits
	authorizeBySource  *sourceLimits
	authorizeByBrowser *limits[string]
	// agents serves /mcp and /sse (NewAgentEndpoint); nil serves neither.
	agents http.Handler
}

// New returns the daemon's web app: its route table (routes) over the dependencies every
// handler shares. It refuses a Deps that leaves out a dependency the daemon always sets, naming
// it, and origins that are not URLs.
func New(d Deps) (http.Handler, error) {
	if missing := d.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("handlers: Deps without %s", strings.Join(missing, ", "))
	}
	s := &server{
		log: d.Logger, vault: d.Vault, sessions: d.Sessions, auth: d.Auth, tools: d.Tools,
		servers: d.Servers, commands: d.Commands, waker: d.Wake, signIns: d.SignIn, oauth: d.OAuth,
		voice: d.Voice, voiceTokens: d.VoiceTokens, metrics: d.Metrics, metricsTokens: d.MetricsTokens,
		metricsGauges: d.MetricsGauges, guides: d.Guides, phrases: d.Phrases, limits: d.Limits, activity: d.Activity, notify: d.Notifications,
		approvals: d.Approvals,
		views:     d.Views, assets: d.Assets, now: d.Now, tls: d.TLS, proxies: d.TrustedProxies,
		configSource: d.ConfigSource, origins: d.Origins, secretUsers: d.SecretUsers, configProblems: d.ConfigProblems,
		clients: d.Clients,
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.ceremoniesBySource = newLimits[netip.Prefix](ceremonyBudget, maxSources, s.now)
	s.ceremoniesByBrowser = newLimits[string](ceremonyBudget, maxSources, s.now)
	s.recoveryBySource = newLimits[netip.Prefix](recoveryBudget, maxSources, s.now)
	s.recoveryByBrowser = newLimits[string](recoveryBudget, maxSources, s.now)
	s.recoveryTotal = recoveryTotal.limiter()
	s.registrations = newLimits[netip.Prefix](registrationBudget, maxSources, s.now)
	s.authorizeBySource = newLimits[netip.Prefix](authorizeBudget, maxSources, s.now)
	s.authorizeByBrowser = newLimits[string](authorizeBudget, maxSources, s.now)
	// scs reports store failures through ErrorFunc; route them to the one error path.
	d.Sessions.ErrorFunc = s.sessionError
	var err error
	if s.sameOrigin, err = s.crossOrigin(d.Origins); err != nil {
		return nil, err
	}
	if s.atOriginHost, err = s.requireOriginHost(d.Origins); err != nil {
		return nil, err
	}
	if d.Agents.Servers != nil && d.Agents.Tokens != nil {
		if s.agents, err = NewAgentEndpoint(d.Agents, d.Origins, s.log); err != nil {
			return nil, err
		}
	}
	return s.routes(), nil
}

// routes is the whole URL surface of the daemon:
//
//	public      /healthz, /static/*, /sw.js, /manifest.webmanifest, POST /voice and /metrics
//	            (their own tokens), at any Host; /mcp and /sse (agents' tokens), at any Host but
//	            a rebound one
//	browser     everything else, only at the Host of a configured origin:
//	while locked /unlock and its endpoints, /setup, /logout; everything else goes to /unlock
//	session     /, /login and its WebAuthn endpoints
//	oauth       the authorization server's metadata, registration, token and revocation
//	            endpoints, at the Host of a configured origin, no session
//	signed-in   /tools, /approvals, /passkeys, /secrets, /activity, /clients, /step-up/*, /lock,
//	            /push/*, and their actions; the consent page answers anyone, and offers the
//	            unlock or sign-in first
//	step-up     enabling a tool (or the several selected), saving a tool's phrases or limits, approving a
//	            stdio server's command line (or several), signing in to an MCP server, adding or
//	            removing a passkey, setting or deleting a secret, a new recovery code, allowing
//	            a client or changing its tools, approving a pending call, how a row is
//	            confirmed (stepUpRoutes)
//
// Every state change is a POST, and every POST passes cross-origin protection. Anonymous
// ceremony begins and recovery codes are rate-limited per source address, or per browser a
// passkey proved the owner in before. The connection of a request that carries key material (a
// recovery code, PRF output) closes once it is answered. It is the route table alone, and the
// step-up actions (stepUpRoutes) follow it, so that the whole attack surface reads on one
// screen.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, forwarded(s.proxies), securityHeaders(s.tls))
	if s.metrics != nil {
		r.Use(countRequests(s.metrics))
		r.Get("/metrics", metricsGet(s.metrics, s.metricsTokens, s.metricsGauges))
	}

	// Public: no session.
	r.Get("/healthz", healthz(s.vault))
	r.Method(http.MethodGet, "/static/*", s.assets)
	r.Method(http.MethodHead, "/static/*", s.assets)
	// The service worker that shows notifications, and the manifest that lets a phone install
	// Maven to its home screen (iOS delivers Web Push only there): static, scoped at the root.
	r.Method(http.MethodGet, serviceWorkerPath, s.assets.File("sw.js"))
	r.Method(http.MethodGet, manifestPath, s.assets.File("manifest.webmanifest"))
	// The voice webhook: a bearer token, no session, no cookie, so no cross-origin check; the
	// token can only submit utterances.
	r.Post("/voice", s.handle(voicePost(s.voice, s.voiceTokens, s.log)))
	// Agents' MCP server, and their clients' authorization server (agentRoutes, oauthRoutes).
	s.agentRoutes(r)
	r.Group(s.oauthRoutes)

	r.Group(func(r chi.Router) {
		// Browser-facing: a request at a host that is not a configured origin's, and a
		// cross-origin POST, are refused before the session is even loaded.
		r.Use(s.atOriginHost, s.sameOrigin, s.sessions.LoadAndSave, sessionLoaded, noStore)
		r.NotFound(s.handle(s.notFound))
		r.MethodNotAllowed(s.handle(func(http.ResponseWriter, *http.Request) error { return errMethod }))

		// Reachable while locked: unlocking (which also signs the owner in), registering a
		// passkey through a setup link (how a lost passkey is replaced), signing out, locking.
		anonymous := s.limitCeremonies
		r.Get("/unlock", s.handle(s.unlockPage))
		r.With(anonymous).Post("/unlock/begin", s.handle(s.unlockBeginPost))
		r.With(carriesKeys).Post("/unlock/finish", s.handle(s.unlockFinishPost))
		r.With(carriesKeys).Post("/unlock/recovery", s.handle(s.unlockRecoveryPost))
		r.Get("/setup", s.handle(s.setupPage))
		r.With(anonymous).Post("/setup/begin", s.handle(s.setupBeginPost))
		r.With(carriesKeys).Post("/setup/finish", s.handle(s.setupFinishPost))
		r.Post("/logout", s.handle(s.logoutPost))
		// Authorization servers fetch who Maven is as a client (an https origin's client ID).
		r.Get(oauth.MetadataDocumentPath, s.handle(s.clientMetadataGet))
		r.With(s.requireOwner(false)).Post("/lock", s.handle(s.lockPost))
		s.consentRoutes(r)

		// Everything else waits for the unlock (docs/design.md#rule-19).
		r.Group(func(r chi.Router) {
			r.Use(s.requireUnlocked)
			r.Get("/", s.handle(s.home))
			r.Get("/login", s.handle(s.loginPage))
			r.With(anonymous).Post("/login/begin", s.handle(s.loginBeginPost))
			r.Post("/login/finish", s.handle(s.loginFinishPost))

			// Signed in; polling does not count as activity.
			s.pollRoutes(r.With(s.requireOwner(true)))

			r.Group(func(r chi.Router) {
				r.Use(s.requireOwner(false))
				r.Get("/tools", s.handle(s.toolsPage))
				r.Post("/tools/{id}/disable", s.handle(s.toolDisablePost))
				r.Post("/step-up/begin", s.handle(s.stepUpBeginPost))
				r.Post("/step-up/finish", s.handle(s.stepUpFinishPost))
				r.Get("/passkeys", s.handle(s.passkeysPage))
				r.With(carriesKeys).Post("/passkeys/add/finish", s.handle(s.passkeyAddFinishPost))
				r.Post("/passkeys/{id}/rename", s.handle(s.passkeyRenamePost))
				r.Post("/passkeys/{id}/enroll/begin", s.handle(s.enrollBeginPost))
				r.With(carriesKeys).Post("/passkeys/enroll/finish", s.handle(s.enrollFinishPost))
				r.Get("/secrets", s.handle(s.secretsPage))
				// Where the authorization server sends the owner back after a sign-in.
				r.Get(oauth.CallbackPath, s.handle(s.oauthCallbackGet))
				r.Get(oauth.CallbackPath+"/{issuer}", s.handle(s.oauthCallbackGet))
				r.Get("/activity", s.handle(s.activityPage))
				s.approvalRoutes(r)
				s.stepUpRoutes(r)
			})
		})
	})
	return r
}

// agentRoutes are Maven's MCP server for agents, /mcp and /sse (NewAgentEndpoint): their own
// bearer tokens, no session, no cookie; a foreign Origin, and a Host a DNS rebinding sent, are
// refused (docs/design.md#rule-26). Without Deps.Agents neither is served.
func (s *server) agentRoutes(r chi.Router) {
	if s.agents == nil {
		return
	}
	r.Handle("/mcp", s.agents)
	r.Handle("/sse", s.agents)
}

// stepUpRoutes are the signed-in actions that each need a step-up: the handler runs only with a
// fresh grant for this very action (requireStepUp), which names what the page showed. A row is
// approved as the page showed it; one that changed since is shown again, with what changed,
// before any passkey prompt.
func (s *server) stepUpRoutes(r chi.Router) {
	r.With(s.toolAsShown, s.requireStepUp(asShown(auth.ActionEnableTool))).Post("/tools/{id}/enable", s.handle(s.toolEnablePost))
	r.With(s.requireStepUp(toolsSelected)).Post("/tools/enable", s.handle(s.toolsEnablePost))
	// Phrases that cannot be saved are refused, line by line, before the passkey.
	r.With(s.phrasesSaveable, s.requireStepUp(asShown(auth.ActionSetPhrases))).Post("/tools/{id}/phrases", s.handle(s.toolPhrasesPost))
	// So are limits that cannot be saved, each beside its field; the step-up names the limits.
	r.With(s.limitsSaveable, s.requireStepUp(s.limitsAsShown)).Post("/tools/{id}/limits", s.handle(s.toolLimitsPost))
	r.With(s.requireStepUp(onRoute(auth.ActionAddServer))).Post("/servers/commands/{id}/approve", s.handle(s.serverCommandApprovePost))
	r.With(s.requireStepUp(commandsSelected)).Post("/servers/commands/approve", s.handle(s.serverCommandsApprovePost))
	r.With(s.requireStepUp(onRoute(auth.ActionAddPasskey))).Post("/passkeys/add/begin", s.handle(s.passkeyAddBeginPost))
	r.With(s.requireStepUp(onRoute(auth.ActionRemovePasskey))).Post("/passkeys/{id}/remove", s.handle(s.passkeyRemovePost))
	r.With(s.requireStepUp(secretNamed(auth.ActionSetSecret))).Post("/secrets", s.handle(s.secretSetPost))
	r.With(s.requireStepUp(secretNamed(auth.ActionDeleteSecret))).Post("/secrets/delete", s.handle(s.secretDeletePost))
	r.With(s.requireStepUp(onRoute(auth.ActionRotateRecovery))).Post("/secrets/recovery", s.handle(s.recoveryRotatePost))
	r.With(s.requireStepUp(signInAsShown)).Post("/servers/sign-in", s.handle(s.serverSignInPost))
	// A pending call runs only with a step-up naming its binding as its page showed it
	// (docs/design.md#rule-30); how a row is confirmed, with one naming the setting and its shape.
	r.With(s.requireStepUp(callAsShown)).Post("/approvals/{id}/approve", s.handle(s.approvalApprovePost))
	r.With(s.requireStepUp(confirmAsShown)).Post("/tools/{id}/confirm", s.handle(s.toolConfirmPost))
	// A client is allowed, or its tools changed, as the page showed them.
	r.With(s.requireStepUp(s.consentAsShown)).Post(pathAuthorize+"/{id}", s.handle(s.consentAllowPost))
	r.With(s.requireStepUp(s.clientToolsAsShown)).Post("/clients/tools", s.handle(s.clientToolsPost))
}

// pollRoutes are what the signed-in pages poll: the servers card, the pending calls' list and
// a call's state. r lets a poll pass without counting as the owner's activity.
func (s *server) pollRoutes(r chi.Router) {
	r.Get("/tools/servers", s.handle(s.serversCardGet))
	r.Get("/approvals/list", s.handle(s.approvalsListGet))
	r.Get("/approvals/{id}/status", s.handle(s.approvalStatusGet))
}

// approvalRoutes are the pending calls' pages (docs/design.md#rule-30), Deny, which needs no
// step-up (Approve does: stepUpRoutes), and the notifications card /approvals shows.
func (s *server) approvalRoutes(r chi.Router) {
	r.Get("/approvals", s.handle(s.approvalsPage))
	r.Get("/approvals/{id}", s.handle(s.approvalPage))
	r.Post("/approvals/{id}/deny", s.handle(s.approvalDenyPost))
	s.pushRoutes(r)
}

// pushRoutes turn Web Push on and off in the signed-in owner's browser, and send it a test
// (docs/design.md#rule-30).
func (s *server) pushRoutes(r chi.Router) {
	r.Post("/push/subscribe", s.handle(s.pushSubscribePost))
	r.Post("/push/unsubscribe", s.handle(s.pushUnsubscribePost))
	r.Post("/push/test", s.handle(s.pushTestPost))
}

// consentRoutes are the owner's side of agents' clients: the consent page, which answers while
// locked and signed out too (it offers the unlock or the sign-in first, and comes back to the
// same request), Deny, and /clients with Revoke. Allow, and a client's tools, need a step-up
// (stepUpRoutes).
func (s *server) consentRoutes(r chi.Router) {
	r.With(s.limitAuthorize).Get(pathAuthorize, s.handle(s.consentPage))
	r.Group(func(r chi.Router) {
		r.Use(s.requireUnlocked, s.requireOwner(false))
		r.Post(pathAuthorize+"/{id}/deny", s.handle(s.consentDenyPost))
		r.Get("/clients", s.handle(s.clientsPage))
		r.Post("/clients/revoke", s.handle(s.clientRevokePost))
	})
}

// oauthRoutes are Maven's authorization server for agents' clients (docs/design.md#rule-29),
// at the configured origins: its metadata, registration (rate-limited per source, capped), the
// token and revocation endpoints. Machines call them, with no session and no cookie, so no
// cross-origin check: a cross-site form can send nothing a client's own credentials do not
// cover.
func (s *server) oauthRoutes(r chi.Router) {
	r.Use(s.atOriginHost)
	r.Get(pathResourceMetadata, s.resourceMetadataGet)
	r.Get(pathResourceMetadata+"/mcp", s.resourceMetadataGet)
	r.Get(pathResourceMetadata+pathSSE, s.resourceMetadataGet)
	r.Get(pathServerMetadata, s.serverMetadataGet)
	// Any other well-known document (OpenID's, which clients try too) is a plain 404, not a
	// page's sign-in.
	r.Get("/.well-known/*", func(w http.ResponseWriter, _ *http.Request) {
		oauthError(w, http.StatusNotFound, "not_found", "Maven serves no such document.")
	})
	r.With(noStore).Post(pathRegister, s.handle(s.registerPost))
	r.Post(pathToken, s.handle(s.tokenPost))
	r.Post(pathRevoke, s.handle(s.revokePost))
}

// home sends the browser where it belongs.
func (s *server) home(w http.ResponseWriter, r *http.Request) error {
	if s.signedIn(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// notFound sends the browser to /unlock while locked and a signed-out browser to /login, like
// every other page, and tells a signed-in owner the page does not exist.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) error {
	if s.vault.Locked() {
		s.toUnlock(w, r)
		return nil
	}
	if !s.signedIn(r) {
		s.toLogin(w, r)
		return nil
	}
	return errNoPage
}
