package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretList drives `maven secret list` against the real binary: the names the config
// refers to and the servers using each while locked, then which are sealed and which are
// missing once unlocked; never a value.
func TestSecretList(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")
	conf := `{"mcpServers": {
		"tasks": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}},
		"notes": {"url": "http://127.0.0.1:1/mcp?key=${secret:tok}"},
		"github": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${secret:gh}"}}}}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	code := createVaultOffline(t, data)
	d := startDaemon(t, data, "--config", cfg)

	list := func() secretListResult {
		t.Helper()
		out, err := maven(t, data, "secret", "list", "--json")
		var res secretListResult
		if err != nil || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("secret list --json: %v %s", err, out)
		}
		return res
	}
	locked := list()
	if !locked.Locked || len(locked.Secrets) != 2 || locked.Secrets[0].Name != "gh" || locked.Secrets[0].Sealed != nil ||
		strings.Join(locked.Secrets[1].Servers, ",") != "notes,tasks" {
		t.Fatalf("while locked: %+v", locked)
	}
	if out, _ := maven(t, data, "secret", "list"); !strings.Contains(out, "Maven is locked") {
		t.Fatalf("secret list while locked:\n%s", out)
	}

	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("unlock: %d", resp.StatusCode)
	}
	for name, value := range map[string]string{"tok": "value-of-tok", "spare": "value-of-spare"} {
		if out, err := secretSet(t, data, name, value); err != nil {
			t.Fatalf("secret set %s: %v %s", name, err, out)
		}
	}
	open := list()
	sealed := map[string]string{}
	for _, s := range open.Secrets {
		if s.Sealed == nil {
			t.Fatalf("unlocked, %s has no sealed state", s.Name)
		}
		sealed[s.Name] = map[bool]string{true: "yes", false: "no"}[*s.Sealed] + " " + strings.Join(s.Servers, ",")
	}
	if open.Locked || sealed["tok"] != "yes notes,tasks" || sealed["gh"] != "no github" || sealed["spare"] != "yes " || len(sealed) != 3 {
		t.Fatalf("unlocked: %v", sealed)
	}
	human, err := maven(t, data, "secret", "list")
	if err != nil || !strings.Contains(human, "Missing: gh.") || strings.Contains(human, "value-of") {
		t.Fatalf("secret list:\n%s", human)
	}
}
