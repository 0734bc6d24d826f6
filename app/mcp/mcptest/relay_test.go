package mcptest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/mcp/mcptest"
)

// A relay offers the upstream's tools as the upstream lists them and answers each call with the
// upstream's answer to the same call, sending the token it was given.
func TestARelayOffersAndCallsTheUpstreamsTools(t *testing.T) {
	ctx := context.Background()
	schema := `{"type":"object","properties":{"query":{"type":"string","description":"what to find"}},"required":["query"]}`
	upstream := mcptest.New(mcptest.Options{Protocols: mcptest.Modern},
		mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks", InputSchema: json.RawMessage(schema), ReadOnly: true, Echo: true},
		mcptest.ToolSpec{Name: "list_shelves", Description: "Lists shelves", Text: "three shelves"})
	var authorized atomic.Int32
	scripted := upstream.HTTPHandler()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer secret" {
			authorized.Add(1)
		}
		scripted.ServeHTTP(w, r)
	}))
	defer up.Close()

	relay, err := mcptest.NewRelay(ctx, up.URL, "secret", mcptest.Modern)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	front := httptest.NewServer(relay.HTTPHandler())
	defer front.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: front.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 2 {
		t.Fatalf("the relay lists %d tools, want the upstream's 2", len(list.Tools))
	}
	search := list.Tools[0]
	if search.Name != "search_tasks" {
		search = list.Tools[1]
	}
	got, _ := json.Marshal(search.InputSchema)
	var want, have any
	_ = json.Unmarshal([]byte(schema), &want)
	_ = json.Unmarshal(got, &have)
	if search.Name != "search_tasks" || search.Description != "Searches tasks" || !jsonEqual(want, have) ||
		search.Annotations == nil || !search.Annotations.ReadOnlyHint {
		t.Fatalf("the relay lists search_tasks as %+v (schema %s), not as the upstream does", search, got)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; text != `{"query":"milk"}` {
		t.Fatalf("the relay's call answered %q, want the upstream's echo of the arguments", text)
	}
	if authorized.Load() == 0 {
		t.Fatal("the relay never sent its token upstream")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
