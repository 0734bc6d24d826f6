package config

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is an *Error, and that a config it
// accepts stays valid: validate agrees, parsing is deterministic, and every server's secrets can
// be expanded and its target shown.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		designExample,
		`{}`,
		``,
		`[]`,
		`{"listen": ":0", "origins": ["http://localhost:1"], "trusted_proxies": ["::1", "10.0.0.0/8"]}`,
		`{"rp_id": "maven.example", "origins": ["https://maven.example"], "tls_cert": "c", "tls_key": "k"}`,
		`{"tools": [{"name": "a", "argv": ["mcp", "x", "y"]}]}`,
		`{"mcpServers": {"m": {"command": "x", "args": ["${secret:a}", "${secret:"], "env": {"K": "${secret:b}"}}}}`,
		`{"mcpServers": {"v": {"type": "streamableHttp", "url": "https://u:${secret:p}@h.example/mcp?token=${secret:t}", "headers": {"A": "${secret:x}"}}}}`,
		`{"mcpServers": {"a.b": {"type": "sse", "url": "http://[::1]:1/sse"}, "c": {"command": "y", "disabled": true}}}`,
		`{"a": 1, "a": 2}`,
		`{"mcpServers": {"m": {"command": "x", "command": "y"}}}`,
		"{\n\"refresh_interval\": \"1s\",\n}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			return
		}
		if err := errorsOf(cfg.validate()); err != nil {
			t.Fatalf("Parse accepted a config that validate refuses: %v", err)
		}
		again, err := Parse(data)
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
		for name, s := range cfg.MCPServers {
			refs := s.SecretRefs()
			if !slices.IsSorted(refs) || len(slices.Compact(slices.Clone(refs))) != len(refs) {
				t.Fatalf("%s: SecretRefs() = %q, want sorted and unique", name, refs)
			}
			if _, err := s.Expanded(func(string) ([]byte, bool) { return []byte("v"), true }); err != nil {
				t.Fatalf("%s: Expanded with every secret set: %v", name, err)
			}
			if s.NeedsSecrets() {
				if _, err := s.Expanded(func(string) ([]byte, bool) { return nil, false }); !errors.Is(err, ErrSecretNotSet) {
					t.Fatalf("%s: Expanded without secrets = %v, want ErrSecretNotSet", name, err)
				}
			}
			if (s.Type == TransportHTTP || s.Type == TransportSSE) && s.Target() == "(invalid URL)" {
				t.Fatalf("%s: Target() of the valid URL %q is invalid", name, s.URL)
			}
		}
	})
}
