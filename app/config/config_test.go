package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmpConfig compares configs by their exported fields.
var cmpConfig = []cmp.Option{cmpopts.IgnoreUnexported(Config{}), cmpopts.EquateComparable(netip.Prefix{})}

// designExample is the config shown in docs/design.md#config.
const designExample = `{
  "listen": "127.0.0.1:8080",
  "rp_id": "localhost",
  "origins": ["http://localhost:8080"],
  "refresh_interval": "5m",
  "step_up_window": "5m",
  "tools": [{"name": "restart_router", "argv": ["/usr/local/bin/restart-router"]}],
  "mcpServers": {
    "memory":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
    "vikunja": {"type": "http", "url": "https://tasks.example/mcp",
                "headers": {"Authorization": "Bearer ${secret:vikunja_token}"},
                "allow_tools": ["list_tasks", "search_tasks"]}
  }
}`

func TestDefault(t *testing.T) {
	want := Config{
		Listen:          "127.0.0.1:8080",
		RPID:            "localhost",
		Origins:         []string{"http://localhost:8080"},
		RefreshInterval: 5 * time.Minute,
		StepUpWindow:    5 * time.Minute,
	}
	if diff := cmp.Diff(want, Default(), cmpConfig...); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	if err := errorsOf(Default().validate()); err != nil {
		t.Errorf("Default().validate() = %v", err)
	}
	for _, in := range []string{"{}", " \n{ }\n", "\xef\xbb\xbf{}"} {
		got, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%q) = %v", in, err)
		}
		if diff := cmp.Diff(Default(), got, cmpConfig...); diff != "" {
			t.Errorf("Parse(%q) differs from Default() (-want +got):\n%s", in, diff)
		}
	}
}

func TestParseDesignExample(t *testing.T) {
	// Read outside the daemon's environment (no PATH): its commands are not looked for here.
	got, err := ParseEnv([]byte(designExample), envOf(nil))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Config{
		Listen:          "127.0.0.1:8080",
		RPID:            "localhost",
		Origins:         []string{"http://localhost:8080"},
		RefreshInterval: 5 * time.Minute,
		StepUpWindow:    5 * time.Minute,
		Tools:           []Tool{{Name: "restart_router", Argv: []string{"/usr/local/bin/restart-router"}}},
		MCPServers: map[string]Server{
			"memory": {
				Name:    "memory",
				Type:    TransportStdio,
				Command: "npx",
				Args:    []string{"-y", "@modelcontextprotocol/server-memory"},
			},
			"vikunja": {
				Name:       "vikunja",
				Type:       TransportHTTP,
				URL:        "https://tasks.example/mcp",
				Headers:    map[string]string{"Authorization": "Bearer ${secret:vikunja_token}"},
				AllowTools: []string{"list_tasks", "search_tasks"},
			},
		},
	}
	if diff := cmp.Diff(want, got, cmpConfig...); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if !got.MCPServers["vikunja"].NeedsSecrets() || got.MCPServers["memory"].NeedsSecrets() {
		t.Errorf("NeedsSecrets: vikunja should need secrets, memory should not")
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		check func(t *testing.T, c Config)
	}{
		{
			name: "all top-level keys",
			in: `{"listen": "0.0.0.0:9443", "rp_id": "maven.example",
				"origins": ["https://maven.example", "https://voice.maven.example:8443"],
				"refresh_interval": "1s", "step_up_window": "1h",
				"tls_cert": "/etc/maven/cert.pem", "tls_key": "/etc/maven/key.pem",
				"trusted_proxies": ["10.0.0.0/8", "192.168.1.1", "::1", "fd00::/8"]}`,
			check: func(t *testing.T, c Config) {
				want := Config{
					Listen:          "0.0.0.0:9443",
					RPID:            "maven.example",
					Origins:         []string{"https://maven.example", "https://voice.maven.example:8443"},
					RefreshInterval: time.Second,
					StepUpWindow:    time.Hour,
					TLSCert:         "/etc/maven/cert.pem",
					TLSKey:          "/etc/maven/key.pem",
					TrustedProxies: []netip.Prefix{
						netip.MustParsePrefix("10.0.0.0/8"),
						netip.MustParsePrefix("192.168.1.1/32"),
						netip.MustParsePrefix("::1/128"),
						netip.MustParsePrefix("fd00::/8"),
					},
				}
				if diff := cmp.Diff(want, c, cmpConfig...); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "compound durations",
			in:   `{"refresh_interval": "1h30m", "step_up_window": "90s"}`,
			check: func(t *testing.T, c Config) {
				if c.RefreshInterval != 90*time.Minute || c.StepUpWindow != 90*time.Second {
					t.Errorf("durations = %v, %v", c.RefreshInterval, c.StepUpWindow)
				}
			},
		},
		{
			name: "empty lists and objects",
			in:   `{"tools": [], "mcpServers": {}, "trusted_proxies": []}`,
			check: func(t *testing.T, c Config) {
				if len(c.Tools) != 0 || len(c.MCPServers) != 0 || len(c.TrustedProxies) != 0 {
					t.Errorf("got %+v", c)
				}
			},
		},
		{
			name: "rp_id localhost subdomain origin over http",
			in:   `{"origins": ["http://maven.localhost:8080", "https://localhost"]}`,
			check: func(t *testing.T, c Config) {
				if len(c.Origins) != 2 {
					t.Errorf("origins = %q", c.Origins)
				}
			},
		},
		{
			name: "listen on all interfaces and by host name",
			in:   `{"listen": ":8080", "tools": [{"name": "a", "argv": ["/bin/true"]}]}`,
			check: func(t *testing.T, c Config) {
				if c.Listen != ":8080" || c.Tools[0].Name != "a" {
					t.Errorf("got %+v", c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseServers(t *testing.T) {
	tests := []struct {
		name string
		in   string // the server object
		want Server
	}{
		{
			name: "command alone means stdio",
			in:   `{"command": "uvx", "args": ["mcp-server-time"]}`,
			want: Server{Type: TransportStdio, Command: "uvx", Args: []string{"mcp-server-time"}},
		},
		{
			name: "url alone means http, falling back to sse",
			in:   `{"url": "https://mcp.example/mcp"}`,
			want: Server{Type: TransportHTTP, URL: "https://mcp.example/mcp", TypeGuessed: true},
		},
		{
			name: "streamable-http alias",
			in:   `{"type": "streamable-http", "url": "https://mcp.example/mcp"}`,
			want: Server{Type: TransportHTTP, URL: "https://mcp.example/mcp"},
		},
		{
			name: "streamableHttp alias",
			in:   `{"type": "streamableHttp", "url": "http://127.0.0.1:3000/mcp"}`,
			want: Server{Type: TransportHTTP, URL: "http://127.0.0.1:3000/mcp"},
		},
		{
			name: "sse",
			in:   `{"type": "sse", "url": "https://mcp.example/sse", "headers": {"X-Api-Key": "${secret:k}"}}`,
			want: Server{Type: TransportSSE, URL: "https://mcp.example/sse", Headers: map[string]string{"X-Api-Key": "${secret:k}"}},
		},
		{
			name: "explicit stdio with every stdio key",
			in: `{"type": "stdio", "command": "/opt/mcp/server", "args": ["--token", "${API_KEY}"],
				"env": {"API_KEY": "${secret:api.key}", "LOG_LEVEL": "debug"}, "cwd": "/srv/mcp",
				"allow_tools": ["get_weather"], "disabled": true}`,
			want: Server{
				Type: TransportStdio, Command: "/opt/mcp/server", Args: []string{"--token", "${API_KEY}"},
				Env:        map[string]string{"API_KEY": "${secret:api.key}", "LOG_LEVEL": "debug"},
				Cwd:        "/srv/mcp",
				AllowTools: []string{"get_weather"},
				Disabled:   true,
			},
		},
		{
			name: "empty headers on stdio are harmless",
			in:   `{"command": "x", "headers": {}, "disabled": false}`,
			want: Server{Type: TransportStdio, Command: "x", Headers: map[string]string{}},
		},
		{
			name: "secret in userinfo and query",
			in:   `{"url": "https://bot:${secret:pw}@mcp.example:8443/v1/mcp?api_key=${secret:k}&region=eu"}`,
			want: Server{Type: TransportHTTP, URL: "https://bot:${secret:pw}@mcp.example:8443/v1/mcp?api_key=${secret:k}&region=eu", TypeGuessed: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(`{"mcpServers": {"s": ` + tt.in + `}}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.want.Name = "s"
			if diff := cmp.Diff(tt.want, c.MCPServers["s"]); diff != "" {
				t.Errorf("server mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name    string
		in      string
		wantKey string
		want    string // the whole Error() text
	}{
		// The document.
		{"empty file", "", "", `config: the file is empty; write {} to use the defaults`},
		{"blank file", " \n\t", "", `config: the file is empty; write {} to use the defaults`},
		{"not an object", `[]`, "", `config: expected an object, got an empty list`},
		{"null document", `null`, "", `config: expected an object, got null`},
		{"unterminated", `{"listen": "x:1"`, "", `config: line 1, column 17: parsing object after value: unexpected EOF`},
		{"two documents", `{} {}`, "", `config: line 1, column 4: invalid character '{' after top-level value`},
		{"column counts characters", "{\"rp_id\": \"é\" 1}", "", `config: line 1, column 15: invalid character '1' after object value (expecting ',' or '}')`},
		{"invalid utf-8", "{\n\"rp_id\": \"\xff\"}", "", `config: line 2, column 11: invalid UTF-8`},

		// Duplicate keys.
		{"duplicate top-level key", `{"listen": "a:1", "listen": "b:2"}`, "listen", `config: duplicate key "listen"`},
		{"duplicate server", `{"mcpServers": {"m": {"command": "a"}, "m": {"command": "b"}}}`, "mcpServers.m", `config: duplicate key "mcpServers.m"`},
		{"duplicate server key", `{"mcpServers": {"m": {"command": "a", "command": "b"}}}`, "mcpServers.m.command", `config: duplicate key "mcpServers.m.command"`},
		{"duplicate header", `{"mcpServers": {"v": {"url": "https://x.example", "headers": {"A": "1", "A": "2"}}}}`, "mcpServers.v.headers.A", `config: duplicate key "mcpServers.v.headers.A"`},
		{"duplicate key in a tool", `{"tools": [{"name": "a", "argv": ["x"]}, {"name": "b", "name": "c", "argv": ["x"]}]}`, "tools[1].name", `config: duplicate key "tools[1].name"`},

		// Unknown keys.
		{"unknown top-level key", `{"lisn": "a:1"}`, "lisn", `config: unknown key "lisn" (did you mean "listen"?)`},
		{"unknown key far from any", `{"colour": "blue"}`, "colour", `config: unknown key "colour"`},
		{"mcp_servers for mcpServers", `{"mcp_servers": {}}`, "mcp_servers", `config: unknown key "mcp_servers" (did you mean "mcpServers"?)`},
		{"rpId for rp_id", `{"rpId": "localhost"}`, "rpId", `config: unknown key "rpId" (did you mean "rp_id"?)`},
		{"unknown key in a tool", `{"tools": [{"name": "a", "argv": ["x"], "shell": true}]}`, "tools[0].shell", `config: unknown key "tools[0].shell"`},
		{"allowTools in a server", `{"mcpServers": {"vikunja": {"url": "https://x.example", "allowTools": []}}}`, "mcpServers.vikunja.allowTools", `config: unknown key "mcpServers.vikunja.allowTools" (did you mean "allow_tools"?)`},
		{"transport for type", `{"mcpServers": {"m": {"transport": "http", "url": "https://x.example"}}}`, "mcpServers.m.transport", `config: unknown key "mcpServers.m.transport" (did you mean "type"?)`},
		{"unknown key in a dotted server", `{"mcpServers": {"a.b": {"command": "x", "shell": true}}}`, `mcpServers["a.b"].shell`, `config: unknown key "mcpServers[\"a.b\"].shell"`},

		// listen, rp_id, origins.
		{"listen not a string", `{"listen": 8080}`, "listen", `config: listen: expected an address such as "127.0.0.1:8080", got 8080`},
		{"listen without port", `{"listen": "8080"}`, "listen", `config: listen: expected host:port such as "127.0.0.1:8080", got "8080"`},
		{"listen named port", `{"listen": "localhost:http"}`, "listen", `config: listen: expected host:port such as "127.0.0.1:8080", got "localhost:http"`},
		{"listen port too big", `{"listen": "127.0.0.1:70000"}`, "listen", `config: listen: expected host:port such as "127.0.0.1:8080", got "127.0.0.1:70000"`},
		{"listen bad host", `{"listen": "local host:80"}`, "listen", `config: listen: expected host:port such as "127.0.0.1:8080", got "local host:80"`},
		{"listen empty", `{"listen": ""}`, "listen", `config: listen: expected host:port such as "127.0.0.1:8080", got an empty string`},
		{"rp_id is a URL", `{"rp_id": "https://maven.example"}`, "rp_id", `config: rp_id: expected a domain name such as "localhost" or "maven.example", got "https://maven.example"`},
		{"rp_id is an IP", `{"rp_id": "127.0.0.1"}`, "rp_id", `config: rp_id: expected a domain name such as "localhost" or "maven.example", got "127.0.0.1" (WebAuthn does not accept an IP address)`},
		{"rp_id without origins", `{"rp_id": "maven.example"}`, "origins", `config: origins: required when rp_id is not "localhost"; list the origins the browser uses, such as ["https://maven.example"]`},
		{"origins empty", `{"origins": []}`, "origins", `config: origins: expected at least one origin such as "https://maven.example"`},
		{"origins a string", `{"origins": "http://localhost:8080"}`, "origins", `config: origins: expected a list of origins such as ["https://maven.example"], got "http://localhost:8080"`},
		{"origin not a string", `{"origins": [8080]}`, "origins[0]", `config: origins[0]: expected a string, got 8080`},
		{"origin with a path", `{"origins": ["http://localhost:8080/"]}`, "origins[0]", `config: origins[0]: expected an origin such as "https://maven.example" (scheme and host, no path), got "http://localhost:8080/"`},
		{"origin without scheme", `{"origins": ["localhost:8080"]}`, "origins[0]", `config: origins[0]: expected an origin such as "https://maven.example" (scheme and host, no path), got "localhost:8080"`},
		{"origin of another site", `{"rp_id": "maven.example", "origins": ["https://maven.example", "https://evil.example"]}`, "origins[1]", `config: origins[1]: the host of "https://evil.example" is not rp_id "maven.example" or a subdomain of it`},
		{"origin suffix is not a subdomain", `{"rp_id": "maven.example", "origins": ["https://notmaven.example"]}`, "origins[0]", `config: origins[0]: the host of "https://notmaven.example" is not rp_id "maven.example" or a subdomain of it`},
		{"plain http off localhost", `{"rp_id": "maven.example", "origins": ["http://maven.example"]}`, "origins[0]", `config: origins[0]: "http://maven.example" must use https: browsers allow passkeys over plain http only on localhost`},

		// Durations.
		{"refresh_interval words", `{"refresh_interval": "soon"}`, "refresh_interval", `config: refresh_interval: expected a duration such as "5m", got "soon"`},
		{"refresh_interval number", `{"refresh_interval": 300}`, "refresh_interval", `config: refresh_interval: expected a duration such as "5m", got 300`},
		{"refresh_interval no unit", `{"refresh_interval": "300"}`, "refresh_interval", `config: refresh_interval: expected a duration such as "5m", got "300"`},
		{"refresh_interval too short", `{"refresh_interval": "500ms"}`, "refresh_interval", `config: refresh_interval: expected at least 1s, got 500ms`},
		{"refresh_interval negative", `{"refresh_interval": "-5m"}`, "refresh_interval", `config: refresh_interval: expected at least 1s, got -5m`},
		{"step_up_window zero", `{"step_up_window": "0s"}`, "step_up_window", `config: step_up_window: expected a duration above 0 and at most 1h, got 0s`},
		{"step_up_window too long", `{"step_up_window": "1h0m1s"}`, "step_up_window", `config: step_up_window: expected a duration above 0 and at most 1h, got 1h0m1s`},
		{"step_up_window null", `{"step_up_window": null}`, "step_up_window", `config: step_up_window: expected a duration such as "5m", got null`},

		// TLS and proxies.
		{"tls_cert alone", `{"tls_cert": "/c.pem"}`, "tls_key", `config: tls_key: required when tls_cert is set`},
		{"tls_key alone", `{"tls_key": "/k.pem"}`, "tls_cert", `config: tls_cert: required when tls_key is set`},
		{"tls_cert not a string", `{"tls_cert": true}`, "tls_cert", `config: tls_cert: expected a file path, got true`},
		{"proxies not a list", `{"trusted_proxies": "10.0.0.0/8"}`, "trusted_proxies", `config: trusted_proxies: expected a list of IP addresses or CIDR prefixes such as ["10.0.0.0/8"], got "10.0.0.0/8"`},
		{"proxy not an address", `{"trusted_proxies": ["10.0.0.0/8", "proxy.lan"]}`, "trusted_proxies[1]", `config: trusted_proxies[1]: expected an IP address or CIDR prefix such as "10.0.0.0/8", got "proxy.lan"`},
		{"proxy prefix with host bits", `{"trusted_proxies": ["10.0.0.1/8"]}`, "trusted_proxies[0]", `config: trusted_proxies[0]: "10.0.0.1/8" has bits set past the prefix length; did you mean "10.0.0.0/8"?`},
		{"proxy bad prefix length", `{"trusted_proxies": ["10.0.0.0/33"]}`, "trusted_proxies[0]", `config: trusted_proxies[0]: expected an IP address or CIDR prefix such as "10.0.0.0/8", got "10.0.0.0/33"`},
		{"proxy with zone", `{"trusted_proxies": ["fe80::1%eth0"]}`, "trusted_proxies[0]", `config: trusted_proxies[0]: expected an IP address or CIDR prefix such as "10.0.0.0/8", got "fe80::1%eth0"`},

		// Local tools.
		{"tools not a list", `{"tools": {}}`, "tools", `config: tools: expected a list of tools such as [{"name": "…", "argv": ["…"]}], got an object`},
		{"tool not an object", `{"tools": ["reboot"]}`, "tools[0]", `config: tools[0]: expected an object, got "reboot"`},
		{"tool without name", `{"tools": [{"argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: expected a non-empty tool name`},
		{"tool name blank", `{"tools": [{"name": "  ", "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: expected a non-empty tool name`},
		{"tool name not a string", `{"tools": [{"name": 1, "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: expected a tool name, got 1`},
		{"tool name too long", `{"tools": [{"name": "` + long + `", "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: the tool name is longer than 64 characters`},
		{"tool name with bidi override", `{"tools": [{"name": "safe\u202eexe", "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: the tool name contains the control or invisible character U+202E`},
		{"tool name with line separator", `{"tools": [{"name": "a\u2028b", "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: the tool name contains the control or invisible character U+2028`},
		{"tool name with newline", `{"tools": [{"name": "a\nb", "argv": ["x"]}]}`, "tools[0].name", `config: tools[0].name: the tool name contains the control or invisible character U+000A`},
		{"tool names not unique", `{"tools": [{"name": "a", "argv": ["x"]}, {"name": "b", "argv": ["y"]}, {"name": "a", "argv": ["z"]}]}`, "tools[2].name", `config: tools[2].name: "a" is already the name of tools[0]`},
		{"tool without argv", `{"tools": [{"name": "a"}]}`, "tools[0].argv", `config: tools[0].argv: expected a non-empty list of strings`},
		{"tool argv empty", `{"tools": [{"name": "a", "argv": ["x"]}, {"name": "b", "argv": []}]}`, "tools[1].argv", `config: tools[1].argv: expected a non-empty list of strings`},
		{"tool argv a string", `{"tools": [{"name": "a", "argv": "reboot now"}]}`, "tools[0].argv", `config: tools[0].argv: expected a non-empty list of strings, got "reboot now"`},
		{"tool argv element not a string", `{"tools": [{"name": "a", "argv": ["x", 1]}]}`, "tools[0].argv[1]", `config: tools[0].argv[1]: expected a string, got 1`},
		{"tool argv[0] empty", `{"tools": [{"name": "a", "argv": ["", "x"]}]}`, "tools[0].argv[0]", `config: tools[0].argv[0]: expected a program name or path, got an empty string`},
		{"tool looks like an MCP row", `{"tools": [{"name": "a", "argv": ["mcp", "vikunja", "delete_project"]}]}`, "tools[0].argv[0]", `config: tools[0].argv[0]: "mcp" is reserved for MCP rows (["mcp", server, tool]); a local command cannot start with it`},
		{"tool argv with a secret", `{"tools": [{"name": "a", "argv": ["curl", "-H", "${secret:t}"]}]}`, "tools[0].argv[2]", `config: tools[0].argv[2]: variables and secret references are only expanded in mcpServers, not in local commands`},
		{"tool argv with NUL", `{"tools": [{"name": "a", "argv": ["x", "a\u0000b"]}]}`, "tools[0].argv[1]", `config: tools[0].argv[1]: must not contain a NUL byte`},

		// MCP servers: structure.
		{"mcpServers a list", `{"mcpServers": []}`, "mcpServers", `config: mcpServers: expected an object of servers by name, got a list, as Continue writes it; put each under its name: {"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}}`},
		{"server not an object", `{"mcpServers": {"m": "npx"}}`, "mcpServers.m", `config: mcpServers.m: expected an object, got "npx"`},
		{"server name empty", `{"mcpServers": {"": {"command": "x"}}}`, `mcpServers[""]`, `config: mcpServers[""]: expected a non-empty server name`},
		{"server name too long", `{"mcpServers": {"` + long + `": {"command": "x"}}}`, "mcpServers." + long, `config: mcpServers.` + long + `: the server name is longer than 64 characters`},
		{"server name with control character", `{"mcpServers": {"a\u0007": {"command": "x"}}}`, `mcpServers["a\a"]`, `config: mcpServers["a\a"]: the server name contains the control or invisible character U+0007`},
		{"type unknown", `{"mcpServers": {"memory": {"type": "ws", "command": "x"}}}`, "mcpServers.memory.type", `config: mcpServers.memory.type: expected one of "stdio", "http", "sse", got "ws"`},
		{"type not a string", `{"mcpServers": {"memory": {"type": 1, "command": "x"}}}`, "mcpServers.memory.type", `config: mcpServers.memory.type: expected one of "stdio", "http", "sse", got 1`},
		{"neither command nor url", `{"mcpServers": {"m": {"args": ["x"]}}}`, "mcpServers.m", `config: mcpServers.m: expected "command" (a local process) or "url" (a remote server)`},
		{"both command and url", `{"mcpServers": {"m": {"command": "x", "url": "https://x.example"}}}`, "mcpServers.m", `config: mcpServers.m: expected either "command" (a local process) or "url" (a remote server), not both`},
		{"stdio without command", `{"mcpServers": {"m": {"type": "stdio", "args": ["x"]}}}`, "mcpServers.m.command", `config: mcpServers.m.command: required for a stdio server`},
		{"stdio with url", `{"mcpServers": {"m": {"type": "stdio", "command": "x", "url": "https://x.example"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: not allowed for a server of type "stdio"`},
		{"stdio with headers", `{"mcpServers": {"m": {"command": "x", "headers": {"A": "b"}}}}`, "mcpServers.m.headers", `config: mcpServers.m.headers: not allowed for a server of type "stdio"`},
		{"http without url", `{"mcpServers": {"m": {"type": "http"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: required for an http server`},
		{"sse without url", `{"mcpServers": {"m": {"type": "sse", "headers": {}}}}`, "mcpServers.m.url", `config: mcpServers.m.url: required for an sse server`},
		{"http with command", `{"mcpServers": {"m": {"type": "http", "command": "x", "url": "https://x.example"}}}`, "mcpServers.m.command", `config: mcpServers.m.command: not allowed for a server of type "http"`},
		{"http with args", `{"mcpServers": {"m": {"url": "https://x.example", "args": ["-v"]}}}`, "mcpServers.m.args", `config: mcpServers.m.args: not allowed for a server of type "http"`},
		{"sse with env", `{"mcpServers": {"m": {"type": "sse", "url": "https://x.example", "env": {"A": "b"}}}}`, "mcpServers.m.env", `config: mcpServers.m.env: not allowed for a server of type "sse"`},
		{"http with cwd", `{"mcpServers": {"m": {"url": "https://x.example", "cwd": "/tmp"}}}`, "mcpServers.m.cwd", `config: mcpServers.m.cwd: not allowed for a server of type "http"`},

		// MCP servers: values.
		{"command not a string", `{"mcpServers": {"m": {"command": ["npx"]}}}`, "mcpServers.m.command", `config: mcpServers.m.command: expected a program name or path, got a list`},
		{"args not a list", `{"mcpServers": {"m": {"command": "npx", "args": "-y"}}}`, "mcpServers.m.args", `config: mcpServers.m.args: expected a list of strings, got "-y"`},
		{"env not an object", `{"mcpServers": {"m": {"command": "x", "env": ["A=b"]}}}`, "mcpServers.m.env", `config: mcpServers.m.env: expected an object, got a list`},
		{"env value not a string", `{"mcpServers": {"m": {"command": "x", "env": {"PORT": 8080}}}}`, "mcpServers.m.env.PORT", `config: mcpServers.m.env.PORT: expected a string, got 8080`},
		{"env name invalid", `{"mcpServers": {"m": {"command": "x", "env": {"A=B": "c"}}}}`, `mcpServers.m.env["A=B"]`, `config: mcpServers.m.env["A=B"]: expected an environment variable name such as API_KEY`},
		{"env name starts with a digit", `{"mcpServers": {"m": {"command": "x", "env": {"1A": "c"}}}}`, `mcpServers.m.env.1A`, `config: mcpServers.m.env.1A: expected an environment variable name such as API_KEY`},
		{"cwd relative", `{"mcpServers": {"m": {"command": "x", "cwd": "srv"}}}`, "mcpServers.m.cwd", `config: mcpServers.m.cwd: expected an absolute directory path, got "srv"`},
		{"cwd with a secret", `{"mcpServers": {"m": {"command": "x", "cwd": "/srv/${secret:d}"}}}`, "mcpServers.m.cwd", `config: mcpServers.m.cwd: secret references are not expanded in cwd`},
		{"url not a string", `{"mcpServers": {"m": {"type": "http", "url": {}}}}`, "mcpServers.m.url", `config: mcpServers.m.url: expected a URL such as "https://example.com/mcp", got an object`},
		{"url relative", `{"mcpServers": {"m": {"url": "/mcp"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: expected an absolute http or https URL such as "https://example.com/mcp", got "/mcp"`},
		{"url websocket", `{"mcpServers": {"m": {"url": "wss://x.example/mcp"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: expected an absolute http or https URL such as "https://example.com/mcp", got "wss://x.example/mcp"`},
		{"url without host", `{"mcpServers": {"m": {"url": "https:///mcp"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: expected an absolute http or https URL such as "https://example.com/mcp", got "https:///mcp"`},
		{"url with fragment", `{"mcpServers": {"m": {"url": "https://x.example/mcp#top"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: expected no #fragment: it is never sent to the server`},
		{"url host from a secret", `{"mcpServers": {"m": {"url": "https://${secret:host}/mcp"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: the host must be written out, not a secret reference`},
		{"header name invalid", `{"mcpServers": {"v": {"url": "https://x.example", "headers": {"Bad Header": "x"}}}}`, `mcpServers.v.headers["Bad Header"]`, `config: mcpServers.v.headers["Bad Header"]: expected an HTTP header name such as Authorization`},
		{"header value with CRLF", `{"mcpServers": {"v": {"url": "https://x.example", "headers": {"A": "b\r\nX-Evil: 1"}}}}`, "mcpServers.v.headers.A", `config: mcpServers.v.headers.A: the value must not contain control characters`},
		{"allow_tools not a list", `{"mcpServers": {"m": {"command": "x", "allow_tools": "list_tasks"}}}`, "mcpServers.m.allow_tools", `config: mcpServers.m.allow_tools: expected a list of tool names, got "list_tasks"`},
		{"allow_tools empty name", `{"mcpServers": {"m": {"command": "x", "allow_tools": ["a", ""]}}}`, "mcpServers.m.allow_tools[1]", `config: mcpServers.m.allow_tools[1]: expected a tool name, got an empty string`},
		{"disabled not a bool", `{"mcpServers": {"m": {"command": "x", "disabled": "yes"}}}`, "mcpServers.m.disabled", `config: mcpServers.m.disabled: expected true or false, got "yes"`},
		{"args with NUL", `{"mcpServers": {"m": {"command": "x", "args": ["a\u0000"]}}}`, "mcpServers.m.args[0]", `config: mcpServers.m.args[0]: must not contain a NUL byte`},

		// MCP servers: secret references.
		{"empty secret name", `{"mcpServers": {"m": {"command": "x", "env": {"K": "${secret:}"}}}}`, "mcpServers.m.env.K", `config: mcpServers.m.env.K: malformed secret reference "${secret:}": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		{"unterminated reference", `{"mcpServers": {"m": {"command": "${secret:abc"}}}`, "mcpServers.m.command", `config: mcpServers.m.command: unterminated secret reference "${secret:abc"; write ${secret:NAME}`},
		{"secret name with a space", `{"mcpServers": {"m": {"command": "x", "args": ["${secret:my token}"]}}}`, "mcpServers.m.args[0]", `config: mcpServers.m.args[0]: malformed secret reference "${secret:my token}": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		{"secret name too long", `{"mcpServers": {"m": {"command": "x", "args": ["${secret:` + long + `}"]}}}`, "mcpServers.m.args[0]", `config: mcpServers.m.args[0]: malformed secret reference "${secret:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		{"unset variable", `{"mcpServers": {"v": {"url": "https://x.example", "headers": {"Authorization": "Bearer ${MAVEN_TEST_UNSET}"}}}}`, "mcpServers.v.headers.Authorization", "config: mcpServers.v.headers.Authorization: ${MAVEN_TEST_UNSET} is not set in the daemon's environment; set it, or write ${MAVEN_TEST_UNSET:-default}, or, for a credential, seal it with `maven secret set maven_test_unset` and write ${secret:maven_test_unset}"},
		{"unset env-style variable", `{"mcpServers": {"m": {"command": "x", "env": {"T": "${env:MAVEN_TEST_UNSET}"}}}}`, "mcpServers.m.env.T", `config: mcpServers.m.env.T: ${MAVEN_TEST_UNSET} is not set in the daemon's environment; set it, or write ${MAVEN_TEST_UNSET:-default}`},
		{"secret on the command line", `{"mcpServers": {"m": {"command": "srv", "args": ["--token=${secret:tok}"]}}}`, "mcpServers.m.args[0]", `config: mcpServers.m.args[0]: ${secret:tok} would put the secret on the command line, which every local user can read; pass it through env instead ("env": {"TOK": "${secret:tok}"}), and if the program wants it as an argument, write ${TOK} there: a variable the server's own env sets is left for the server to expand, as mcp-remote does`},
		{"secret as the command", `{"mcpServers": {"m": {"command": "${secret:bin}"}}}`, "mcpServers.m.command", `config: mcpServers.m.command: ${secret:bin} would put the secret on the command line, which every local user can read; pass it through env instead ("env": {"BIN": "${secret:bin}"}), and if the program wants it as an argument, write ${BIN} there: a variable the server's own env sets is left for the server to expand, as mcp-remote does`},
		{"type in capitals", `{"mcpServers": {"m": {"type": "HTTP", "url": "https://x.example"}}}`, "mcpServers.m.type", `config: mcpServers.m.type: expected one of "stdio", "http", "sse", got "HTTP" (did you mean "http"?)`},
		{"malformed reference in url", `{"mcpServers": {"m": {"url": "https://x.example/mcp?token=${secret:}"}}}`, "mcpServers.m.url", `config: mcpServers.m.url: malformed secret reference "${secret:}": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		{"reference in a dotted server", `{"mcpServers": {"a.b": {"command": "x", "args": ["${secret:"]}}}`, `mcpServers["a.b"].args[0]`, `config: mcpServers["a.b"].args[0]: unterminated secret reference "${secret:"; write ${secret:NAME}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want error %q", c, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			if ce.Key != tt.wantKey {
				t.Errorf("Key = %q, want %q", ce.Key, tt.wantKey)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %s\nwant    %s", err, tt.want)
			}
		})
	}
}

func TestSyntaxErrorUnwraps(t *testing.T) {
	_, err := Parse([]byte(`{"listen"}`))
	var ce *Error
	if !errors.As(err, &ce) || ce.Err == nil {
		t.Fatalf("Parse error = %#v, want an *Error with a cause", err)
	}
}

func TestOriginsDerivedFromListen(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"default", `{}`, []string{"http://localhost:8080"}},
		{"other port", `{"listen": "127.0.0.1:9090"}`, []string{"http://localhost:9090"}},
		{"all interfaces", `{"listen": ":7000"}`, []string{"http://localhost:7000"}},
		{"IPv6 loopback", `{"listen": "[::1]:8443"}`, []string{"http://localhost:8443"}},
		{"explicit origins win", `{"listen": "127.0.0.1:9090", "origins": ["https://localhost:9443"]}`, []string{"https://localhost:9443"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Origins); diff != "" {
				t.Errorf("Origins mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetListen(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		addr        string
		wantOrigins []string
		wantErr     string
	}{
		{"derived origins follow", `{"listen": "127.0.0.1:9090"}`, "127.0.0.1:7777", []string{"http://localhost:7777"}, ""},
		{"explicit origins stay", `{"origins": ["http://localhost:8080"]}`, "127.0.0.1:7777", []string{"http://localhost:8080"}, ""},
		{"bad address refused", `{}`, "nonsense", []string{"http://localhost:8080"}, `config: listen: expected host:port such as "127.0.0.1:8080", got "nonsense"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = c.SetListen(tt.addr)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("SetListen error = %v, want %s", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("SetListen: %v", err)
			} else if c.Listen != tt.addr {
				t.Errorf("Listen = %q, want %q", c.Listen, tt.addr)
			}
			if diff := cmp.Diff(tt.wantOrigins, c.Origins); diff != "" {
				t.Errorf("Origins mismatch (-want +got):\n%s", diff)
			}
			if err := errorsOf(c.validate()); err != nil {
				t.Errorf("validate after SetListen: %v", err)
			}
		})
	}
}

func TestValidateBuiltConfig(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string
	}{
		{"default is valid", func(*Config) {}, ""},
		{"server name mismatch", func(c *Config) {
			c.MCPServers = map[string]Server{"a": {Name: "b", Type: TransportStdio, Command: "x"}}
		}, `config: mcpServers.a: the server's Name is "b" but it is listed as "a"`},
		{"server without type", func(c *Config) {
			c.MCPServers = map[string]Server{"a": {Name: "a", Command: "x"}}
		}, `config: mcpServers.a.type: expected one of "stdio", "http", "sse", got an empty string`},
		{"invalid proxy prefix", func(c *Config) {
			c.TrustedProxies = []netip.Prefix{{}}
		}, `config: trusted_proxies[0]: expected an IP address or CIDR prefix`},
		{"unmasked proxy prefix", func(c *Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}
		}, `config: trusted_proxies[0]: 10.1.2.3/8 has bits set past the prefix length; did you mean 10.0.0.0/8?`},
		{"rp_id changed in code with derived origins", func(c *Config) {
			c.RPID = "maven.example"
		}, `config: origins: required when rp_id is not "localhost"; list the origins the browser uses, such as ["https://maven.example"]`},
		{"zero config", func(c *Config) { *c = Config{} }, `config: 4 errors:
  listen: expected host:port such as "127.0.0.1:8080", got an empty string
  rp_id: expected a domain name such as "localhost" or "maven.example", got an empty string
  refresh_interval: expected at least 1s, got 0s
  step_up_window: expected a duration above 0 and at most 1h, got 0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.modify(&c)
			err := errorsOf(c.validate())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("validate() = %v\nwant         %s", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", designExample)
	bad := write("bad.json", `{"tools": [{"name": "x", "argv": []}]}`)
	missing := filepath.Join(dir, "missing.json")

	t.Run("valid file", func(t *testing.T) {
		c, err := Load(good, os.Getenv)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if len(c.MCPServers) != 2 || len(c.Tools) != 1 {
			t.Errorf("Load = %+v", c)
		}
	})
	t.Run("invalid file names the path and the key", func(t *testing.T) {
		_, err := Load(bad, os.Getenv)
		want := "config: " + bad + ": tools[0].argv: expected a non-empty list of strings"
		if err == nil || err.Error() != want {
			t.Fatalf("Load error = %v, want %s", err, want)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.File != bad || ce.Key != "tools[0].argv" {
			t.Errorf("Load error = %#v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(missing, os.Getenv)
		want := "config: " + missing + ": cannot read: no such file or directory"
		if err == nil || err.Error() != want {
			t.Fatalf("Load error = %v, want %s", err, want)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.File != missing {
			t.Errorf("Load error = %#v, want an *Error with File", err)
		}
	})
}

func TestMetricsKey(t *testing.T) {
	cfg, err := Parse([]byte(`{"metrics": true}`))
	if err != nil || !cfg.Metrics {
		t.Fatalf("%v %v", cfg.Metrics, err)
	}
	if _, err := Parse([]byte(`{"metrics": "yes"}`)); err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Fatalf("a non-boolean metrics: %v", err)
	}
	if cfg := Default(); cfg.Metrics {
		t.Fatal("metrics must be off unless configured")
	}
}
