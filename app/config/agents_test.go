package config

import (
	"strings"
	"testing"
	"time"
)

// TestParseAgents: the agents block of docs/design.md#config is read as written; without it
// both durations are zero, which the pending calls read as their defaults.
func TestParseAgents(t *testing.T) {
	cfg, err := Parse([]byte(`{"agents": {"approval_wait": "5s", "approval_ttl": "10m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents != (Agents{ApprovalWait: 5 * time.Second, ApprovalTTL: 10 * time.Minute}) {
		t.Errorf("agents %+v", cfg.Agents)
	}
	empty, err := Parse([]byte(`{}`))
	if err != nil || empty.Agents != (Agents{}) {
		t.Errorf("no agents block: %+v %v", empty.Agents, err)
	}
}

// TestParseAgentsErrors: every mistake in the agents block names its key.
func TestParseAgentsErrors(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"agents": []}`, "agents: expected an object"},
		{`{"agents": {"approval_wiat": "8s"}}`, `unknown key "agents.approval_wiat" (did you mean "approval_wait"?)`},
		{`{"agents": {"approval_wait": 8}}`, "agents.approval_wait: expected"},
		{`{"agents": {"approval_wait": "0s"}}`, "agents.approval_wait: expected a duration above 0 and at most 1m, got 0s"},
		{`{"agents": {"approval_wait": "2m"}}`, "agents.approval_wait: expected a duration above 0 and at most 1m"},
		{`{"agents": {"approval_ttl": "1s"}}`, "agents.approval_ttl: expected a duration from 10s to 24h, got 1s"},
		{`{"agents": {"approval_ttl": "soon"}}`, "agents.approval_ttl: expected"},
		{`{"agents": {"approval_wait": "30s", "approval_ttl": "20s"}}`, "agents.approval_wait: expected less than approval_ttl (20s), got 30s"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
}
