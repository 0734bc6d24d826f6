package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestCallsKeepTheirConnection checks that tool calls over streamable HTTP reuse the connection
// of the call before: a call's request must not be cancelled while go-sdk still reads the end of
// its event stream, or net/http closes the connection and the next call dials again. The
// server ends each answer's stream a little after its last event, as a busy one does.
func TestCallsKeepTheirConnection(t *testing.T) {
	remote := mcptest.NewScripted(mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`), ReadOnly: true, Echo: true})
	scripted := remote.HTTPHandler()
	var calls atomic.Int64 // tools/call answers whose stream has ended
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		scripted.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			time.Sleep(20 * time.Millisecond) // the stream's end comes after its last event
			calls.Add(1)
		}
	}))
	counted := &countingListener{Listener: srv.Listener}
	srv.Listener = counted
	srv.Start()
	defer srv.Close()

	m := NewManager(map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: srv.URL}}, newFakeReconciler(), fastOptions(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Run(ctx)
	defer m.Close()
	waitFor(t, 30*time.Second, "tasks to connect", func() bool { return status(m, "tasks").State == StateConnected })
	// A call first, so that the session's own connections (its listing, its event stream) are
	// open before the count starts.
	if _, err := m.CallTool(ctx, "tasks", "search_tasks", map[string]any{"query": "milk"}); err != nil {
		t.Fatal(err)
	}
	// Each call once the stream of the one before has ended, so that its connection is free.
	waitFor(t, 30*time.Second, "the first call's stream to end", func() bool { return calls.Load() == 1 })
	before := counted.accepted.Load()
	const n = 10
	for i := range n {
		if _, err := m.CallTool(ctx, "tasks", "search_tasks", map[string]any{"query": "milk"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the call's stream to end", func() bool { return calls.Load() == int64(i+2) })
	}
	if dialled := counted.accepted.Load() - before; dialled > 1 {
		t.Fatalf("%d calls opened %d new connections; want them to reuse the one before's", n, dialled)
	}
}
