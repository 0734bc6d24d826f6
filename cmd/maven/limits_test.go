package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
	"maven/app/mcp/mcptest"
	"maven/db"
)

const thermostatSchema = `{"type":"object","properties":{"temperature":{"type":"number","minimum":5,"maximum":35},` +
	`"mode":{"type":"string","enum":["heat","cool","off"]}},"required":["temperature"]}`

// saveLimitsOffline saves set as row id's limits with the daemon stopped, as the owner's
// passkey step-up on /tools would.
func saveLimitsOffline(t *testing.T, data string, id int64, set string) {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	row, err := rows.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var s limits.Set
	if err := json.Unmarshal([]byte(set), &s); err != nil {
		t.Fatal(err)
	}
	digest, err := limits.Digest(row.Fingerprint, s)
	if err != nil {
		t.Fatal(err)
	}
	svc := limits.NewService(db.NewLimitsStore(bdb), rows, time.Now)
	if _, err := svc.Save(ctx, id, row.Fingerprint, s, authtest.Proof(t, auth.One(auth.ActionSetLimits, id, digest))); err != nil {
		t.Fatal(err)
	}
}

// TestToolsJSONShowsTheLimits: `maven tools --json` shows a row's saved limits as JSON Schema
// keywords with the run-without-asking choice, the fingerprint they were saved for and whether
// they are in force; a redefinition leaves them shown as void (docs/design.md#rule-33). A row
// without limits has no "limits" key.
func TestToolsJSONShowsTheLimits(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	remote := mcptest.NewScripted(
		mcptest.ToolSpec{Name: "set_temperature", Description: "Sets the thermostat", InputSchema: json.RawMessage(thermostatSchema), Echo: true},
		mcptest.ToolSpec{Name: "read_temperature", Description: "Reads the thermostat", ReadOnly: true, Text: "20"},
	)
	defer remote.Close()
	srv := serveScripted(t, remote, "127.0.0.1:0")
	cfg := filepath.Join(dir, "maven.json")
	c := fmt.Sprintf(`{"refresh_interval": "1s", "mcpServers": {"home": {"type": "http", "url": "http://%s/mcp"}}}`, srv.addr)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, data, "--config", cfg)
	var rows map[string]toolResult
	waitFor(t, 15*time.Second, func() bool { rows = toolsByCmd(t, data); return len(rows) == 2 })
	d.stop(t)
	set, read := rows["mcp home set_temperature"], rows["mcp home read_temperature"]
	enableOffline(t, data, set.ID, read.ID)
	saveLimitsOffline(t, data, set.ID, `{"properties":{"temperature":{"minimum":17,"maximum":23},"mode":{"enum":["heat"]}},"run_without_asking":true}`)

	startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool { return mcpServers(t, data)["home"].State == "connected" })
	out, err := maven(t, data, "tools", "--json")
	if err != nil {
		t.Fatalf("tools --json: %v %s", err, out)
	}
	var got []struct {
		Cmd    []string        `json:"cmd"`
		Limits json.RawMessage `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	byCmd := map[string]json.RawMessage{}
	for _, r := range got {
		byCmd[fmt.Sprint(r.Cmd)] = r.Limits
	}
	if l := byCmd["[mcp home read_temperature]"]; l != nil {
		t.Errorf("a row without limits shows %s", l)
	}
	var shown struct {
		Properties       map[string]map[string]any `json:"properties"`
		RunWithoutAsking bool                      `json:"run_without_asking"`
		InForce          bool                      `json:"in_force"`
		Fingerprint      string                    `json:"fingerprint"`
		SavedBy          string                    `json:"saved_by"`
	}
	if err := json.Unmarshal(byCmd["[mcp home set_temperature]"], &shown); err != nil {
		t.Fatalf("limits %s: %v", byCmd["[mcp home set_temperature]"], err)
	}
	temp, mode := shown.Properties["temperature"], shown.Properties["mode"]
	if temp["minimum"] != 17.0 || temp["maximum"] != 23.0 || len(temp) != 2 || fmt.Sprint(mode["enum"]) != "[heat]" ||
		!shown.RunWithoutAsking || !shown.InForce || shown.Fingerprint != *set.Fingerprint || shown.SavedBy == "" {
		t.Errorf("limits shown: %+v", shown)
	}

	// A redefinition voids them with the approval: still shown, no longer in force.
	remote.Redefine(mcptest.ToolSpec{Name: "set_temperature", Description: "Sets the thermostat, and the boiler's", InputSchema: json.RawMessage(thermostatSchema), Echo: true})
	waitFor(t, 10*time.Second, func() bool { return toolsByCmd(t, data)["mcp home set_temperature"].State == "proposed" })
	r := toolsByCmd(t, data)["mcp home set_temperature"]
	if r.Limits == nil || r.Limits.InForce || r.Limits.Fingerprint == *r.Fingerprint {
		t.Errorf("after a redefinition: %+v", r.Limits)
	}
}
