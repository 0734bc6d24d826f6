package config

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, doc string) Config {
	t.Helper()
	cfg, err := ParseEnv([]byte(doc), func(string) string { return "" })
	if err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return cfg
}

func TestDiff(t *testing.T) {
	running := mustParse(t, `{
		"listen": "127.0.0.1:8080", "refresh_interval": "5m",
		"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}, {"name": "date", "argv": ["/bin/date"]},
		          {"name": "df", "argv": ["/bin/df"]}],
		"mcpServers": {
			"same":    {"command": "/bin/a", "args": ["x"], "env": {"A": "1"}},
			"allow":   {"type": "http", "url": "http://127.0.0.1:1/mcp", "allow_tools": ["a"]},
			"argv":    {"command": "/bin/b", "args": ["old"]},
			"moved":   {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "1"}},
			"gone":    {"command": "/bin/c"}
		}}`)
	next := mustParse(t, `{
		"listen": "127.0.0.1:9090", "refresh_interval": "1m", "voice": {"wake_words": ["hey"]},
		"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}, {"name": "date", "argv": ["/bin/date", "-u"]},
		          {"name": "free", "argv": ["/usr/bin/free"]}],
		"mcpServers": {
			"same":    {"command": "/bin/a", "args": ["x"], "env": {"A": "1"}},
			"allow":   {"type": "http", "url": "http://127.0.0.1:1/mcp", "allow_tools": ["a", "b"]},
			"argv":    {"command": "/bin/b", "args": ["new"], "env": {"B": "2"}},
			"moved":   {"type": "sse", "url": "http://127.0.0.1:2/sse", "headers": {"X": "2"}, "disabled": true},
			"new":     {"type": "http", "url": "http://127.0.0.1:3/mcp"}
		}}`)
	got := Diff(running, next)
	want := Changes{
		Servers: ServerChanges{
			Added: []string{"new"},
			Changed: []ServerChange{
				{Name: "allow", Keys: []string{"allow_tools"}},
				{Name: "argv", Keys: []string{"args", "env"}},
				{Name: "moved", Keys: []string{"type", "url", "headers", "disabled"}},
			},
			Removed: []string{"gone"},
		},
		Tools:        ToolChanges{Added: []string{"free"}, Changed: []string{"date"}, Removed: []string{"df"}},
		NeedsRestart: []string{"listen", "origins", "refresh_interval", "voice"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	if got.None() {
		t.Error("None with changes")
	}

	same := Diff(running, running)
	if !same.None() || same.Servers.Added == nil || same.Tools.Removed == nil || same.NeedsRestart == nil {
		t.Errorf("a config against itself: %+v (lists must be empty, not nil, for JSON)", same)
	}
}

func TestChangedKeysTreatsNilAndEmptyAlike(t *testing.T) {
	a := Server{Name: "a", Type: TransportStdio, Command: "/bin/a"}
	b := Server{Name: "b", Type: TransportStdio, Command: "/bin/a", Args: []string{}, Env: map[string]string{}, AllowTools: []string{}}
	if keys := a.ChangedKeys(b); len(keys) != 0 {
		t.Errorf("nil against empty, or another name: %v", keys)
	}
	if keys := a.ChangedKeys(Server{Type: TransportStdio, Command: "/bin/a", Cwd: "/tmp"}); !slices.Equal(keys, []string{"cwd"}) {
		t.Errorf("cwd: %v", keys)
	}
}

// A bare url that gains an explicit "type": "http" changes its type: it no longer falls back
// to SSE.
func TestChangedKeysSeesAnExplicitType(t *testing.T) {
	bare := mustParse(t, `{"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp"}}}`).MCPServers["s"]
	typed := mustParse(t, `{"mcpServers": {"s": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}`).MCPServers["s"]
	if keys := bare.ChangedKeys(typed); !slices.Equal(keys, []string{"type"}) {
		t.Errorf("bare url against type http: %v, want [type]", keys)
	}
}

func TestKeepRestartKeys(t *testing.T) {
	running := mustParse(t, `{"listen": "127.0.0.1:8080", "step_up_window": "5m", "metrics": false,
		"mcpServers": {"a": {"command": "/bin/a"}}}`)
	next := mustParse(t, `{"listen": "127.0.0.1:9090", "step_up_window": "1m", "metrics": true,
		"trusted_proxies": ["10.0.0.1"], "voice": {"burst": 3},
		"tools": [{"name": "t", "argv": ["/bin/t"]}], "mcpServers": {"b": {"command": "/bin/b"}}}`)
	applied := next.KeepRestartKeys(running)
	if d := Diff(running, applied); len(d.NeedsRestart) != 0 {
		t.Errorf("keys that need a restart still differ: %v", d.NeedsRestart)
	}
	if _, ok := applied.MCPServers["b"]; !ok || len(applied.Tools) != 1 {
		t.Errorf("servers and tools are not the new ones: %+v", applied)
	}
	// Origins derived from the kept listen address follow it, as at start.
	if err := applied.SetListen("127.0.0.1:7070"); err != nil || !slices.Equal(applied.Origins, []string{"http://localhost:7070"}) {
		t.Errorf("origins after SetListen: %v %v", applied.Origins, err)
	}
	var keys []string
	for _, k := range restartKeys {
		keys = append(keys, k.key)
	}
	if !slices.Contains(keys, "tls_cert") || !slices.Contains(keys, "step_up_window") {
		t.Errorf("restartKeys: %v", keys)
	}
}

func TestProblemsOf(t *testing.T) {
	_, err := ParseEnv([]byte(`{"refresh_intervl": "1m", "listen": "nowhere", "mcpServers": {"a": {"commnd": "x"}}}`),
		func(string) string { return "" })
	got := ProblemsOf(err)
	if len(got) < 3 {
		t.Fatalf("every error: %+v", got)
	}
	keys := map[string]string{}
	for _, p := range got {
		if p.Level != LevelError {
			t.Errorf("level: %+v", p)
		}
		keys[p.Key] = p.Msg
	}
	if msg := keys["refresh_intervl"]; msg == "" || msg[:11] != "unknown key" {
		t.Errorf("the unknown key, without its key quoted again: %q (%+v)", msg, got)
	}
	if keys["listen"] == "" || keys["mcpServers.a.commnd"] == "" {
		t.Errorf("errors: %+v", got)
	}
	if p := ProblemsOf(errors.New("disk on fire")); len(p) != 1 || p[0].Msg != "disk on fire" || p[0].Key != "" {
		t.Errorf("a plain error: %+v", p)
	}
}

func TestProblemsRefusal(t *testing.T) {
	var p Problems
	p.Set([]Problem{{Key: "a", Msg: "w", Level: LevelWarning}})
	if _, ok := p.Refused(); ok {
		t.Fatal("refused before any reload")
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	p.Refuse(Refusal{At: at, File: "/etc/maven.json", Errors: []Problem{{Key: "listen", Msg: "bad", Level: LevelError}}})
	r, ok := p.Refused()
	if !ok || !r.At.Equal(at) || len(r.Errors) != 1 || len(p.List()) != 1 {
		t.Fatalf("after a refusal: %+v %v, list %+v", r, ok, p.List())
	}
	p.Set(nil)
	if _, ok := p.Refused(); ok || len(p.List()) != 0 {
		t.Error("an applied config does not end the refusal")
	}
}

// TestEveryTopKeyIsReloadedOrNeedsARestart: a top-level key is either applied by a reload (the
// tools and the MCP servers) or one of the restart keys docs/design.md#config lists, so a new
// key cannot look applied while the running services keep the old value.
func TestEveryTopKeyIsReloadedOrNeedsARestart(t *testing.T) {
	documented := []string{"listen", "rp_id", "origins", "tls_cert", "tls_key", "trusted_proxies", "metrics",
		"refresh_interval", "step_up_window", "voice", "notify", "agents"}
	var restart []string
	for _, k := range restartKeys {
		restart = append(restart, k.key)
	}
	if !slices.Equal(restart, documented) {
		t.Errorf("restart keys %v, docs/design.md#config lists %v", restart, documented)
	}
	for _, key := range topKeys {
		if !slices.Contains(restart, key) && key != "tools" && key != "mcpServers" {
			t.Errorf("top-level key %q is neither applied by a reload nor reported as needing a restart", key)
		}
	}
}
