package mcp

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// methodCounter counts the requests a handler gets, by HTTP method.
type methodCounter struct {
	h          http.Handler
	gets, post atomic.Int64
}

func (c *methodCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		c.gets.Add(1)
	case http.MethodPost:
		c.post.Add(1)
	}
	c.h.ServeHTTP(w, r)
}

// A url configured without a type is tried as streamable HTTP first and, when the server
// refuses the POST with a 4xx, as the older SSE transport (the MCP spec's backwards
// compatibility); the servers card shows the transport that worked.
func TestBareURLFallsBackToSSE(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler func(*mcptest.Scripted) http.Handler
		path    string
		opts    mcptest.Options
		want    config.Transport
	}{
		{"sse server", (*mcptest.Scripted).SSEHandler, "/sse", mcptest.Options{}, config.TransportSSE},
		{"2025 streamable server", (*mcptest.Scripted).HTTPHandler, "/mcp", mcptest.Options{Protocols: mcptest.Legacy}, config.TransportHTTP},
		{"2026 streamable server", (*mcptest.Scripted).HTTPHandler, "/mcp", mcptest.Options{Protocols: mcptest.Modern}, config.TransportHTTP},
	} {
		t.Run(c.name, func(t *testing.T) {
			scripted := mcptest.New(c.opts, echoTool)
			srv := newRestartable(t, c.handler(scripted))
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{
				"bare": {Type: config.TransportHTTP, TypeGuessed: true, URL: srv.url(c.path)},
			}, rec, fastOptions())
			waitNames(t, rec, "bare", "echo")
			if st := status(m, "bare"); st.State != StateConnected || st.Transport != string(c.want) {
				t.Errorf("status = %+v, want connected over %s", st, c.want)
			}
			scripted.Add(fixedTool)
			waitNames(t, rec, "bare", "echo", "list_tasks")
		})
	}
}

// An explicit type is obeyed exactly: "http" at an SSE endpoint never falls back to SSE, and a
// bare url whose server answers 401 or 403 is not taken for an SSE server either (they say
// who may call, not how).
func TestNoFallbackToSSE(t *testing.T) {
	for _, c := range []struct {
		name    string
		guessed bool
		status  int // what the server answers every POST with; 0: the SSE handler answers
	}{
		{"explicit http", false, 0},
		{"bare url, 401", true, http.StatusUnauthorized},
		{"bare url, 403", true, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			scripted := mcptest.NewScripted(echoTool)
			h := scripted.SSEHandler()
			if c.status != 0 {
				sse := h
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						http.Error(w, "sign in first", c.status)
						return
					}
					sse.ServeHTTP(w, r)
				})
			}
			counter := &methodCounter{h: h}
			srv := newRestartable(t, counter)
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{
				"strict": {Type: config.TransportHTTP, TypeGuessed: c.guessed, URL: srv.url("/sse")},
			}, rec, fastOptions())
			waitFor(t, 10*time.Second, "a failed dial", func() bool { return strings.Contains(status(m, "strict").LastError, "dial") })
			if n := counter.post.Load(); n == 0 {
				t.Error("no POST was tried")
			}
			if n := counter.gets.Load(); n != 0 {
				t.Errorf("the SSE stream was opened %d times; the transport must not fall back", n)
			}
			if n := rec.count("strict"); n != 0 {
				t.Errorf("reconciled %d times", n)
			}
		})
	}
}
