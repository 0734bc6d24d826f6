package agents

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"maven/app/reveal"
)

// modernVersion is the protocol revision served statelessly (docs/peers.md#go-sdk-client).
const modernVersion = "2026-07-28"

// legacyVersions are the revisions of the 2025 era and before, which have sessions.
var legacyVersions = slices.DeleteFunc(sdk.SupportedProtocolVersions(), func(v string) bool { return v >= modernVersion })

// newClient builds a client's two servers, offering nothing yet. Both declare tools alone,
// with list changes. Only legacy pings its sessions: a 2026-07-28 session lives for one request
// (or one listen stream) and cannot be sent a request.
func (s *Service) newClient(id string, policy Policy) *client {
	c := &client{id: id, policy: policy, listed: map[string]*entry{}, listedIDs: map[int64]*entry{},
		calls: rate.NewLimiter(rate.Limit(s.opts.CallsPerSecond), s.opts.Burst)}
	impl := &sdk.Implementation{Name: "maven", Title: "Maven", Version: s.opts.Version}
	caps := &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}
	quiet := DebugLogger(s.log)
	c.legacy = sdk.NewServer(impl, &sdk.ServerOptions{Capabilities: caps, Logger: quiet,
		KeepAlive: s.opts.KeepAlive, KeepAliveFailureThreshold: 2, SupportedProtocolVersions: legacyVersions})
	c.modern = sdk.NewServer(impl, &sdk.ServerOptions{Capabilities: caps, Logger: quiet,
		SupportedProtocolVersions: []string{modernVersion}})
	for _, srv := range []*sdk.Server{c.legacy, c.modern} {
		srv.AddReceivingMiddleware(c.unknownTool, s.noteListings)
	}
	return c
}

// apply makes c's servers offer exactly the entries of the last read (shown) its policy covers:
// what is gone or changed goes, what is new or changed comes, and go-sdk tells the connected
// agents (notifications/tools/list_changed, or the listen stream). Servers that show the read
// before, under the same policy, take only what that read changed: one redefined row costs each
// client a few map lookups, not a pass over every enabled row.
func (s *Service) apply(c *client) {
	shown := &s.shown
	policy, _ := c.current()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.shown == shown.gen:
		return
	case c.shown != 0 && c.shown+1 == shown.gen:
		c.offer(policy, shown.delta, shown.prev, shown.byID, s.handler)
	default:
		ids := slices.Collect(maps.Keys(c.listedIDs))
		for _, e := range shown.entries {
			ids = append(ids, e.row.ID)
		}
		c.offer(policy, ids, c.listedIDs, shown.byID, s.handler)
	}
	c.shown = shown.gen
}

// offer replaces, for each of ids, the tool of its entry in was (if c's servers offer it) with
// its entry in now (if any, and policy covers it). c.mu is held.
func (c *client) offer(policy Policy, ids []int64, was, now map[int64]*entry, handler func(*client, *entry) sdk.ToolHandler) {
	var gone []string
	for _, id := range ids {
		if e := was[id]; e != nil && c.listed[e.tool.Name] == e && (now[id] != e || !policy.allows(id)) {
			gone = append(gone, e.tool.Name)
			delete(c.listed, e.tool.Name)
			delete(c.listedIDs, id)
		}
	}
	if len(gone) > 0 {
		c.legacy.RemoveTools(gone...)
		c.modern.RemoveTools(gone...)
	}
	for _, id := range ids {
		e := now[id]
		if e == nil || !policy.allows(id) || c.listed[e.tool.Name] == e {
			continue
		}
		c.listed[e.tool.Name] = e
		c.listedIDs[id] = e
		h := handler(c, e)
		c.legacy.AddTool(e.tool, h)
		c.modern.AddTool(e.tool, h)
	}
}

// unknownTool answers a call to a tool the server does not offer (any more) with a tool error
// an assistant can act on, rather than go-sdk's protocol error: an agent that listed before a
// change is told to list again.
func (c *client) unknownTool(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		params, ok := req.GetParams().(*sdk.CallToolParamsRaw)
		if !ok || c.offers(params.Name) {
			return next(ctx, method, req)
		}
		name, _ := reveal.Cut(params.Name, 128, "…")
		return refusal(fmt.Sprintf("There is no tool named %q here now: list the tools again. Nothing was done.", name)), nil
	}
}

// offers reports whether c's servers offer a tool of that name now.
func (c *client) offers(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listed[name] != nil
}

// DebugLogger is l with every record at debug level, for go-sdk's own log: it notes every
// session and every misbehaving agent, which is not the daemon's news.
func DebugLogger(l *slog.Logger) *slog.Logger { return slog.New(debugHandler{l.Handler()}) }

type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
