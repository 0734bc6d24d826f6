package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"maven/app/allowlist"
)

// TestWithdrawnMCPNameDoesNotBlockBoot is issue 10 item 9 against the real binary: a config
// command named like an MCP tool withdrawn long ago used to stop the daemon from starting. Now
// the daemon starts, proposes the other config tools, and names the clash, with what to do about
// it, in its log and in `maven status`.
func TestWithdrawnMCPNameDoesNotBlockBoot(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	withAllowlist(t, data, func(svc *allowlist.Service) {
		ctx := context.Background()
		row, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: "uptime", Cmd: []string{"mcp", "sysinfo", "uptime"},
			Scope: allowlist.MCPScope("sysinfo"), Source: allowlist.SourceDiscovery, Destructive: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Update(ctx, func(tx *allowlist.Tx) error {
			_, err := tx.Withdraw(ctx, row.ID, "discovery", "the server stopped listing it")
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
	cfg := filepath.Join(dir, "maven.json")
	conf := `{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}, {"name": "date", "argv": ["/bin/date"]}],
		"mcpServers": {"m": {"command": "npx", "args": ["-y", "x"], "autoApprove": ["all"]}}}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, data, "--config", cfg)

	out, err := maven(t, data, "status", "--json")
	if err != nil {
		t.Fatalf("status: %v %s", err, out)
	}
	var st statusResult
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.ConfigProblems) != 2 {
		t.Fatalf("config problems: %+v", st.ConfigProblems)
	}
	clash, warning := st.ConfigProblems[0], st.ConfigProblems[1]
	if clash.Level != "error" || clash.Key != "tools[0].name" || !strings.Contains(clash.Msg, "mcp:sysinfo, withdrawn") ||
		!strings.Contains(clash.Msg, "Give the config tool another name") {
		t.Errorf("the clash: %+v", clash)
	}
	if warning.Level != "warning" || warning.Key != "mcpServers.m.autoApprove" {
		t.Errorf("the warning: %+v", warning)
	}
	if !strings.Contains(d.stderr.String(), `level=ERROR msg="config: \"uptime\" was not proposed`) {
		t.Errorf("the clash is not in the log:\n%s", d.stderr.String())
	}
	human, err := maven(t, data, "status")
	if err != nil || !strings.Contains(human, "config error: tools[0].name: ") {
		t.Errorf("maven status: %v\n%s", err, human)
	}

	rows := map[string]toolResult{}
	for _, r := range toolsJSON(t, data) {
		rows[r.Scope+" "+r.Name] = r
	}
	if rows["local date"].State != "proposed" || rows["mcp:sysinfo uptime"].State != "withdrawn" || len(rows) != 2 {
		t.Errorf("rows: %+v", rows)
	}
}
