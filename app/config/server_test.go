package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// secrets is a lookup over a fixed set of secrets.
func secrets(m map[string]string) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		v, ok := m[name]
		return []byte(v), ok
	}
}

func TestExpand(t *testing.T) {
	lookup := secrets(map[string]string{
		"tok":     "s3cr3t",
		"a.b-c_1": "X",
		"empty":   "",
		"loop":    "${secret:tok}",
	})
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
		notSet  bool // the error wraps ErrSecretNotSet
	}{
		{name: "no reference", in: "plain $HOME {x} $", want: "plain $HOME {x} $"},
		{name: "whole value", in: "${secret:tok}", want: "s3cr3t"},
		{name: "inside text", in: "Bearer ${secret:tok}!", want: "Bearer s3cr3t!"},
		{name: "adjacent and repeated", in: "${secret:tok}${secret:a.b-c_1}${secret:tok}", want: "s3cr3tXs3cr3t"},
		{name: "empty value", in: "[${secret:empty}]", want: "[]"},
		{name: "values are not expanded again", in: "${secret:loop}", want: "${secret:tok}"},
		{name: "missing secret", in: "a ${secret:tok} ${secret:nope}", wantErr: `config: secret "nope" is not set`, notSet: true},
		{name: "empty name", in: "${secret:}", wantErr: `config: malformed secret reference "${secret:}": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		{name: "unterminated", in: "x ${secret:abc", wantErr: `config: unterminated secret reference "${secret:abc"; write ${secret:NAME}`},
		{name: "bad character", in: "${secret:a/b}", wantErr: `config: malformed secret reference "${secret:a/b}": the name must be 1 to 64 of A-Z a-z 0-9 _ . -`},
		// Reading the file dealt with every other "${": what is left is text for the server.
		{name: "a variable the server expands", in: "Bearer ${TOKEN}", want: "Bearer ${TOKEN}"},
		{name: "lone opener", in: "cost ${", want: "cost ${"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.in, lookup)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Expand: %v", err)
				}
				if got != tt.want {
					t.Errorf("Expand = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Expand error = %v, want %s", err, tt.wantErr)
			}
			if errors.Is(err, ErrSecretNotSet) != tt.notSet {
				t.Errorf("errors.Is(err, ErrSecretNotSet) = %v, want %v", !tt.notSet, tt.notSet)
			}
		})
	}
}

func TestSecretRefs(t *testing.T) {
	tests := []struct {
		name string
		s    Server
		want []string
	}{
		{"none", Server{Type: TransportStdio, Command: "npx", Args: []string{"-y", "x"}}, nil},
		{
			"stdio: command, args and env values, sorted and deduplicated",
			Server{
				Type:    TransportStdio,
				Command: "${secret:cmd}",
				Args:    []string{"--token=${secret:zeta}", "${secret:alpha}${secret:zeta}"},
				Env:     map[string]string{"A": "${secret:alpha}", "B": "x-${secret:env.key}"},
				Cwd:     "/srv",
			},
			[]string{"alpha", "cmd", "env.key", "zeta"},
		},
		{
			"http: url and header values, never header names",
			Server{
				Type:    TransportHTTP,
				URL:     "https://u:${secret:pw}@x.example/mcp?k=${secret:q}",
				Headers: map[string]string{"Authorization": "Bearer ${secret:tok}", "X-Plain": "1"},
			},
			[]string{"pw", "q", "tok"},
		},
		{
			"allow_tools are not secret-bearing",
			Server{Type: TransportStdio, Command: "x", AllowTools: []string{"${secret:nope}"}},
			nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.SecretRefs()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SecretRefs mismatch (-want +got):\n%s", diff)
			}
			if tt.s.NeedsSecrets() != (len(tt.want) > 0) {
				t.Errorf("NeedsSecrets = %v, want %v", tt.s.NeedsSecrets(), len(tt.want) > 0)
			}
		})
	}
}

func TestServerExpanded(t *testing.T) {
	c, err := Parse([]byte(`{"mcpServers": {
		"local": {"command": "/opt/srv", "args": ["--key", "${TOKEN}"],
			"env": {"TOKEN": "${secret:k}", "MODE": "${secret:mode}"}, "allow_tools": ["a"]},
		"remote": {"type": "sse", "url": "https://x.example/sse?key=${secret:k}",
			"headers": {"Authorization": "Bearer ${secret:tok}"}}
	}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	all := secrets(map[string]string{"mode": "ro", "k": "KEY", "tok": "TOK"})

	t.Run("stdio", func(t *testing.T) {
		orig := c.MCPServers["local"]
		got, err := orig.Expanded(all)
		if err != nil {
			t.Fatalf("Expanded: %v", err)
		}
		want := Server{
			Name: "local", Type: TransportStdio, Command: "/opt/srv", Args: []string{"--key", "${TOKEN}"},
			Env: map[string]string{"TOKEN": "KEY", "MODE": "ro"}, AllowTools: []string{"a"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Expanded mismatch (-want +got):\n%s", diff)
		}
		// The copy must not share storage with the configured server.
		got.Args[1], got.Env["MODE"], got.AllowTools[0] = "changed", "changed", "changed"
		if orig.Args[1] != "${TOKEN}" || orig.Env["MODE"] != "${secret:mode}" || orig.AllowTools[0] != "a" {
			t.Errorf("Expanded shares storage with the original: %+v", orig)
		}
	})
	t.Run("sse", func(t *testing.T) {
		got, err := c.MCPServers["remote"].Expanded(all)
		if err != nil {
			t.Fatalf("Expanded: %v", err)
		}
		if got.URL != "https://x.example/sse?key=KEY" || got.Headers["Authorization"] != "Bearer TOK" {
			t.Errorf("Expanded = %+v", got)
		}
		if target := c.MCPServers["remote"].Target(); target != "https://x.example/sse?key=***" {
			t.Errorf("Target = %q", target)
		}
	})
	t.Run("missing secret names the key", func(t *testing.T) {
		_, err := c.MCPServers["remote"].Expanded(secrets(map[string]string{"k": "KEY"}))
		want := `config: mcpServers.remote.headers.Authorization: secret "tok" is not set`
		if err == nil || err.Error() != want {
			t.Fatalf("Expanded error = %v, want %s", err, want)
		}
		var ce *Error
		if !errors.Is(err, ErrSecretNotSet) || !errors.As(err, &ce) || ce.Key != "mcpServers.remote.headers.Authorization" {
			t.Errorf("Expanded error = %#v", err)
		}
	})
	t.Run("first missing secret in key order", func(t *testing.T) {
		_, err := c.MCPServers["local"].Expanded(secrets(nil))
		want := `config: mcpServers.local.env.MODE: secret "mode" is not set`
		if err == nil || err.Error() != want {
			t.Fatalf("Expanded error = %v, want %s", err, want)
		}
	})
}

func TestTarget(t *testing.T) {
	tests := []struct {
		name string
		s    Server
		want string
	}{
		// stdio: the command line, references shown as written.
		{"stdio plain", Server{Type: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}},
			"npx -y @modelcontextprotocol/server-memory"},
		{"stdio without args", Server{Type: TransportStdio, Command: "/usr/local/bin/mcp-time"}, "/usr/local/bin/mcp-time"},
		{"stdio secret stays a reference", Server{Type: TransportStdio, Command: "srv", Args: []string{"--token", "${secret:tok}"},
			Env: map[string]string{"K": "${secret:k}"}}, "srv --token ${secret:tok}"},
		{"stdio quotes ambiguous arguments", Server{Type: TransportStdio, Command: "sh", Args: []string{"-c", "rm -rf /tmp/x", ""}},
			`sh -c "rm -rf /tmp/x" ""`},
		{"stdio shows invisible characters", Server{Type: TransportStdio, Command: "run", Args: []string{"safe\u202etxt.exe", "tab\there"}},
			`run "safe\u202etxt.exe" "tab\there"`},

		// http and sse: credentials masked.
		{"http plain", Server{Type: TransportHTTP, URL: "https://tasks.example/mcp"}, "https://tasks.example/mcp"},
		{"sse with port and path", Server{Type: TransportSSE, URL: "http://127.0.0.1:3000/v1/sse"}, "http://127.0.0.1:3000/v1/sse"},
		{"IPv6 host", Server{Type: TransportHTTP, URL: "http://[::1]:8931/mcp"}, "http://[::1]:8931/mcp"},
		{"user and password", Server{Type: TransportHTTP, URL: "https://alice:hunter2@mcp.example/mcp"}, "https://***@mcp.example/mcp"},
		{"user only", Server{Type: TransportHTTP, URL: "https://alice@mcp.example/mcp"}, "https://***@mcp.example/mcp"},
		{"password from a secret", Server{Type: TransportHTTP, URL: "https://bot:${secret:pw}@mcp.example/mcp"}, "https://***@mcp.example/mcp"},
		{"secret-named query values", Server{Type: TransportHTTP,
			URL: "https://mcp.example/mcp?token=abc&Key=k1&secret=s&password=p&auth=a&sig=x&signature=y&api_key=1&apikey=2&access_token=3&region=eu"},
			"https://mcp.example/mcp?token=***&Key=***&secret=***&password=***&auth=***&sig=***&signature=***&api_key=***&apikey=***&access_token=***&region=eu"},
		{"name matching is by fragment and case-insensitive", Server{Type: TransportHTTP,
			URL: "https://s3.example/mcp?X-Amz-Signature=abc&accessToken=t&client_secret=c&X-Amz-Date=20260101&page=2"},
			"https://s3.example/mcp?X-Amz-Signature=***&accessToken=***&client_secret=***&X-Amz-Date=20260101&page=2"},
		{"escaped parameter name", Server{Type: TransportHTTP, URL: "https://mcp.example/mcp?api%5Fkey=abc"}, "https://mcp.example/mcp?api%5Fkey=***"},
		{"parameter without a value", Server{Type: TransportHTTP, URL: "https://mcp.example/mcp?token&x=1"}, "https://mcp.example/mcp?token&x=1"},
		{"secret reference in a masked value", Server{Type: TransportHTTP, URL: "https://mcp.example/mcp?token=${secret:t}"}, "https://mcp.example/mcp?token=***"},
		{"secret reference elsewhere shown as written", Server{Type: TransportHTTP, URL: "https://hooks.example/${secret:hook}/mcp?team=${secret:team}"},
			"https://hooks.example/${secret:hook}/mcp?team=${secret:team}"},
		{"everything at once", Server{Type: TransportSSE, URL: "HTTPS://u:p@mcp.example:8443/a%20b/sse?apiKey=${secret:k}&v=2"},
			"https://***@mcp.example:8443/a%20b/sse?apiKey=***&v=2"},
		{"unparsable URL never shown", Server{Type: TransportHTTP, URL: "https://user:hunter2@[bad/mcp"}, "(invalid URL)"},
		{"malformed reference never shown", Server{Type: TransportHTTP, URL: "https://x.example/?t=${secret:"}, "(invalid URL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Target(); got != tt.want {
				t.Errorf("Target() = %q\nwant       %q", got, tt.want)
			}
		})
	}
}
