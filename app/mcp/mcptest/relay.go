package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay is the bare floor of an MCP gateway, for the bench: a go-sdk server offering every tool
// of an upstream as the upstream lists it, each call made there through one go-sdk client
// session, and nothing else (no rows, rules, validation or record). An agent's call through
// Maven is the same two go-sdk exchanges with Maven's rules between them, so a call through a
// Relay is what such a call costs at the least (bench/README.md).
type Relay struct {
	Server    *sdk.Server
	upstream  *sdk.ClientSession
	stateless bool
}

// NewRelay connects to the streamable-HTTP upstream at url (with token as a bearer token, if
// set), lists its tools once, and returns a relay offering them, speaking the protocol versions
// in protocols (go-sdk's default when empty).
func NewRelay(ctx context.Context, url, token string, protocols []string) (*Relay, error) {
	hc := &http.Client{Transport: Bearer{Token: token, Base: http.DefaultTransport}}
	impl := &sdk.Implementation{Name: "relay", Version: "test"}
	cs, err := sdk.NewClient(impl, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		return nil, fmt.Errorf("relay: connect to %s: %w", url, err)
	}
	r := &Relay{upstream: cs, stateless: stateless(protocols),
		Server: sdk.NewServer(impl, &sdk.ServerOptions{SupportedProtocolVersions: protocols})}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, fmt.Errorf("relay: list %s: %w", url, err)
		}
		// The schemas are served as JSON bytes, as Maven serves an approved row's: the client
		// decoded them into maps, which go-sdk would encode key by key at every listing.
		if tool.InputSchema, err = rawJSON(tool.InputSchema); err == nil {
			tool.OutputSchema, err = rawJSON(tool.OutputSchema)
		}
		if err != nil {
			cs.Close()
			return nil, fmt.Errorf("relay: tool %q: %w", tool.Name, err)
		}
		r.Server.AddTool(tool, r.call(tool.Name))
	}
	return r, nil
}

// call is the handler of the relay's tool name: the same call, made upstream.
func (r *Relay) call(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return r.upstream.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: req.Params.Arguments})
	}
}

// HTTPHandler serves the relay over streamable HTTP, as a Scripted server is served.
func (r *Relay) HTTPHandler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return r.Server },
		&sdk.StreamableHTTPOptions{Stateless: r.stateless})
}

// stateless reports whether a server speaking protocols is served statelessly over HTTP: one
// that speaks 2026-07-28, which has no sessions.
func stateless(protocols []string) bool {
	return slices.ContainsFunc(protocols, func(v string) bool { return v >= "2026-07-28" })
}

// Close ends the relay's upstream session.
func (r *Relay) Close() error { return r.upstream.Close() }

// rawJSON returns v as its JSON bytes; nil stays nil.
func rawJSON(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

// Bearer adds Token as a bearer token to every request Base carries, when there is one: a
// client of Maven's /mcp, or a relay's of its upstream.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.Token == "" {
		return b.Base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}
