package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOAuthKey: a remote server's pre-registered client is read, its secret is a secret
// reference like a header's (the server stays locked until unlock), and every mistake names
// its key.
func TestOAuthKey(t *testing.T) {
	cfg, err := ParseEnv([]byte(`{"mcpServers": {"tasks": {"type": "http", "url": "https://tasks.example/mcp",
		"oauth": {"client_id": "maven-${ENV_SUFFIX}", "client_secret": "${secret:tasks_client}", "scopes": ["read", "tasks:write"]}}}}`),
		func(string) string { return "home" })
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers["tasks"]
	want := &OAuth{ClientID: "maven-home", ClientSecret: "${secret:tasks_client}", Scopes: []string{"read", "tasks:write"}}
	if d := cmp.Diff(want, s.OAuth); d != "" {
		t.Fatalf("oauth (-want +got):\n%s", d)
	}
	if !s.NeedsSecrets() || !cmp.Equal(s.SecretRefs(), []string{"tasks_client"}) {
		t.Fatalf("secret refs %v: the client secret's reference must count", s.SecretRefs())
	}
	x, err := s.Expanded(secrets(map[string]string{"tasks_client": "s3cr3t"}))
	if err != nil || x.OAuth.ClientSecret != "s3cr3t" || s.OAuth.ClientSecret != "${secret:tasks_client}" {
		t.Fatalf("expanded %+v %v; configured %+v", x.OAuth, err, s.OAuth)
	}
	x.OAuth.Scopes[0] = "changed"
	if s.OAuth.Scopes[0] != "read" {
		t.Fatal("the expanded copy shares its scopes with the configured server")
	}

	// A secret in the clear is accepted with a warning.
	cfg, err = Parse([]byte(`{"mcpServers": {"t": {"url": "https://t.example/mcp", "oauth": {"client_id": "c", "client_secret": "plain"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || cfg.Warnings[0].Key != "mcpServers.t.oauth.client_secret" {
		t.Fatalf("warnings %+v: want one about the secret in the clear", cfg.Warnings)
	}

	bad := []struct{ in, want string }{
		{`{"client_secret": "x"}`, `mcpServers.t.oauth.client_id: required`},
		{`{"client_id": "${secret:id}"}`, `mcpServers.t.oauth.client_id: a client id is not secret`},
		{`{"client_id": "c", "scopes": ["ok", "two words"]}`, `mcpServers.t.oauth.scopes[1]: expected a scope such as "read", got "two words"`},
		{`{"client_id": "c", "scope": "x"}`, `unknown key "mcpServers.t.oauth.scope" (did you mean "scopes"?)`},
		{`"c"`, `mcpServers.t.oauth: expected an object`},
	}
	for _, b := range bad {
		_, err := Parse([]byte(`{"mcpServers": {"t": {"url": "https://t.example/mcp", "oauth": ` + b.in + `}}}`))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("oauth %s: error %v, want %q", b.in, err, b.want)
		}
	}
	// A reload names the key that changed.
	changed := Server{Type: TransportHTTP, URL: "https://t.example/mcp", OAuth: &OAuth{ClientID: "c", Scopes: []string{"a"}}}
	if keys := changed.ChangedKeys(Server{Type: TransportHTTP, URL: "https://t.example/mcp", OAuth: &OAuth{ClientID: "c", Scopes: []string{"b"}}}); !cmp.Equal(keys, []string{"oauth"}) {
		t.Errorf("changed keys %v, want oauth", keys)
	}

	_, err = Parse([]byte(`{"mcpServers": {"m": {"command": "x", "oauth": {"client_id": "c"}}}}`))
	if err == nil || !strings.Contains(err.Error(), `mcpServers.m.oauth: not allowed for a server of type "stdio"`) {
		t.Errorf("oauth on a stdio server: %v", err)
	}
}
