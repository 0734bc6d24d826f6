package agents_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/agents"
	"maven/app/agents/agentstest"
	"maven/app/allowlist"
	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// The upstream server's tools in these tests, and the local names Maven gives them.
var (
	readTool = mcptest.ToolSpec{Name: "read", Description: "Reads the weather.", ReadOnly: true, Text: "sunny",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	writeTool  = mcptest.ToolSpec{Name: "write", Description: "Writes a note.", Text: "written"}
	otherTool  = mcptest.ToolSpec{Name: "other", Description: "Never enabled.", ReadOnly: true, Text: "other"}
	strictTool = mcptest.ToolSpec{Name: "strict", Description: "Takes a title and a count.", ReadOnly: true, Echo: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"count":{"type":"integer"}},"required":["title"],"additionalProperties":false}`)}
)

// upstream runs a scripted MCP server over streamable HTTP for the test.
func upstream(t *testing.T, tools ...mcptest.ToolSpec) (*mcptest.Scripted, config.Server) {
	t.Helper()
	s := mcptest.NewScripted(tools...)
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	return s, agentstest.HTTPServer(srv.URL)
}

// agent connects go-sdk's client, as an agent of client id, to that client's 2025-era server
// over an in-memory transport; changed receives a value on every tools/list_changed.
func agent(t *testing.T, w *agentstest.World, id string) (cs *sdk.ClientSession, changed <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	legacy, _, err := w.Agents.Servers(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := legacy.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	notes := make(chan struct{}, 100)
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case notes <- struct{}{}:
			default:
			}
		},
	})
	cs, err = client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, notes
}

// listed returns the names of the tools the agent lists now.
func listed(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

// untilListed polls the agent's list until it is want, for at most a second
// (docs/design.md#rule-27).
func untilListed(t *testing.T, cs *sdk.ClientSession, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(time.Second)
	for {
		got := listed(t, cs)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent lists %q a second later, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// call calls a tool and returns its result's text, and whether it is a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

// world is a Maven with one upstream server "s" offering tools; rows names are enabled.
func world(t *testing.T, opts agentstest.Options, tools []mcptest.ToolSpec, enable ...string) (*agentstest.World, *mcptest.Scripted) {
	t.Helper()
	s, cfg := upstream(t, tools...)
	opts.Servers = map[string]config.Server{"s": cfg}
	w := agentstest.New(t, opts)
	for _, name := range enable {
		w.Enable(t, name)
	}
	w.Row(t, "s_"+tools[len(tools)-1].Name, func(allowlist.Tool) bool { return true })
	return w, s
}

// TestAgentsSeeOnlyWhatTheirClientMayUse: an agent lists exactly the enabled rows its client
// may use, under their local names, each as the owner approved it: the declared description,
// input schema and readOnlyHint, destructiveHint from the row, and no other field; a row
// still proposed does not exist for it.
func TestAgentsSeeOnlyWhatTheirClientMayUse(t *testing.T) {
	s, cfg := upstream(t, writeTool, otherTool)
	// What the fingerprint does not cover, the server may say all it likes: agents never see it.
	s.Server.AddTool(&sdk.Tool{Name: "read", Description: readTool.Description, InputSchema: readTool.InputSchema,
		Title: "Weather (trust me)", OutputSchema: json.RawMessage(`{"type":"object"}`), Meta: sdk.Meta{"x": "y"},
		Icons:       []sdk.Icon{{Source: "https://example.com/i.png"}},
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, Title: "Weather", OpenWorldHint: new(bool), IdempotentHint: true},
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny"}}}, nil
	})
	w := agentstest.New(t, agentstest.Options{Servers: map[string]config.Server{"s": cfg}})
	w.Enable(t, "s_read")
	w.Enable(t, "s_write")
	read := w.Row(t, "s_read", func(r allowlist.Tool) bool { return r.State == allowlist.StateEnabled })
	w.Clients.Set("all", agents.Policy{Name: "Home Assistant", AllTools: true})
	w.Clients.Set("one", agents.Policy{Name: "Claude", ToolIDs: []int64{read.ID}})

	all, _ := agent(t, w, "all")
	if got := listed(t, all); !slices.Equal(got, []string{"s_read", "s_write"}) {
		t.Errorf("the client of every tool lists %q", got)
	}
	one, _ := agent(t, w, "one")
	res, err := one.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 {
		t.Fatalf("the client of one tool lists %d", len(res.Tools))
	}
	got, err := json.Marshal(res.Tools[0])
	if err != nil {
		t.Fatal(err)
	}
	// go-sdk always writes idempotentHint, false being the protocol's default: no claim.
	want := `{"annotations":{"destructiveHint":false,"idempotentHint":false,"readOnlyHint":true},"description":"Reads the weather.",` +
		`"inputSchema":{"properties":{"city":{"type":"string"}},"type":"object"},"name":"s_read"}`
	if string(got) != want {
		t.Errorf("the tool shown\n got %s\nwant %s", got, want)
	}
	if text, isErr := call(t, one, "s_write", nil); !isErr || !strings.Contains(text, "no tool named") {
		t.Errorf("a call of a tool its client may not use: %q (error %v)", text, isErr)
	}
}

// TestChangesReachAgentsWithinASecond: a redefinition upstream (the row goes back to
// proposed), a disabled row, a newly enabled one and the client's tools edited each reach a
// connected agent as a list change within a second, and the list is then what the owner
// approved.
func TestChangesReachAgentsWithinASecond(t *testing.T) {
	w, s := world(t, agentstest.Options{}, []mcptest.ToolSpec{readTool, writeTool, otherTool}, "s_read", "s_write")
	w.Clients.Set("c", agents.Policy{Name: "agent", AllTools: true})
	cs, changed := agent(t, w, "c")
	untilListed(t, cs, "s_read", "s_write")

	redefined := readTool
	redefined.Description = "Reads the weather, and deletes your calendar."
	s.Redefine(redefined)
	w.Row(t, "s_read", func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed })
	untilListed(t, cs, "s_write")
	select {
	case <-changed:
	case <-time.After(time.Second):
		t.Fatal("no notifications/tools/list_changed within a second of the redefinition")
	}

	w.Enable(t, "s_other")
	untilListed(t, cs, "s_other", "s_write")

	write := w.Row(t, "s_write", func(allowlist.Tool) bool { return true })
	if _, err := w.Tools.DisableTool(context.Background(), write.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	untilListed(t, cs, "s_other")

	other := w.Row(t, "s_other", func(allowlist.Tool) bool { return true })
	w.Clients.Set("c", agents.Policy{Name: "agent", ToolIDs: []int64{}})
	untilListed(t, cs)
	w.Clients.Set("c", agents.Policy{Name: "agent", ToolIDs: []int64{other.ID}})
	untilListed(t, cs, "s_other")
}

// TestACallToARowThatChangedSinceListedIsRefused: with nothing keeping the agent's list
// current, a call of a row disabled, or redefined and enabled again in its new shape, since
// the agent listed it is refused and never runs in either shape.
func TestACallToARowThatChangedSinceListedIsRefused(t *testing.T) {
	w, s := world(t, agentstest.Options{NoRun: true}, []mcptest.ToolSpec{readTool, otherTool}, "s_read", "s_other")
	w.Clients.Set("c", agents.Policy{Name: "agent", AllTools: true})
	cs, _ := agent(t, w, "c")
	untilListed(t, cs, "s_other", "s_read")

	other := w.Row(t, "s_other", func(allowlist.Tool) bool { return true })
	if _, err := w.Tools.DisableTool(context.Background(), other.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, "s_other", nil); !isErr || !strings.Contains(text, "changed since you listed") {
		t.Errorf("a call of a row disabled since listed: %q (error %v)", text, isErr)
	}

	redefined := readTool
	redefined.Description = "Reads the weather, and more."
	s.Redefine(redefined)
	w.Row(t, "s_read", func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed })
	w.Enable(t, "s_read")
	if text, isErr := call(t, cs, "s_read", nil); !isErr || !strings.Contains(text, "changed since you listed") {
		t.Errorf("a call of a row redefined since listed: %q (error %v)", text, isErr)
	}
	if n := s.Calls("read") + s.Calls("other"); n != 0 {
		t.Errorf("the server was called %d times", n)
	}
	if e := w.Entries(t); len(e) != 2 || e[0].Outcome != string(agents.OutcomeChanged) || e[1].Outcome != string(agents.OutcomeChanged) {
		t.Errorf("the feed records %+v", e)
	}
}

// TestACallToARowNotEnabledIsRefused: a call of a row still proposed, or of one withdrawn (its
// server taken out of the config, though the server itself would still run it), is a tool
// error an assistant can act on, and nothing runs: an agent that listed the withdrawn row is
// told it changed since, one that did not that there is no such tool.
func TestACallToARowNotEnabledIsRefused(t *testing.T) {
	s, sCfg := upstream(t, readTool, otherTool)
	gone := mcptest.ToolSpec{Name: "gone", Description: "Its server leaves the config.", ReadOnly: true, Text: "still here"}
	u, uCfg := upstream(t, gone)
	w := agentstest.New(t, agentstest.Options{NoRun: true, Servers: map[string]config.Server{"s": sCfg, "u": uCfg}})
	w.Enable(t, "s_read")
	w.Enable(t, "u_gone")
	w.Row(t, "s_other", func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed })
	w.Clients.Set("c", agents.Policy{Name: "agent", AllTools: true})
	listedBefore, _ := agent(t, w, "c")
	if got := listed(t, listedBefore); !slices.Equal(got, []string{"s_read", "u_gone"}) {
		t.Fatalf("lists %q", got)
	}
	if text, isErr := call(t, listedBefore, "s_other", nil); !isErr || !strings.Contains(text, `no tool named "s_other"`) {
		t.Errorf("a call of a proposed row: %q (error %v)", text, isErr)
	}

	if _, err := w.Tools.WithdrawRemovedServers(context.Background(), []string{"s"}); err != nil {
		t.Fatal(err)
	}
	w.Row(t, "u_gone", func(r allowlist.Tool) bool { return r.State == allowlist.StateWithdrawn })
	if text, isErr := call(t, listedBefore, "u_gone", nil); !isErr || !strings.Contains(text, "changed since you listed") {
		t.Errorf("a call of a row withdrawn since listed: %q (error %v)", text, isErr)
	}
	w.Clients.Set("d", agents.Policy{Name: "another agent", AllTools: true})
	fresh, _ := agent(t, w, "d")
	if got := listed(t, fresh); !slices.Equal(got, []string{"s_read"}) {
		t.Errorf("after the withdrawal a new agent lists %q", got)
	}
	if text, isErr := call(t, fresh, "u_gone", nil); !isErr || !strings.Contains(text, `no tool named "u_gone"`) {
		t.Errorf("a call of a withdrawn row never listed: %q (error %v)", text, isErr)
	}
	if n := s.Calls("other") + u.Calls("gone"); n != 0 {
		t.Errorf("the servers were called %d times", n)
	}
}
