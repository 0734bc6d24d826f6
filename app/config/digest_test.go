package config_test

import (
	"strings"
	"testing"

	"maven/app/config"
	"maven/app/mcp"
)

// TestApprovedCommandLineCoversExpandedVariables: ${VAR} is read when the file is, so the
// command line the owner approves (mcp.StdioCommand's display and digest) is the one that runs,
// and a changed value is a new command line that asks for approval again.
func TestApprovedCommandLineCoversExpandedVariables(t *testing.T) {
	const doc = `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT}"],
		"env": {"LOG_LEVEL": "${LOG_LEVEL:-info}"}}}}`
	commandLine := func(env map[string]string) (string, string) {
		t.Helper()
		cfg, err := config.ParseEnv([]byte(doc), func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return mcp.StdioCommand(cfg.MCPServers["fs"])
	}
	display, digest := commandLine(map[string]string{"ROOT": "/srv/notes"})
	if !strings.Contains(display, "/srv/notes") || !strings.Contains(display, "LOG_LEVEL=info") {
		t.Fatalf("the owner is not shown the values that run:\n%s", display)
	}
	if _, again := commandLine(map[string]string{"ROOT": "/srv/notes"}); again != digest {
		t.Fatal("the same environment gave another digest")
	}
	for name, env := range map[string]map[string]string{
		"another directory": {"ROOT": "/"},
		"a default set":     {"ROOT": "/srv/notes", "LOG_LEVEL": "debug"},
	} {
		if _, changed := commandLine(env); changed == digest {
			t.Errorf("%s: the digest did not change, so the new command line would start unapproved", name)
		}
	}
}
