package config_test

import (
	"fmt"
	"strings"
	"testing"

	"maven/app/config"
)

// hundredServers is a config naming 100 http MCP servers, as the boot figure's does.
func hundredServers() []byte {
	var parts []string
	for i := range 100 {
		parts = append(parts, fmt.Sprintf(`"bh%d": {"type": "http", "url": "http://127.0.0.1:%d/mcp"}`, i, 40000+i))
	}
	return []byte(`{"mcpServers": {` + strings.Join(parts, ", ") + `}}`)
}

// BenchmarkParseHundredServers is the config's part of a boot with 100 servers (bench/README.md).
func BenchmarkParseHundredServers(b *testing.B) {
	data := hundredServers()
	for b.Loop() {
		if _, err := config.ParseEnv(data, func(string) string { return "" }); err != nil {
			b.Fatal(err)
		}
	}
}
