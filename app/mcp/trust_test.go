package mcp

import (
	"testing"

	"maven/app/config"
)

func TestTrustOf(t *testing.T) {
	tests := []struct {
		name   string
		server config.Server
		want   string
	}{
		{"stdio", config.Server{Type: config.TransportStdio, Command: "npx"}, TrustLocalProcess},
		{"http localhost", config.Server{Type: config.TransportHTTP, URL: "http://localhost:3000/mcp"}, TrustLoopback},
		{"http LOCALHOST with a trailing dot", config.Server{Type: config.TransportHTTP, URL: "http://LOCALHOST.:3000/mcp"}, TrustLoopback},
		{"https localhost", config.Server{Type: config.TransportHTTP, URL: "https://localhost/mcp"}, TrustLoopback},
		{"127.0.0.1", config.Server{Type: config.TransportSSE, URL: "http://127.0.0.1:8000/sse"}, TrustLoopback},
		{"127.8.9.10 is loopback too", config.Server{Type: config.TransportHTTP, URL: "http://127.8.9.10/mcp"}, TrustLoopback},
		{"::1", config.Server{Type: config.TransportHTTP, URL: "http://[::1]:8080/mcp"}, TrustLoopback},
		{"v4-mapped loopback", config.Server{Type: config.TransportHTTP, URL: "http://[::ffff:127.0.0.1]/mcp"}, TrustLoopback},
		{"https remote", config.Server{Type: config.TransportHTTP, URL: "https://tasks.example/mcp"}, TrustRemoteTLS},
		{"https remote with a secret in the query", config.Server{Type: config.TransportHTTP,
			URL: "https://tasks.example/mcp?token=${secret:tok}"}, TrustRemoteTLS},
		{"https remote with a secret in the userinfo", config.Server{Type: config.TransportHTTP,
			URL: "https://${secret:user}@tasks.example/mcp"}, TrustRemoteTLS},
		{"http remote", config.Server{Type: config.TransportSSE, URL: "http://tasks.example/sse"}, TrustRemotePlaintext},
		{"http on a LAN address", config.Server{Type: config.TransportHTTP, URL: "http://192.168.1.2/mcp"}, TrustRemotePlaintext},
		{"a name that merely starts with localhost", config.Server{Type: config.TransportHTTP,
			URL: "http://localhost.evil.example/mcp"}, TrustRemotePlaintext},
		{"0.0.0.0 is not loopback", config.Server{Type: config.TransportHTTP, URL: "http://0.0.0.0:8080/mcp"}, TrustRemotePlaintext},
		{"unparsable URL takes the lowest level", config.Server{Type: config.TransportHTTP, URL: "http://[::1/mcp"}, TrustRemotePlaintext},
		{"unknown scheme takes the lowest level", config.Server{Type: config.TransportHTTP, URL: "ftp://localhost/mcp"}, TrustRemotePlaintext},
	}
	texts := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, text := TrustOf(tt.server)
			if got != tt.want {
				t.Errorf("TrustOf(%s %q) = %q, want %q", tt.server.Type, tt.server.URL, got, tt.want)
			}
			if text == "" {
				t.Error("trust text is empty")
			}
			if prev, ok := texts[got]; ok && prev != text {
				t.Errorf("level %q has two texts: %q and %q", got, prev, text)
			}
			texts[got] = text
		})
	}
}
