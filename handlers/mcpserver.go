package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/agents"
)

// AgentServers are the MCP servers of each client's agents (*agents.Service): legacy serves
// 2025-era sessions and SSE, modern 2026-07-28 requests.
type AgentServers interface {
	// Servers fails (agents.ErrUnknownClient) for a client the owner has not approved.
	Servers(ctx context.Context, clientID string) (legacy, modern *sdk.Server, err error)
}

// AgentTokens verifies the bearer tokens agents present (app/clients).
type AgentTokens interface {
	// Verify returns the id of the client token speaks for at resource (the URL it was
	// presented at: https://maven.example/mcp, or /sse), and when it expires (zero: never). It
	// fails with an error wrapping ErrAgentToken for a token that speaks for no client there:
	// unknown, expired, revoked, or for another resource.
	Verify(ctx context.Context, token, resource string) (clientID string, expires time.Time, err error)
}

// ErrAgentToken is what AgentTokens.Verify wraps for a token that opens nothing.
var ErrAgentToken = errors.New("not a valid agent token")

// AgentDeps are what /mcp and /sse need.
type AgentDeps struct {
	Servers AgentServers
	Tokens  AgentTokens
	Limits  AgentLimits
}

// AgentLimits bound agents' sessions; zero fields take the defaults.
type AgentLimits struct {
	// Idle ends a 2025-era session that has had no request for this long (DefaultAgentIdle).
	Idle time.Duration
	// Sessions is the most sessions one client's agents hold at once (DefaultAgentSessions):
	// 2025-era ones, SSE streams, and 2026-07-28 requests and listen streams in flight.
	Sessions int
}

// Defaults of AgentLimits.
const (
	DefaultAgentIdle     = 10 * time.Minute
	DefaultAgentSessions = 256
)

// Bounds of what agents send and of what resumable streams keep.
const (
	maxAgentBody     = 1 << 20 // one JSON-RPC message from an agent, as for /voice
	maxAgentReplayed = 8 << 20 // the events kept for agents resuming streams, all sessions together
)

// agentEndpoint serves /mcp and /sse (docs/design.md#rule-26).
type agentEndpoint struct {
	servers AgentServers
	tokens  AgentTokens
	log     *slog.Logger
	// origins are the configured origins; hosts their hosts (originHosts), which may be
	// reached on a loopback listener through a reverse proxy.
	origins, hosts map[string]bool
	maxSessions    int
	// stateful serves the 2025 era, with sessions, resumable streams and an idle timeout;
	// stateless serves 2026-07-28, one request at a time.
	stateful, stateless *sdk.StreamableHTTPHandler

	mu  sync.Mutex
	sse map[string]sseEntry // by client id: each client's SSE sessions are its own
}

type sseEntry struct {
	server  *sdk.Server
	handler *sdk.SSEHandler
}

// NewAgentEndpoint serves /mcp and /sse to d's agents (docs/design.md#rule-26); configured are
// the configured origins. New mounts it in the route table; alone, it is Maven's MCP server
// without the pages, as the conformance suite's server scenarios test it.
func NewAgentEndpoint(d AgentDeps, configured []string, log *slog.Logger) (http.Handler, error) {
	if d.Servers == nil || d.Tokens == nil {
		return nil, errors.New("handlers: the agents' endpoint needs its Servers and Tokens")
	}
	e, err := newAgentEndpoint(d, configured, log)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", e.guard(http.HandlerFunc(e.serveMCP)))
	mux.Handle("/sse", e.guard(http.HandlerFunc(e.serveSSE)))
	return mux, nil
}

// newAgentEndpoint builds the endpoint of d's agents; configured are the configured origins.
func newAgentEndpoint(d AgentDeps, configured []string, log *slog.Logger) (*agentEndpoint, error) {
	hosts, err := originHosts(configured)
	if err != nil {
		return nil, err
	}
	origins := map[string]bool{}
	for _, o := range configured {
		origins[o] = true
	}
	limits := d.Limits
	if limits.Idle <= 0 {
		limits.Idle = DefaultAgentIdle
	}
	if limits.Sessions <= 0 {
		limits.Sessions = DefaultAgentSessions
	}
	e := &agentEndpoint{servers: d.Servers, tokens: d.Tokens, log: log, origins: origins, hosts: hosts,
		maxSessions: limits.Sessions, sse: map[string]sseEntry{}}
	replay := sdk.NewMemoryEventStore(nil)
	replay.SetMaxBytes(maxAgentReplayed)
	quiet := agents.DebugLogger(log)
	// The endpoint checks Host itself (rebound): go-sdk's check would refuse a configured
	// origin's Host on a loopback listener, which is a reverse proxy on the same machine.
	e.stateful = sdk.NewStreamableHTTPHandler(e.legacyServer, &sdk.StreamableHTTPOptions{
		EventStore: replay, SessionTimeout: limits.Idle, Logger: quiet,
		DisableLocalhostProtection: true, MaxRequestBodyBytes: maxAgentBody,
	})
	e.stateless = sdk.NewStreamableHTTPHandler(e.modernServer, &sdk.StreamableHTTPOptions{
		Stateless: true, PropagateRequestCancellation: true, Logger: quiet,
		DisableLocalhostProtection: true, MaxRequestBodyBytes: maxAgentBody,
	})
	return e, nil
}

// guard is what every agent request passes first: an Origin that is not a configured origin
// is refused (403), as is a Host that a DNS rebinding could have sent to a loopback listener;
// then the request must carry a bearer token AgentTokens accepts for the URL it was sent to,
// else 401 with the protected-resource metadata's address (RFC 9728) in WWW-Authenticate: the
// root document for /mcp, /sse's own for /sse (resourceMetadataGet). The client's id becomes
// the token's UserID, so go-sdk refuses another client's request in a session. A request let
// through may stream for as long as its session lives.
func (e *agentEndpoint) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !e.origins[o] {
			http.Error(w, "Forbidden: the Origin is not one of Maven's origins", http.StatusForbidden)
			return
		}
		if e.rebound(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		origin := schemeOf(r) + "://" + r.Host
		verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			client, expires, err := e.tokens.Verify(ctx, token, origin+r.URL.Path)
			switch {
			case errors.Is(err, ErrAgentToken):
				return nil, auth.ErrInvalidToken
			case err != nil:
				e.log.Error("agents: verify a token", "err", err)
				return nil, errors.New("the token could not be checked")
			}
			return &auth.TokenInfo{UserID: client, Expiration: expires}, nil
		}
		metadata := origin + pathResourceMetadata
		if r.URL.Path == pathSSE {
			metadata += pathSSE
		}
		bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL:    metadata,
			AllowMissingExpiration: true,
		})
		bearer(longLived(next)).ServeHTTP(w, r)
	})
}

// rebound reports whether r came to a loopback listener for a Host that is neither loopback
// nor a configured origin's: a page's DNS rebinding, which must not reach the agents' tools.
func (e *agentEndpoint) rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !loopback(local.String()) {
		return false
	}
	return !loopback(r.Host) && !e.hosts[strings.ToLower(r.Host)]
}

// loopback reports whether hostport (a port is optional) names this machine's loopback.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// longLived lifts the server's read and write deadlines off an agent's request once its body
// is read: a stream (a 2025-era session's GET, an SSE session, a 2026-07-28 listen stream)
// lives as long as its session, and net/http ends a request's context when a read deadline
// passes. What a stream costs is bounded by AgentLimits instead.
func longLived(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		if r.Body == nil || r.Body == http.NoBody {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			r.Body = &liftOnEOF{ReadCloser: r.Body, rc: rc}
		}
		next.ServeHTTP(w, r)
	})
}

// liftOnEOF lifts the read deadline once the body has been read to its end.
type liftOnEOF struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *liftOnEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// clientOf is the id of the client r's token speaks for (guard).
func clientOf(r *http.Request) string {
	if info := auth.TokenInfoFromContext(r.Context()); info != nil {
		return info.UserID
	}
	return ""
}

// legacyServer and modernServer find the servers of r's client, for go-sdk (nil: none).
func (e *agentEndpoint) legacyServer(r *http.Request) *sdk.Server {
	legacy, _ := e.serversOf(r)
	return legacy
}

func (e *agentEndpoint) modernServer(r *http.Request) *sdk.Server {
	_, modern := e.serversOf(r)
	return modern
}

func (e *agentEndpoint) serversOf(r *http.Request) (legacy, modern *sdk.Server) {
	legacy, modern, err := e.servers.Servers(r.Context(), clientOf(r))
	if err != nil {
		e.log.Debug("agents: no servers for a request", "err", err)
		return nil, nil
	}
	return legacy, modern
}

// protocolHeader is where a streamable HTTP request names its protocol revision.
const protocolHeader = "Mcp-Protocol-Version"

// serveMCP is /mcp. go-sdk serves 2026-07-28 only statelessly and the 2025 era only with
// sessions, so each request goes to the handler of its era: one that names 2026-07-28 or later
// in its protocol header (as go-sdk's own requests of that era must, and go-sdk's handler
// reads it) to the stateless one, any other to the one with sessions.
func (e *agentEndpoint) serveMCP(w http.ResponseWriter, r *http.Request) {
	legacy, modern := e.serversOf(r)
	if v := r.Header.Get(protocolHeader); v >= "2026-07-28" {
		if e.full(w, modern) {
			return
		}
		e.stateless.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && e.full(w, legacy) {
		return
	}
	e.stateful.ServeHTTP(w, r)
}

// serveSSE is /sse, the legacy HTTP+SSE transport Home Assistant's client falls back to. Each
// client has an SSE handler of its own, so a session's POSTs are taken only with its own
// client's token. A POST that names no session is a client trying streamable HTTP first, as
// Home Assistant's does at any URL: 405 is what tells it to fall back to SSE (coordinator.py's
// mcp_client; the MCP transports' backwards compatibility).
func (e *agentEndpoint) serveSSE(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && !r.URL.Query().Has("sessionid") {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method Not Allowed: /sse is the HTTP+SSE transport; GET it for a session, or use /mcp", http.StatusMethodNotAllowed)
		return
	}
	legacy, _ := e.serversOf(r)
	if legacy == nil {
		http.Error(w, "no server available", http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodGet && e.full(w, legacy) {
		return
	}
	e.sseOf(clientOf(r), legacy).ServeHTTP(w, r)
}

func (e *agentEndpoint) sseOf(client string, legacy *sdk.Server) http.Handler {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.sse[client]; ok && s.server == legacy {
		return s.handler
	}
	h := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return legacy },
		&sdk.SSEOptions{DisableLocalhostProtection: true, MaxRequestBodyBytes: maxAgentBody})
	e.sse[client] = sseEntry{server: legacy, handler: h}
	return h
}

// full refuses a new session (503) when srv's client holds AgentLimits.Sessions already.
func (e *agentEndpoint) full(w http.ResponseWriter, srv *sdk.Server) bool {
	if srv == nil {
		return false
	}
	n := 0
	for range srv.Sessions() {
		n++
	}
	if n < e.maxSessions {
		return false
	}
	w.Header().Set("Retry-After", "10")
	http.Error(w, fmt.Sprintf("This client holds %d sessions already: end one, or let one idle out.", n), http.StatusServiceUnavailable)
	return true
}
