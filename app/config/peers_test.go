package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// envOf is a getenv over a fixed environment.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// warningKeys returns the keys of ws, in order.
func warningKeys(ws []Warning) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Key)
	}
	return out
}

// peerEnv is the daemon's environment the peer shapes are read with.
var peerEnv = map[string]string{
	"API_KEY": "k-123", "API_TOKEN": "t-456", "HOME": "/home/owner", "USERJOT_API_TOKEN": "uj",
	"SEVALLA_API_KEY": "sv", "FOO": "foo",
}

// TestPeerShapes reads real blocks of the MCP clients people copy servers from, each as that
// client's documentation or source writes it, and checks what Maven makes of it: accepted, with
// which server and which warnings, or refused with exactly which error. Sources: Claude Desktop
// and Claude Code (.mcp.json, ${VAR} expansion), Cline (src/services/mcp/schemas.ts), Cursor
// (mcp.json), VS Code (.vscode/mcp.json), Windsurf (mcp_config.json), Gemini CLI (settings.json),
// Zed (settings.json context_servers), mcp-remote (README).
func TestPeerShapes(t *testing.T) {
	tests := []struct {
		client, name string
		doc          string
		check        func(Server) bool // the server named "s", when accepted
		warns        []string          // keys of the warnings, in order
		err          string            // the whole error, when refused
	}{
		// Claude Desktop.
		{"Claude Desktop", "filesystem", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]}}}`,
			func(s Server) bool { return s.Type == TransportStdio && s.Command == "npx" && len(s.Args) == 3 }, nil, ""},
		{"Claude Desktop", "token in env, written out", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"}}}}`,
			func(s Server) bool { return s.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "<YOUR_TOKEN>" }, []string{"mcpServers.s.env.GITHUB_PERSONAL_ACCESS_TOKEN"}, ""},
		{"Claude Desktop", "token sealed", `{"mcpServers": {"s": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${secret:gh}"}}}}`,
			func(s Server) bool { return s.Command == "docker" && s.NeedsSecrets() }, nil, ""},
		{"Claude Desktop", "type stdio", `{"mcpServers": {"s": {"type": "stdio", "command": "claude", "args": ["mcp", "serve"], "env": {}}}}`,
			func(s Server) bool { return s.Type == TransportStdio }, nil, ""},
		{"Claude Desktop", "uvx", `{"mcpServers": {"s": {"command": "uvx", "args": ["mcp-server-git", "--repository", "/path/to/repo"]}}}`,
			func(s Server) bool { return s.Command == "uvx" }, nil, ""},
		{"Claude Desktop", "other top-level keys", `{"globalShortcut": "Ctrl+Space", "preferences": {"x": 1}, "mcpServers": {"s": {"command": "uvx", "args": ["mcp-server-time"]}}}`,
			func(s Server) bool { return s.Command == "uvx" }, []string{"globalShortcut", "preferences"}, ""},

		// Claude Code (.mcp.json).
		{"Claude Code", "http with ${API_KEY}", `{"mcpServers": {"s": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"X-API-Key": "${API_KEY}"}}}}`,
			func(s Server) bool { return s.Headers["X-API-Key"] == "k-123" }, nil, ""},
		{"Claude Code", "sse with a bearer variable", `{"mcpServers": {"s": {"type": "sse", "url": "https://api.example.com/mcp/sse", "headers": {"Authorization": "Bearer ${API_TOKEN}"}}}}`,
			func(s Server) bool { return s.Type == TransportSSE && s.Headers["Authorization"] == "Bearer t-456" }, nil, ""},
		{"Claude Code", "default of an unset variable", `{"mcpServers": {"s": {"command": "node", "args": ["./my-mcp-server.js"], "env": {"DEBUG": "${DEBUG:-false}"}}}}`,
			func(s Server) bool { return s.Env["DEBUG"] == "false" }, nil, ""},
		{"Claude Code", "default in the url", `{"mcpServers": {"s": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp"}}}`,
			func(s Server) bool { return s.URL == "https://api.example.com/mcp" }, nil, ""},
		{"Claude Code", "variable in args", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@scope/srv", "--root", "${HOME}/projects"]}}}`,
			func(s Server) bool { return s.Args[3] == "/home/owner/projects" }, nil, ""},
		{"Claude Code", "unset variable", `{"mcpServers": {"s": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${MISSING}"}}}}`,
			nil, nil, "config: mcpServers.s.headers.Authorization: ${MISSING} is not set in the daemon's environment; set it, or write ${MISSING:-default}, or, for a credential, seal it with `maven secret set missing` and write ${secret:missing}"},
		{"Claude Code", "headersHelper", `{"mcpServers": {"s": {"type": "http", "url": "https://x.example/mcp", "headersHelper": "/usr/local/bin/get-token"}}}`,
			nil, nil, "config: mcpServers.s.headersHelper: headersHelper runs a command to make the headers, which Maven does not: seal the token with `maven secret set NAME` and write the header with ${secret:NAME}"},

		// Cline (cline_mcp_settings.json).
		{"Cline", "alwaysAllow and disabled", `{"mcpServers": {"s": {"command": "node", "args": ["/path/to/server.js"], "env": {"API_KEY": "your_api_key"}, "alwaysAllow": ["tool1", "tool2"], "disabled": false}}}`,
			func(s Server) bool { return !s.Disabled }, []string{"mcpServers.s.alwaysAllow", "mcpServers.s.env.API_KEY"}, ""},
		{"Cline", "autoApprove and timeout", `{"mcpServers": {"s": {"command": "node", "args": ["/path/to/server.js"], "autoApprove": [], "disabled": false, "timeout": 60}}}`,
			func(s Server) bool { return s.Type == TransportStdio }, []string{"mcpServers.s.autoApprove", "mcpServers.s.timeout"}, ""},
		{"Cline", "streamableHttp", `{"mcpServers": {"s": {"type": "streamableHttp", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${secret:t}"}, "disabled": false, "autoApprove": []}}}`,
			func(s Server) bool { return s.Type == TransportHTTP }, []string{"mcpServers.s.autoApprove"}, ""},
		{"Cline", "legacy transportType sse", `{"mcpServers": {"s": {"url": "http://localhost:3000/sse", "transportType": "sse"}}}`,
			func(s Server) bool { return s.Type == TransportSSE }, []string{"mcpServers.s.transportType"}, ""},
		{"Cline", "legacy transportType http", `{"mcpServers": {"s": {"url": "http://localhost:3000/mcp", "transportType": "http", "timeout": 30}}}`,
			func(s Server) bool { return s.Type == TransportHTTP }, []string{"mcpServers.s.timeout", "mcpServers.s.transportType"}, ""},

		// Cursor (mcp.json).
		{"Cursor", "url with ${env:}", `{"mcpServers": {"s": {"url": "https://api.userjot.com/v1/mcp", "headers": {"Authorization": "Bearer ${env:USERJOT_API_TOKEN}"}}}}`,
			func(s Server) bool { return s.Headers["Authorization"] == "Bearer uj" }, nil, ""},
		{"Cursor", "command with a literal key", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "mcp-server"], "env": {"API_KEY": "value"}}}}`,
			func(s Server) bool { return s.Env["API_KEY"] == "value" }, []string{"mcpServers.s.env.API_KEY"}, ""},
		{"Cursor", "workspaceFolder", `{"mcpServers": {"s": {"command": "python", "args": ["${workspaceFolder}/server.py"]}}}`,
			nil, nil, `config: mcpServers.s.args[0]: "${workspaceFolder}" is another client's variable; a daemon has no workspace: write the absolute path`},
		{"Cursor", "envFile", `{"mcpServers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "mcp-server"], "envFile": "/home/owner/.env"}}}`,
			nil, nil, "config: mcpServers.s.envFile: envFile reads the environment from a file, which Maven does not: list the variables under env (credentials as ${secret:NAME})"},
		{"Cursor", "userHome", `{"mcpServers": {"s": {"command": "node", "args": ["${userHome}/srv.js"]}}}`,
			nil, nil, `config: mcpServers.s.args[0]: "${userHome}" is another client's variable; write ${HOME}`},

		// VS Code (.vscode/mcp.json).
		{"VS Code", "servers with http", `{"servers": {"s": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}`,
			func(s Server) bool { return s.Type == TransportHTTP }, []string{"servers"}, ""},
		{"VS Code", "servers with stdio", `{"servers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "@microsoft/mcp-server-playwright"]}}}`,
			func(s Server) bool { return s.Type == TransportStdio }, []string{"servers"}, ""},
		{"VS Code", "an input prompt", `{"inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}],
			"servers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"], "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}}}}`,
			nil, nil, "config: servers.s.env.PERPLEXITY_API_KEY: \"${input:perplexity-key}\" is a value VS Code asks for in a prompt; Maven never prompts: seal it with `maven secret set NAME` and write ${secret:NAME}"},
		{"VS Code", "sse with ${env:}", `{"servers": {"s": {"type": "sse", "url": "http://localhost:3000/sse", "headers": {"X-Foo": "${env:FOO}"}}}}`,
			func(s Server) bool { return s.Type == TransportSSE && s.Headers["X-Foo"] == "foo" }, []string{"servers"}, ""},
		{"VS Code", "dev mode", `{"servers": {"s": {"type": "stdio", "command": "node", "args": ["build/index.js"], "dev": {"watch": "src/**/*.ts"}}}}`,
			func(s Server) bool { return s.Command == "node" }, []string{"servers", "servers.s.dev"}, ""},
		{"VS Code", "one name in both lists", `{"mcpServers": {"s": {"command": "a"}}, "servers": {"s": {"command": "b"}}}`,
			nil, nil, `config: servers.s: the server "s" is listed twice (in mcpServers and in another client's list); keep one`},

		// Windsurf (mcp_config.json).
		{"Windsurf", "serverUrl", `{"mcpServers": {"s": {"serverUrl": "https://mcp.sevalla.com/mcp"}}}`,
			func(s Server) bool { return s.Type == TransportHTTP && s.URL == "https://mcp.sevalla.com/mcp" }, []string{"mcpServers.s.serverUrl"}, ""},
		{"Windsurf", "serverUrl with ${env:}", `{"mcpServers": {"s": {"serverUrl": "https://mcp.sevalla.com/mcp", "headers": {"Authorization": "Bearer ${env:SEVALLA_API_KEY}"}}}}`,
			func(s Server) bool { return s.Headers["Authorization"] == "Bearer sv" }, []string{"mcpServers.s.serverUrl"}, ""},
		{"Windsurf", "streamable-http", `{"mcpServers": {"s": {"type": "streamable-http", "url": "https://developer.mescius.com/mcp/spreadjs", "headers": {"Authorization": "Bearer ${secret:mescius}"}}}}`,
			func(s Server) bool { return s.Type == TransportHTTP }, nil, ""},
		{"Windsurf", "disabledTools", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "@byul/mcp"], "disabledTools": ["search"]}}}`,
			func(s Server) bool { return s.Command == "npx" }, []string{"mcpServers.s.disabledTools"}, ""},

		// Gemini CLI (settings.json).
		{"Gemini CLI", "httpUrl", `{"mcpServers": {"s": {"httpUrl": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${secret:gh}"}, "timeout": 5000}}}`,
			func(s Server) bool { return s.Type == TransportHTTP && s.URL == "https://api.githubcopilot.com/mcp/" }, []string{"mcpServers.s.httpUrl", "mcpServers.s.timeout"}, ""},
		{"Gemini CLI", "stdio", `{"mcpServers": {"s": {"command": "uvx", "args": ["mcp-server-git"]}}}`,
			func(s Server) bool { return s.Command == "uvx" }, nil, ""},
		{"Gemini CLI", "tool filters and trust", `{"mcpServers": {"s": {"command": "python", "args": ["-m", "server"], "cwd": "/srv/mcp", "timeout": 30000, "trust": false, "includeTools": ["a"], "excludeTools": ["b"]}}}`,
			func(s Server) bool { return s.Cwd == "/srv/mcp" }, []string{"mcpServers.s.excludeTools", "mcpServers.s.includeTools", "mcpServers.s.timeout", "mcpServers.s.trust"}, ""},
		{"Gemini CLI", "relative cwd", `{"mcpServers": {"s": {"command": "python", "args": ["-m", "server"], "cwd": "./server-directory"}}}`,
			nil, nil, `config: mcpServers.s.cwd: expected an absolute directory path, got "./server-directory"`},
		{"Gemini CLI", "$VAR without braces", `{"mcpServers": {"s": {"command": "python", "args": ["-m", "server"], "env": {"MODE": "$SERVER_MODE"}}}}`,
			func(s Server) bool { return s.Env["MODE"] == "$SERVER_MODE" }, []string{"mcpServers.s.env.MODE"}, ""},
		{"Gemini CLI", "global settings", `{"selectedAuthType": "gemini-api-key", "theme": "Dracula", "mcp": {"allowed": ["s"]}, "mcpServers": {"s": {"command": "uvx", "args": ["mcp-server-git"]}}}`,
			func(s Server) bool { return s.Command == "uvx" }, []string{"mcp", "selectedAuthType", "theme"}, ""},

		// Zed (settings.json).
		{"Zed", "custom source", `{"context_servers": {"s": {"source": "custom", "command": "npx", "args": ["-y", "hexdocs-mcp@0.5.0"], "env": {}}}}`,
			func(s Server) bool { return s.Command == "npx" }, []string{"context_servers", "context_servers.s.source"}, ""},
		{"Zed", "stdio without source", `{"context_servers": {"s": {"command": "uvx", "args": ["kagimcp"], "env": {"KAGI_API_KEY": "${secret:kagi}"}}}}`,
			func(s Server) bool { return s.Command == "uvx" && s.NeedsSecrets() }, []string{"context_servers"}, ""},
		{"Zed", "older command object", `{"context_servers": {"s": {"command": {"path": "/path/to/my-context-server", "args": ["run"], "env": {}}, "settings": {"enable_something": true}}}}`,
			func(s Server) bool { return s.Command == "/path/to/my-context-server" && s.Args[0] == "run" }, []string{"context_servers", "context_servers.s.command", "context_servers.s.settings"}, ""},
		{"Zed", "extension server", `{"context_servers": {"s": {"source": "extension", "enabled": true, "settings": {"github_personal_access_token": "TOKEN"}}}}`,
			nil, nil, `config: context_servers.s.source: a Zed extension's server is started by Zed; give Maven its "command" (or "url") instead`},
		{"Zed", "enabled false", `{"context_servers": {"s": {"enabled": false, "command": "npx", "args": ["-y", "x"]}}}`,
			func(s Server) bool { return s.Disabled }, []string{"context_servers", "context_servers.s.enabled"}, ""},
		{"Zed", "http", `{"context_servers": {"s": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${secret:z}"}}}}`,
			func(s Server) bool { return s.Type == TransportHTTP }, []string{"context_servers"}, ""},

		// mcp-remote, the stdio wrapper of remote servers (README).
		{"mcp-remote", "header from the server's env", `{"mcpServers": {"s": {"command": "npx", "args": ["mcp-remote", "https://remote.mcp.server/sse", "--header", "Authorization: Bearer ${AUTH_TOKEN}"], "env": {"AUTH_TOKEN": "${secret:tok}"}}}}`,
			func(s Server) bool { return s.Args[3] == "Authorization: Bearer ${AUTH_TOKEN}" && s.NeedsSecrets() }, nil, ""},
		{"mcp-remote", "header without spaces", `{"mcpServers": {"s": {"command": "npx", "args": ["mcp-remote", "https://remote.mcp.server/sse", "--header", "Authorization:${AUTH_HEADER}"], "env": {"AUTH_HEADER": "Bearer ${secret:tok}"}}}}`,
			func(s Server) bool { return s.Args[3] == "Authorization:${AUTH_HEADER}" }, nil, ""},
		{"mcp-remote", "secret in the header argument", `{"mcpServers": {"s": {"command": "npx", "args": ["mcp-remote", "https://remote.mcp.server/sse", "--header", "Authorization: Bearer ${secret:tok}"]}}}`,
			nil, nil, `config: mcpServers.s.args[3]: ${secret:tok} would put the secret on the command line, which every local user can read; pass it through env instead ("env": {"TOK": "${secret:tok}"}), and if the program wants it as an argument, write ${TOK} there: a variable the server's own env sets is left for the server to expand, as mcp-remote does`},
		{"mcp-remote", "plain", `{"mcpServers": {"s": {"command": "npx", "args": ["-y", "mcp-remote@latest", "https://remote.mcp.server/sse", "--allow-http"]}}}`,
			func(s Server) bool { return len(s.Args) == 4 }, nil, ""},

		// Near misses: a did-you-mean, never a guess.
		{"near miss", "transport", `{"mcpServers": {"s": {"transport": "http", "url": "https://x.example/mcp"}}}`,
			nil, nil, `config: unknown key "mcpServers.s.transport" (did you mean "type"?)`},
		{"near miss", "HTTP", `{"mcpServers": {"s": {"type": "HTTP", "url": "https://x.example/mcp"}}}`,
			nil, nil, `config: mcpServers.s.type: expected one of "stdio", "http", "sse", got "HTTP" (did you mean "http"?)`},
	}
	if len(tests) < 48 {
		t.Fatalf("%d shapes; the table promises 48", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.client+"/"+tt.name, func(t *testing.T) {
			cfg, err := ParseEnv([]byte(tt.doc), envOf(peerEnv))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v\nwant    %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			s, ok := cfg.MCPServers["s"]
			if !ok || !tt.check(s) {
				t.Errorf("server = %+v", s)
			}
			if got, want := warningKeys(cfg.Warnings), append([]string{}, tt.warns...); !slices.Equal(got, want) {
				t.Errorf("warnings at %q, want at %q:\n%v", got, want, cfg.Warnings)
			}
		})
	}
}

// TestWholeClaudeDesktopFile reads a claude_desktop_config.json as Claude Desktop keeps it,
// settings and all: its servers are Maven's, its settings mean nothing here and say so.
func TestWholeClaudeDesktopFile(t *testing.T) {
	const file = `{
  "globalShortcut": "Alt+Ctrl+Space",
  "isUsingBuiltInNodeForMcp": true,
  "telemetry": {"enabled": false},
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/owner/Desktop", "/Users/owner/Downloads"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${secret:github_pat}"}
    },
    "remote": {"command": "npx", "args": ["mcp-remote", "https://mcp.example.com/sse"]}
  }
}`
	cfg, err := ParseEnv([]byte(file), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MCPServers) != 3 || cfg.MCPServers["github"].SecretRefs()[0] != "github_pat" {
		t.Fatalf("servers: %+v", cfg.MCPServers)
	}
	if got := warningKeys(cfg.Warnings); !slices.Equal(got, []string{"globalShortcut", "isUsingBuiltInNodeForMcp", "telemetry"}) {
		t.Fatalf("warnings: %v", cfg.Warnings)
	}
}

// TestCommentsAndTrailingCommas reads JSON with comments, as VS Code and Zed write their files,
// and still finds a syntax error where an editor would show it.
func TestCommentsAndTrailingCommas(t *testing.T) {
	const file = `// Maven, on the kitchen machine
{
  "listen": "127.0.0.1:9000", /* the proxy forwards here */
  "mcpServers": {
    // the notes server
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory",],},
  },
}
`
	cfg, err := ParseEnv([]byte(file), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9000" || cfg.MCPServers["memory"].Args[1] != "@modelcontextprotocol/server-memory" {
		t.Fatalf("config: %+v", cfg)
	}
	_, err = ParseEnv([]byte("// a comment\n{\n  \"listen\": \"x:1\" \"rp_id\": \"y\"\n}"), envOf(nil))
	if err == nil || !strings.HasPrefix(err.Error(), "config: line 3, column 19: ") {
		t.Fatalf("syntax error after a comment: %v", err)
	}
}

// TestEveryErrorOfAFileAtOnce: one file, several mistakes in several places, all reported,
// each naming its key.
func TestEveryErrorOfAFileAtOnce(t *testing.T) {
	const file = `{
  "listen": "8080",
  "refresh_interval": "soon",
  "rp_idd": "localhost",
  "tools": [{"name": "reboot", "argv": []}],
  "mcpServers": {
    "a": {"serverUrl": "https://x.example/mcp", "allowTools": ["x"]},
    "b": {"command": "srv", "args": ["--token=${secret:tok}"]},
    "c": {"type": "HTTP", "url": "https://y.example/mcp"}
  }
}`
	_, err := ParseEnv([]byte(file), envOf(nil))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %v (%T) is not Errors", err, err)
	}
	var keys []string
	for _, e := range es {
		keys = append(keys, e.Key)
	}
	want := []string{"mcpServers.a.allowTools", "mcpServers.b.args[0]", "mcpServers.c.type", "refresh_interval", "rp_idd", "listen", "tools[0].argv"}
	if !slices.Equal(keys, want) {
		t.Fatalf("errors at %q\nwant      %q\n%v", keys, want, err)
	}
	if !strings.HasPrefix(err.Error(), "config: 7 errors:\n  unknown key \"mcpServers.a.allowTools\" (did you mean \"allow_tools\"?)\n") ||
		!strings.Contains(err.Error(), `unknown key "rp_idd" (did you mean "rp_id"?)`) {
		t.Fatalf("message:\n%v", err)
	}
}
