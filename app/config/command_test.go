package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCommandsThatCanNeverRun: a server's command or a local tool's argv that can never start is
// a warning at read time, saying what to write: a command line in one string, Windows' cmd /c, a
// relative path, a program that is not on PATH or not there. The same check serves `maven
// propose` (CommandProblem).
func TestCommandsThatCanNeverRun(t *testing.T) {
	bin := t.TempDir()
	for name, mode := range map[string]os.FileMode{"srv": 0o755, "notes.txt": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	env := envOf(map[string]string{"PATH": bin})
	tests := []struct {
		name, server, want string // want: the warning at mcpServers.s.command, "" for none
	}{
		{"on PATH", `{"command": "srv", "args": ["-y"]}`, ""},
		{"spaces", `{"command": "npx -y @modelcontextprotocol/server-memory"}`,
			`the command is one program, run without a shell, and "npx -y @modelcontextprotocol/server-memory" is not one: give the program and its arguments apart: "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]`},
		{"spaces and args", `{"command": "srv --stdio", "args": ["x"]}`,
			`the command is one program, run without a shell, and "srv --stdio" is not one: give the program and its arguments apart: "command": "srv", "args": ["--stdio", "x"]`},
		{"cmd /c", `{"command": "cmd", "args": ["/c", "npx", "-y", "server-memory"]}`,
			`cmd /c is Windows' shell, which this machine does not have: run the program it starts: "command": "npx", "args": ["-y", "server-memory"]`},
		{"cmd.exe /C", `{"command": "C:\\Windows\\System32\\cmd.exe", "args": ["/C", "srv"]}`,
			`cmd /c is Windows' shell, which this machine does not have: run the program it starts: "command": "srv", "args": []`},
		{"relative path", `{"command": "./build/server"}`,
			`"./build/server" is relative to the daemon's working directory, which is / under systemd: write its absolute path`},
		{"relative to cwd", `{"command": "srv", "cwd": "` + bin + `"}`, ""},
		{"not on PATH", `{"command": "uvx", "args": ["mcp-server-time"]}`,
			`"uvx" is not on the daemon's PATH (` + bin + `): install it, or write its absolute path`},
		{"no such file", `{"command": "` + filepath.Join(bin, "gone") + `"}`, filepath.Join(bin, "gone") + " does not exist"},
		{"not executable", `{"command": "` + filepath.Join(bin, "notes.txt") + `"}`, filepath.Join(bin, "notes.txt") + " is not executable (chmod +x)"},
		{"disabled", `{"command": "uvx", "disabled": true}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv([]byte(`{"mcpServers": {"s": `+tt.server+`}}`), env)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, w := range cfg.Warnings {
				if w.Key == "mcpServers.s.command" {
					got = w.Msg
				}
			}
			if got != tt.want {
				t.Errorf("warning %q\nwant    %q", got, tt.want)
			}
		})
	}
	cfg, err := ParseEnv([]byte(`{"tools": [{"name": "up", "argv": ["uptime -p"]}, {"name": "ok", "argv": ["srv"]}]}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Key != "tools[0].argv[0]" || !strings.HasSuffix(cfg.Warnings[0].Msg, `: "argv": ["uptime", "-p"]`) {
		t.Errorf("tool warnings: %v", cfg.Warnings)
	}
}

// TestHintsForOtherFormats: Continue's list of servers and its older settings, a YAML file, and
// a server's entry or keys pasted at the top level are refused with what to write instead.
func TestHintsForOtherFormats(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"Continue's list", `{"mcpServers": [{"name": "memory", "command": "npx", "args": ["-y", "server-memory"]}]}`,
			`config: mcpServers: expected an object of servers by name, got a list, as Continue writes it; put each under its name: {"mcpServers": {"memory": {"command": "…", "args": ["…"]}}}`},
		{"Continue's experimental", `{"experimental": {"modelContextProtocolServers": [{"transport": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite"]}}]}}`,
			`config: unknown key "experimental" (Continue's settings: each of its modelContextProtocolServers is a server of mcpServers here, by name, {"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}})`},
		{"YAML", "name: my assistant\nmcpServers:\n  - name: memory\n    command: npx\n",
			`. This looks like YAML; Maven reads JSON (comments allowed): {"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}}`},
		{"a bare server entry", `{"memory": {"command": "npx", "args": ["-y", "server-memory"]}}`,
			`config: unknown key "memory" (it looks like a server: put it under mcpServers, {"mcpServers": {"memory": {…}}})`},
		{"a server's keys", `{"command": "npx", "args": ["-y", "server-memory"]}`,
			`unknown key "command" (it is a server's key: name the server under mcpServers, {"mcpServers": {"NAME": {"command": …}}})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv([]byte(tt.doc), envOf(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v\nwant it to hold %s", err, tt.want)
			}
		})
	}
}

// TestEveryErrorOfAnEntry: an unknown key no longer hides the other errors of its server's
// entry, while a key whose value did not decode still says it alone.
func TestEveryErrorOfAnEntry(t *testing.T) {
	tests := []struct {
		name, server string
		keys         []string
	}{
		{"unknown key and a secret on the command line", `{"command": "srv", "args": ["${secret:tok}"], "bogus": 1}`,
			[]string{"mcpServers.s.bogus", "mcpServers.s.args[0]"}},
		{"unknown key and a bad url", `{"url": "ftp://x.example", "autoapprove": []}`,
			[]string{"mcpServers.s.autoapprove", "mcpServers.s.url"}},
		{"unknown key and a bad type", `{"type": "stdoi", "command": "srv", "bogus": 1}`,
			[]string{"mcpServers.s.bogus", "mcpServers.s.type"}},
		{"unknown key and an unset variable", `{"command": "srv", "env": {"HOME_DIR": "${NOT_SET_HERE}"}, "bogus": 1}`,
			[]string{"mcpServers.s.bogus", "mcpServers.s.env.HOME_DIR"}},
		{"unknown key, nothing else", `{"bogus": 1}`,
			[]string{"mcpServers.s.bogus", "mcpServers.s"}},
		{"a command that is no string", `{"command": ["npx"], "bogus": 1}`,
			[]string{"mcpServers.s.bogus", "mcpServers.s.command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv([]byte(`{"mcpServers": {"s": `+tt.server+`}}`), envOf(nil))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v", err)
			}
			var keys []string
			for _, e := range es {
				keys = append(keys, e.Key)
			}
			slices.Sort(keys)
			want := slices.Sorted(slices.Values(tt.keys))
			if !slices.Equal(keys, want) {
				t.Errorf("errors at %q, want at %q:\n%v", keys, want, err)
			}
		})
	}
}

// TestLiteralTokenInAHeaderIsNudged: a credential written out in a header gets the nudge a
// credential in env gets, keeping its scheme; a sealed secret or a variable from the daemon's
// environment does not.
func TestLiteralTokenInAHeaderIsNudged(t *testing.T) {
	cfg, err := ParseEnv([]byte(`{"mcpServers": {
		"vikunja": {"url": "https://tasks.example/mcp", "headers": {"Authorization": "Bearer tk_abc123", "X-Trace": "on"}},
		"sealed": {"url": "https://tasks.example/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}},
		"env": {"url": "https://tasks.example/mcp", "headers": {"X-API-Key": "${API_KEY}"}}}}`), envOf(map[string]string{"API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []Warning{{Key: "mcpServers.vikunja.headers.Authorization",
		Msg: "this credential is kept in the clear in the config file; seal it with `maven secret set vikunja_token` and write \"Bearer ${secret:vikunja_token}\""}}
	if !slices.Equal(cfg.Warnings, want) {
		t.Errorf("warnings %v\nwant     %v", cfg.Warnings, want)
	}
}
