package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// eraServer is a scripted server restricted to one protocol era, over one transport, that a
// test can redefine and kill.
type eraServer struct {
	cfg      config.Server
	redefine func(t *testing.T, specs ...mcptest.ToolSpec) // replaces the whole list
	kill     func(t *testing.T)
}

// newEraServer starts a scripted server offering specs over transport ("http" or "stdio"),
// speaking only protocols, with opts' hints.
func newEraServer(t *testing.T, transport config.Transport, opts mcptest.Options, specs ...mcptest.ToolSpec) eraServer {
	t.Helper()
	if transport == config.TransportStdio {
		srv := newStdioServer(t, specs...)
		cfg := srv.config()
		switch {
		case len(opts.Protocols) == 1 && opts.Protocols[0] == mcptest.Modern[0]:
			cfg.Args = append([]string{"-era", "modern"}, cfg.Args...)
		case opts.Protocols != nil:
			cfg.Args = append([]string{"-era", "legacy"}, cfg.Args...)
		}
		if opts.ToolsTTL > 0 {
			cfg.Args = append([]string{"-ttl", opts.ToolsTTL.String()}, cfg.Args...)
		}
		if opts.Quiet {
			cfg.Args = append([]string{"-quiet"}, cfg.Args...)
		}
		pid := func(t *testing.T) int {
			waitFor(t, 5*time.Second, "the pid file", func() bool { return srv.currentPid() > 0 })
			return srv.currentPid()
		}
		return eraServer{
			cfg: cfg,
			redefine: func(t *testing.T, specs ...mcptest.ToolSpec) {
				if err := mcptest.WriteTools(srv.tools, specs...); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(pid(t), syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
			},
			kill: func(t *testing.T) {
				if err := syscall.Kill(pid(t), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			},
		}
	}
	scripted := mcptest.New(opts, specs...)
	t.Cleanup(scripted.Close)
	srv := newRestartable(t, scripted.HTTPHandler())
	return eraServer{
		cfg:      config.Server{Type: config.TransportHTTP, URL: srv.url("/mcp")},
		redefine: func(_ *testing.T, specs ...mcptest.ToolSpec) { scripted.Replace(specs...) },
		kill:     func(*testing.T) { srv.stop() },
	}
}

// description returns the description of the named tool in the last reconcile of server, and
// whether it was listed.
func description(rec *fakeReconciler, server, tool string) (string, bool) {
	for _, t := range rec.last(server) {
		if t.Name == tool {
			return t.Description, true
		}
	}
	return "", false
}

// A server that speaks only MCP 2026-07-28 is reached over HTTP and stdio, its tools are listed
// and called, and a redefinition reaches the reconcile through its subscriptions/listen stream:
// with an hour between periodic refreshes nothing else could bring it. (How fast is measured
// by scripts/bench, MAVEN_BENCH_ONLY=listen.)
func TestModernServer(t *testing.T) {
	for _, transport := range []config.Transport{config.TransportHTTP, config.TransportStdio} {
		t.Run(string(transport), func(t *testing.T) {
			srv := newEraServer(t, transport, mcptest.Options{Protocols: mcptest.Modern}, echoTool, fixedTool)
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{"modern": srv.cfg}, rec, fastOptions())
			waitNames(t, rec, "modern", "echo", "list_tasks")
			if st := status(m, "modern"); st.State != StateConnected || st.Tools != 2 || st.Transport != string(transport) {
				t.Errorf("status = %+v", st)
			}
			res, err := m.CallTool(context.Background(), "modern", "echo", map[string]any{"message": "stateless"})
			if err != nil || res.IsError || res.Output != `{"message":"stateless"}` {
				t.Errorf("CallTool = %+v, %v", res, err)
			}

			redefined := fixedTool
			redefined.Description = "Now it writes."
			redefined.ReadOnly = false
			srv.redefine(t, echoTool, redefined)
			waitFor(t, 5*time.Second, "the redefinition through subscriptions/listen", func() bool {
				d, _ := description(rec, "modern", "list_tasks")
				return d == "Now it writes."
			})
			srv.redefine(t, echoTool)
			waitNames(t, rec, "modern", "echo")
		})
	}
}

// A server's ttlMs hint of an hour never hides a redefinition longer than the refresh
// interval: the server announces nothing (no listen stream), so only the periodic refresh can
// bring the change, and it must list again rather than answer from go-sdk's cache.
func TestModernTTLNeverHidesARedefinition(t *testing.T) {
	for _, transport := range []config.Transport{config.TransportHTTP, config.TransportStdio} {
		t.Run(string(transport), func(t *testing.T) {
			srv := newEraServer(t, transport, mcptest.Options{Protocols: mcptest.Modern, ToolsTTL: time.Hour, Quiet: true}, fixedTool)
			rec := newFakeReconciler()
			opts := fastOptions()
			opts.RefreshInterval = 300 * time.Millisecond
			startManager(t, map[string]config.Server{"cached": srv.cfg}, rec, opts)
			waitNames(t, rec, "cached", "list_tasks")
			// Past one periodic refresh, so the tool list went through go-sdk's cache at least once.
			n := rec.count("cached")
			waitFor(t, 5*time.Second, "a periodic refresh", func() bool { return rec.count("cached") > n })

			redefined := fixedTool
			redefined.Description = "Redefined in silence."
			srv.redefine(t, redefined)
			waitFor(t, 5*time.Second, "the redefinition at the next periodic refresh", func() bool {
				d, _ := description(rec, "cached", "list_tasks")
				return d == "Redefined in silence."
			})
		})
	}
}

// A 2026-07-28 server that dies is noticed: the state leaves connected, over HTTP whether or not
// the server has a listen stream open (its end, or the probe, tell), and over stdio (the process
// exit ends the connection).
func TestModernServerThatDiesIsNoticed(t *testing.T) {
	for _, c := range []struct {
		name      string
		transport config.Transport
		quiet     bool
	}{
		{"http listen stream", config.TransportHTTP, false},
		{"http probe", config.TransportHTTP, true},
		{"stdio", config.TransportStdio, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newEraServer(t, c.transport, mcptest.Options{Protocols: mcptest.Modern, Quiet: c.quiet}, echoTool)
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{"mortal": srv.cfg}, rec, fastOptions())
			waitNames(t, rec, "mortal", "echo")
			waitState(t, m, "mortal", StateConnected, 5*time.Second)
			srv.kill(t)
			waitFor(t, 10*time.Second, "the state to leave connected", func() bool {
				return status(m, "mortal").State != StateConnected
			})
			if st := status(m, "mortal"); st.LastError == "" {
				t.Errorf("status after the server died = %+v, want a reason", st)
			}
		})
	}
}

// A 2026-07-28 server that stops answering, without closing anything, is noticed by the probe.
func TestModernServerThatHangsIsNoticed(t *testing.T) {
	scripted := mcptest.New(mcptest.Options{Protocols: mcptest.Modern, Quiet: true}, echoTool)
	var hang atomic.Bool
	stuck := make(chan struct{})
	h := scripted.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-stuck:
			case <-r.Context().Done():
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stuck) }) // before srv.Close, which waits for the stuck handlers
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"hung": {Type: config.TransportHTTP, URL: srv.URL}}, rec, fastOptions())
	waitNames(t, rec, "hung", "echo")
	hang.Store(true)
	waitFor(t, 10*time.Second, "the state to leave connected", func() bool { return status(m, "hung").State != StateConnected })
	if st := status(m, "hung"); !strings.Contains(st.LastError, "probe") {
		t.Errorf("status = %+v, want the probe named as the reason", st)
	}
}

// A server restricted to the 2025 era is reached over every transport (the older suites run
// against go-sdk's default, which is that era too).
func TestLegacyOnlyServer(t *testing.T) {
	for _, transport := range []config.Transport{config.TransportHTTP, config.TransportSSE, config.TransportStdio} {
		t.Run(string(transport), func(t *testing.T) {
			var cfg config.Server
			var redefine func()
			if transport == config.TransportStdio {
				srv := newEraServer(t, transport, mcptest.Options{Protocols: mcptest.Legacy}, echoTool)
				cfg = srv.cfg
				redefine = func() { srv.redefine(t, echoTool, fixedTool) }
			} else {
				scripted := mcptest.New(mcptest.Options{Protocols: mcptest.Legacy}, echoTool)
				h, path := scripted.HTTPHandler(), "/mcp"
				if transport == config.TransportSSE {
					h, path = scripted.SSEHandler(), "/sse"
				}
				srv := newRestartable(t, h)
				cfg = config.Server{Type: transport, URL: srv.url(path)}
				redefine = func() { scripted.Add(fixedTool) }
			}
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{"legacy": cfg}, rec, fastOptions())
			waitNames(t, rec, "legacy", "echo")
			redefine()
			waitNames(t, rec, "legacy", "echo", "list_tasks")
			if res, err := m.CallTool(context.Background(), "legacy", "echo", nil); err != nil || res.IsError {
				t.Errorf("CallTool = %+v, %v", res, err)
			}
		})
	}
}
