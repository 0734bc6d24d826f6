// Package hatest is Home Assistant's MCP client — its "Model Context Protocol" integration,
// homeassistant/components/mcp in home-assistant/core — reproduced in Go for Maven's tests,
// since Home Assistant cannot be installed here. It does what that source does, step by step,
// each step naming the function it follows, as read at these commits:
//
//   - config_flow.py and registration.py at 00b00102104c57ec28e05371131a97d38c4be956: the config
//     flow (async_step_user, validate_input, async_step_auth_discovery,
//     async_discover_protected_resource, async_discover_authorization_server, _select_scopes,
//     _async_register_dynamic_client, extra_authorize_data, async_oauth_create_entry) and
//     dynamic registration (async_register_dynamic_client, _parse_registration_response,
//     _reject_expiring_client_secret).
//   - coordinator.py at 1400c8be733a88bbd7b03b7f94bbd593d313562e, and its later revision on
//     httpx2 and probatio (whose commit the index it was read from does not name), which adds
//     reauth on a 401 and the tools' annotations: mcp_client, ModelContextProtocolTool.async_call,
//     ModelContextProtocolCoordinator (UPDATE_INTERVAL, TIMEOUT).
//   - application_credentials.py at 1df604799c161311de3501053c770c87b48c9cfd
//     (MCPAuthImplementation: PKCE for an application credential too), and its later revision
//     (McpRegisteredOAuth2Implementation, likewise unnamed by the index): PKCE, the registered
//     redirect URI, client_secret_basic.
//   - auth.py at 048ce0eaa9fbd7e35325ff72e17a3ad25e53efe9: AuthenticateHeader.from_header.
//   - homeassistant/helpers/config_entry_oauth2_flow.py at
//     005d61300a24be809f316d08884aab20d2236f9e: LocalOAuth2ImplementationWithPkce (the authorize
//     URL, the token requests), OAuth2Session.async_ensure_token_valid (CLOCK_OUT_OF_SYNC_MAX_SEC),
//     async_get_redirect_uri (MY_AUTH_CALLBACK_PATH), OAuth2AuthorizeCallbackView and the state
//     it signs.
//
// An MCP session is go-sdk's client speaking as the Python SDK's streamable_http_client and
// sse_client do (initialize at 2025-11-25, notifications/initialized, the standalone GET
// stream, DELETE at the end). What Home Assistant does with a tool's schema (probatio's
// from_openapi) is left out: it changes nothing a server sees.
package hatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// What coordinator.py fixes.
const (
	// UpdateInterval is how often the coordinator lists the tools again (UPDATE_INTERVAL).
	UpdateInterval = 30 * time.Minute
	// Timeout bounds every list and every call, session included (TIMEOUT).
	Timeout = 10 * time.Second
	// clockSkew is how long before its expiry a token is refreshed (CLOCK_OUT_OF_SYNC_MAX_SEC).
	clockSkew = 20 * time.Second
	// clientName is how Home Assistant registers itself (const.py's DCR_CLIENT_NAME).
	clientName = "Home Assistant"
	// callbackPath is where the authorization server sends the browser back (AUTH_CALLBACK_PATH).
	callbackPath = "/auth/external/callback"
	// MyCallback is My Home Assistant's OAuth redirect (MY_AUTH_CALLBACK_PATH): the redirect URI
	// whenever the my integration is loaded, as default_config loads it. That page sends the
	// browser on to the instance's own callback (CallbackURL).
	MyCallback = "https://my.home-assistant.io/redirect/oauth"
)

// Options configure a Home Assistant.
type Options struct {
	// HTTPClient makes every request (nil: a client of its own).
	HTTPClient *http.Client
	// Now is Home Assistant's clock, which decides when a token is refreshed (nil: time.Now).
	Now func() time.Time
	// Credential is an application credential the user entered, for a server that advertises
	// no registration endpoint (async_step_credentials_choice); without one such a flow aborts
	// with missing_credentials.
	Credential *Credential
	// MyHomeAssistant says the my integration is loaded: the redirect URI is then MyCallback,
	// else this instance's own callback (async_get_redirect_uri).
	MyHomeAssistant bool
}

// Credential is an application credential: a client id and secret the user got from the
// server's owner.
type Credential struct {
	ClientID, ClientSecret string
}

// HomeAssistant is one Home Assistant instance: its HTTP server (only the OAuth callback view
// of it), the application credentials it stored, and the flows in progress.
type HomeAssistant struct {
	opts        Options
	http        *http.Client
	srv         *http.Server
	frontend    string // HA-Frontend-Base: where the browser reaches this instance
	jwtSecret   []byte
	credentials []storedCredential

	mu       sync.Mutex
	flows    map[string]*Flow // by flow id, until its callback came
	sessions Sessions
}

// Sessions counts the MCP sessions Home Assistant opened, by the transport each ended up on.
type Sessions struct {
	Streamable, SSE int
}

// Sessions returns how many sessions Home Assistant opened so far, over each transport.
func (ha *HomeAssistant) Sessions() Sessions {
	ha.mu.Lock()
	defer ha.mu.Unlock()
	return ha.sessions
}

func (ha *HomeAssistant) opened(sse bool) {
	ha.mu.Lock()
	defer ha.mu.Unlock()
	if sse {
		ha.sessions.SSE++
	} else {
		ha.sessions.Streamable++
	}
}

// New starts a Home Assistant whose HTTP server listens on a loopback port of its own.
func New(opts Options) (*HomeAssistant, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hatest: listen: %w", err)
	}
	ha := &HomeAssistant{opts: opts, http: hc, frontend: "http://" + ln.Addr().String(),
		jwtSecret: randomBytes(32), flows: map[string]*Flow{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, ha.callback)
	ha.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go ha.srv.Serve(ln)
	return ha, nil
}

// Close stops Home Assistant's HTTP server.
func (ha *HomeAssistant) Close() error { return ha.srv.Close() }

// RedirectURI is the redirect URI Home Assistant registers and authorizes with
// (async_get_redirect_uri): MyCallback with My Home Assistant, else the frontend's base and the
// callback path.
func (ha *HomeAssistant) RedirectURI() string {
	if ha.opts.MyHomeAssistant {
		return MyCallback
	}
	return ha.frontend + callbackPath
}

// CallbackURL is where My Home Assistant sends the browser that came to MyCallback with query:
// this instance's callback view, with the same query.
func (ha *HomeAssistant) CallbackURL(query string) string {
	return ha.frontend + callbackPath + "?" + query
}

// Abort is a config flow that aborted, with the reason Home Assistant shows (strings.json).
type Abort struct {
	Reason string
	Err    error // what caused it, if anything
}

func (a *Abort) Error() string {
	if a.Err != nil {
		return "config flow aborted: " + a.Reason + ": " + a.Err.Error()
	}
	return "config flow aborted: " + a.Reason
}

func (a *Abort) Unwrap() error { return a.Err }

// FormError is the user step shown again with an error (errors["base"] or errors["url"]).
type FormError struct {
	Key string
	Err error
}

func (e *FormError) Error() string { return "config flow form error: " + e.Key + ": " + e.Err.Error() }
func (e *FormError) Unwrap() error { return e.Err }

// ErrAuthFailed is ConfigEntryAuthFailed: the entry needs the user to sign in again, and Home
// Assistant starts a reauth flow.
var ErrAuthFailed = errors.New("the MCP server requires authentication")

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail
	}
	return b
}

func randomID() string { return hex.EncodeToString(randomBytes(16)) }

// withTimeout is asyncio.timeout(TIMEOUT) around one operation.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, Timeout)
}
