package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Maven speaks both protocol eras (docs/design.md#rule-12) and lets go-sdk choose: it asks for the
// newest revision, 2026-07-28 (a server/discover probe, then list changes pushed on a
// subscriptions/listen stream), and falls back to the 2025 era's initialize handshake when the
// server answers the probe with an error, as every 2025-era server does. The differences that
// matter to Maven are handled where they arise:
//   - liveness: go-sdk pings only 2025-era sessions (KeepAlive); a 2026-07-28 server over HTTP
//     is watched through its listen stream (watch.go) and probed (probe.go);
//   - list caching: a ttlMs hint never spares a listing (noListCache);
//   - elicitation: a 2026-07-28 server asks with an input_required result, which go-sdk's
//     multi-round-trip middleware turns into the same ElicitationHandler call as a 2025-era
//     elicitation/create (elicit.go).

// newClient is the sdk client of one server. A list change it hears of asks for a refresh.
func (s *supervisor) newClient() *sdk.Client {
	keepAlive := s.m.opts.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "maven", Version: s.m.opts.Version}, &sdk.ClientOptions{
		Logger: s.logger,
		// Form elicitation only: a question voice can put to the owner. No roots (Maven has none to
		// offer, and a server that asks for them can hold up Close for seconds, see
		// docs/peers.md#go-sdk-client), no sampling (Maven runs no model), no URL elicitation
		// (voice opens no pages).
		Capabilities: &sdk.ClientCapabilities{
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}},
		},
		ElicitationHandler: s.elicit,
		// notifications/tools/list_changed, on a 2025-era session or a listen stream alike.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.requestRefresh()
		},
		// Only for 2025-era sessions: go-sdk sends no pings under 2026-07-28.
		KeepAlive: keepAlive,
		// One lost ping is a blip; two in a row mean the session is dead.
		KeepAliveFailureThreshold: 2,
	})
	c.AddSendingMiddleware(noListCache)
	return c
}

// noListCache drops the ttlMs hint of every tools/list answer before go-sdk caches the answer by
// it, so every listing Maven asks for reaches the server and is compared (docs/design.md#rule-8 and
// docs/design.md#rule-12). A hint may only spare a client a request, and Maven's own schedule (list
// changes, refresh_interval) already decides when to list: a server's hint of an hour must not hide
// a redefinition for that hour.
func noListCache(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*sdk.ListToolsResult); ok {
			list.TTLMs = 0
		}
		return res, err
	}
}

// probeClient is the client of liveness probes (probe.go): it asks for nothing and listens
// for nothing, so a probe is one server/discover.
func (s *supervisor) probeClient() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "maven", Version: s.m.opts.Version}, &sdk.ClientOptions{
		Logger:         s.logger,
		Capabilities:   &sdk.ClientCapabilities{},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
}
