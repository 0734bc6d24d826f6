// Package mcptest provides a scripted MCP server for tests: its tools can be added, removed and
// redefined while clients are connected (go-sdk then announces notifications/tools/list_changed,
// or in the 2026-07-28 era notifies a subscriptions/listen stream), its calls are counted, a
// tool can ask the client for input (elicitation), and it serves streamable HTTP, SSE, or stdio
// through the scripted-mcp command beside this file. It speaks go-sdk's default protocol
// revisions (the 2025 era) unless Options.Protocols restricts it to one era.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolSpec describes one scripted tool, in Go and in scripted-mcp's JSON tools file.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's input schema; empty means {"type":"object"}.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	ReadOnly    bool            `json:"readOnly,omitempty"`
	// What a call returns, in order of precedence: the value of the environment variable Env,
	// the call's arguments as JSON (Echo), or Text.
	Env  string `json:"env,omitempty"`
	Echo bool   `json:"echo,omitempty"`
	Text string `json:"text,omitempty"`
	// Content, if set, is the result's content as MCP JSON (an array of content blocks: image,
	// audio, resource, …), and Structured its structured content; they replace Text.
	Content    json.RawMessage `json:"content,omitempty"`
	Structured json.RawMessage `json:"structuredContent,omitempty"`
	// IsError marks every result as a tool error.
	IsError bool `json:"isError,omitempty"`
	// DelayMS delays the answer, for calls that must still be running when something happens.
	DelayMS int `json:"delayMs,omitempty"`
	// Elicit, if set, is an elicitation request (go-sdk's ElicitParams as JSON) that every call
	// makes of the client before it answers; the answer is then the client's reply as JSON,
	// {"action":…,"content":…}. The tool asks as a 2026-07-28 server does, with an
	// input_required result; go-sdk turns that into an elicitation/create request for a 2025-era
	// client. The tool's handler runs twice per call: once to ask, once with the reply.
	Elicit json.RawMessage `json:"elicit,omitempty"`
}

// The protocol eras a scripted server can be restricted to (Options.Protocols).
var (
	// Modern is the stateless 2026-07-28 revision: server/discover, subscriptions/listen, ttlMs.
	Modern = []string{"2026-07-28"}
	// Legacy is every revision of the 2025 era and before: initialize, sessions, pings.
	Legacy = slices.DeleteFunc(sdk.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
)

// Options tune a Scripted server.
type Options struct {
	// PageSize is the number of tools per tools/list page (the sdk's default when 0).
	PageSize int
	// Logger receives the sdk server's log (discarded when nil).
	Logger *slog.Logger
	// Protocols restricts the protocol revisions the server speaks (Modern, Legacy); nil means
	// go-sdk's default, which is the 2025 era. Over HTTP a server that speaks 2026-07-28 is
	// served stateless, as that revision requires.
	Protocols []string
	// ToolsTTL is the ttlMs cache hint on every tools/list answer (none when 0).
	ToolsTTL time.Duration
	// Quiet leaves listChanged out of the tools capability, so clients learn of a change only by
	// listing again.
	Quiet bool
	// ElicitOnList, if set, is an elicitation request (ElicitParams as JSON) the server sends the
	// client while it answers tools/list, as a 2025-era server may at any time; ListAnswers
	// returns the client's answers. A 2026-07-28 server cannot: it sends no requests.
	ElicitOnList json.RawMessage
}

// Scripted is an MCP server whose tools tests change at run time. It is safe for concurrent
// use.
type Scripted struct {
	// Server is the underlying go-sdk server.
	Server *sdk.Server
	// OnCall, if set before the first call, is called with every tool call's name and raw
	// arguments.
	OnCall func(name string, args json.RawMessage)

	closed    chan struct{}
	closeOnce sync.Once
	stateless bool // served stateless over HTTP: it speaks 2026-07-28

	mu       sync.Mutex
	specs    map[string]ToolSpec
	calls    map[string]int
	failList atomic.Bool
	requests atomic.Int64
	answers  []string // the client's answers to ElicitOnList
	// handling holds, per session ID, what ends each request the session has in progress: a
	// session's DELETE ends them (giveUp).
	handling map[string]map[*context.CancelFunc]struct{}
}

// NewScripted returns a scripted server offering tools.
func NewScripted(tools ...ToolSpec) *Scripted { return New(Options{}, tools...) }

// New returns a scripted server with options, offering tools.
func New(opts Options, tools ...ToolSpec) *Scripted {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Scripted{specs: map[string]ToolSpec{}, calls: map[string]int{}, closed: make(chan struct{}), handling: map[string]map[*context.CancelFunc]struct{}{},
		stateless: stateless(opts.Protocols)}
	var cacheable func(context.Context, sdk.Request, *sdk.Cacheable)
	if opts.ToolsTTL > 0 {
		cacheable = func(_ context.Context, req sdk.Request, c *sdk.Cacheable) {
			if _, ok := req.GetParams().(*sdk.ListToolsParams); ok {
				c.TTLMs = int(opts.ToolsTTL.Milliseconds())
			}
		}
	}
	s.Server = sdk.NewServer(&sdk.Implementation{Name: "scripted", Version: "test"}, &sdk.ServerOptions{
		PageSize: opts.PageSize,
		Logger:   logger,
		// Advertise tools even while there are none, so an emptied list is still a list.
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: !opts.Quiet}},
		SupportedProtocolVersions: opts.Protocols,
		SetCacheable:              cacheable,
	})
	s.Server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			ctx, done := s.handle(ctx, req)
			defer done()
			if method == "tools/list" && s.failList.Load() {
				return nil, errors.New("scripted tools/list failure")
			}
			if method == "tools/list" && len(opts.ElicitOnList) > 0 {
				s.askOnList(ctx, req, opts.ElicitOnList)
			}
			return next(ctx, method, req)
		}
	})
	s.Add(tools...)
	return s
}

// Add adds tools, replacing any of the same name (a redefinition). Connected clients are sent
// list_changed.
func (s *Scripted) Add(tools ...ToolSpec) {
	for _, spec := range tools {
		schema := spec.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		t := &sdk.Tool{
			Name:        spec.Name,
			Description: spec.Description,
			InputSchema: schema,
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: spec.ReadOnly},
		}
		s.mu.Lock()
		s.specs[spec.Name] = spec
		s.mu.Unlock()
		s.Server.AddTool(t, s.handler(spec.Name))
	}
}

// Redefine replaces the definition of a tool; it is Add, named for what the test means.
func (s *Scripted) Redefine(spec ToolSpec) { s.Add(spec) }

// Remove removes the named tools. Connected clients are sent list_changed.
func (s *Scripted) Remove(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		delete(s.specs, n)
	}
	s.mu.Unlock()
	s.Server.RemoveTools(names...)
}

// Replace makes tools the whole list: it removes the others and adds or redefines these.
func (s *Scripted) Replace(tools ...ToolSpec) {
	keep := map[string]bool{}
	for _, t := range tools {
		keep[t.Name] = true
	}
	var gone []string
	for _, n := range s.Tools() {
		if !keep[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.Remove(gone...)
	}
	s.Add(tools...)
}

// Tools returns the names of the tools offered now, sorted.
func (s *Scripted) Tools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.specs))
	for n := range s.specs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Calls returns how many times the named tool was called.
func (s *Scripted) Calls(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// Close ends the delayed calls still running, so an HTTP test server can shut down at once.
func (s *Scripted) Close() { s.closeOnce.Do(func() { close(s.closed) }) }

// FailList makes every tools/list fail with a JSON-RPC error while on is true.
func (s *Scripted) FailList(on bool) { s.failList.Store(on) }

// Requests returns how many HTTP requests the handlers received: zero proves a client never
// dialled.
func (s *Scripted) Requests() int64 { return s.requests.Load() }

// Sessions returns the number of connected client sessions.
func (s *Scripted) Sessions() int {
	n := 0
	for range s.Server.Sessions() {
		n++
	}
	return n
}

// HTTPHandler serves the server over streamable HTTP. Each call returns a new handler that
// keeps its own sessions: make one per test server, not one per request.
func (s *Scripted) HTTPHandler() http.Handler {
	return s.count(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.Server },
		&sdk.StreamableHTTPOptions{Stateless: s.stateless}))
}

// SSEHandler serves the server over the older HTTP+SSE transport; like HTTPHandler, one per
// test server.
func (s *Scripted) SSEHandler() http.Handler {
	return s.count(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s.Server }, nil))
}

// RunStdio serves one client on stdin and stdout until it disconnects or ctx is done.
func (s *Scripted) RunStdio(ctx context.Context) error {
	return s.Server.Run(ctx, &sdk.StdioTransport{})
}

func (s *Scripted) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Method == http.MethodDelete {
			s.giveUp(r.Header.Get("Mcp-Session-Id"))
		}
		h.ServeHTTP(w, r)
	})
}

// handle registers a request of a session in progress, until done is called; the context
// returned ends when the session's DELETE arrives.
func (s *Scripted) handle(ctx context.Context, req sdk.Request) (context.Context, func()) {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok || ss.ID() == "" {
		return ctx, func() {}
	}
	id := ss.ID()
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if s.handling[id] == nil {
		s.handling[id] = map[*context.CancelFunc]struct{}{}
	}
	s.handling[id][&cancel] = struct{}{}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.handling[id], &cancel)
		if len(s.handling[id]) == 0 {
			delete(s.handling, id)
		}
		s.mu.Unlock()
		cancel()
	}
}

// giveUp ends the requests the session has in progress, as its DELETE arrives. A server must:
// go-sdk's ServerSession.Close waits for them, and a call whose question the client left
// unanswered would wait for ever (an elicitation's wait ends only with its context).
func (s *Scripted) giveUp(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for cancel := range s.handling[session] {
		(*cancel)()
	}
}

func (s *Scripted) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.mu.Lock()
		spec, ok := s.specs[name]
		s.calls[name]++
		onCall := s.OnCall
		s.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("tool %q was removed", name)
		}
		args := req.Params.Arguments
		if len(spec.Elicit) > 0 {
			return elicit(spec.Elicit, req.Params.InputResponses)
		}
		if onCall != nil {
			onCall(name, args)
		}
		if spec.DelayMS > 0 {
			t := time.NewTimer(time.Duration(spec.DelayMS) * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-s.closed:
				t.Stop()
				return nil, errors.New("scripted server closed")
			case <-t.C:
			}
		}
		if len(spec.Content) > 0 || len(spec.Structured) > 0 {
			return scriptedResult(spec)
		}
		var text string
		switch {
		case spec.Env != "":
			text = os.Getenv(spec.Env)
		case spec.Echo:
			text = string(args)
			if text == "" {
				text = "{}"
			}
		default:
			text = spec.Text
		}
		return &sdk.CallToolResult{
			Content: []sdk.Content{&sdk.TextContent{Text: text}},
			IsError: spec.IsError,
		}, nil
	}
}

// scriptedResult is the result of a tool whose spec gives its content as MCP JSON.
func scriptedResult(spec ToolSpec) (*sdk.CallToolResult, error) {
	wire := map[string]json.RawMessage{"content": json.RawMessage("[]")}
	if len(spec.Content) > 0 {
		wire["content"] = spec.Content
	}
	if len(spec.Structured) > 0 {
		wire["structuredContent"] = spec.Structured
	}
	raw, err := json.Marshal(wire)
	if err != nil {
		return nil, err
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the tool's scripted content: %w", err)
	}
	res.IsError = spec.IsError
	return &res, nil
}

// askOnList sends the client an elicitation request while a tools/list waits, and records its
// answer (or the error) for ListAnswers.
func (s *Scripted) askOnList(ctx context.Context, req sdk.Request, params json.RawMessage) {
	var p sdk.ElicitParams
	answer := ""
	if err := json.Unmarshal(params, &p); err != nil {
		answer = "bad ElicitOnList: " + err.Error()
	} else if ss, ok := req.GetSession().(*sdk.ServerSession); !ok {
		answer = "no session to ask"
	} else if res, err := ss.Elicit(ctx, &p); err != nil {
		answer = "error: " + err.Error()
	} else {
		answer = res.Action
	}
	s.mu.Lock()
	s.answers = append(s.answers, answer)
	s.mu.Unlock()
}

// ListAnswers returns the client's answers to ElicitOnList, one per tools/list: an action, or
// the error.
func (s *Scripted) ListAnswers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// elicitID names the one input request an eliciting tool makes.
const elicitID = "ask"

// elicit asks the client for input (an input_required result) unless responses carry its
// reply, which then becomes the tool's answer.
func elicit(params json.RawMessage, responses sdk.InputResponseMap) (*sdk.CallToolResult, error) {
	if reply, ok := responses[elicitID].(*sdk.ElicitResult); ok {
		text, err := json.Marshal(struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content,omitempty"`
		}{reply.Action, reply.Content})
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}}, nil
	}
	var p sdk.ElicitParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("the tool's elicitation request: %w", err)
	}
	return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{elicitID: &p}}, nil
}

// LoadTools reads a JSON array of ToolSpec from path, scripted-mcp's tools file.
func LoadTools(path string) ([]ToolSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var specs []ToolSpec
	if err := json.Unmarshal(data, &specs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}

// WriteTools writes specs to path as scripted-mcp's tools file, atomically, so a SIGHUP never
// reads half a file.
func WriteTools(path string, specs ...ToolSpec) error {
	data, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
