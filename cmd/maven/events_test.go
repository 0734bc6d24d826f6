package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
)

// TestEventsRecordLocksAndUnlocks drives the real binary: an unlock from the phone and a
// `maven lock` are in `maven events`, once each, however often the vault's hooks run.
func TestEventsRecordLocksAndUnlocks(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	code := createVaultOffline(t, data)
	d := startDaemon(t, data)
	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		t.Fatalf("recovery unlock: %d", resp.StatusCode)
	}
	if out, err := secretSet(t, data, "tok", "tk-42"); err != nil { // runs the unlock hooks again
		t.Fatalf("%v %s", err, out)
	}
	for range 2 {
		if out, err := maven(t, data, "lock"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	out, err := maven(t, data, "events", "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var events []activity.Entry
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var actions []string
	for _, e := range events {
		if e.Action == activity.ActionLocked || e.Action == activity.ActionUnlocked {
			actions = append(actions, e.Action)
		}
	}
	if strings.Join(actions, " ") != "locked unlocked" {
		t.Fatalf("lock events, newest first: %v\n%s", actions, out)
	}
}

// TestEventsRecordTheCLIsSecurityEvents drives the real binary: `maven secret set` and `maven
// setup-link` are in `maven events`, by the CLI, naming the secret and when the link expires,
// never the secret's value or the link's token.
func TestEventsRecordTheCLIsSecurityEvents(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	code := createVaultOffline(t, data)
	d := startDaemon(t, data)
	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		t.Fatalf("recovery unlock: %d", resp.StatusCode)
	}
	if out, err := secretSet(t, data, "tok", "tk-value-42"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	link := newSetupLink(t, data)
	out, err := maven(t, data, "events", "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var events []activity.Entry
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	found := map[string]map[string]any{}
	for _, e := range events {
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			t.Fatal(err)
		}
		found[e.Actor+" "+e.Action] = detail
	}
	_, token, _ := strings.Cut(link.URL, "token=")
	if found["cli secret_set"]["secret"] != "tok" || found["cli setup_link_issued"]["expires"] != link.ExpiresAt.UTC().Format(time.RFC3339) ||
		found["system setup_link_issued"] == nil || strings.Contains(out, "tk-value-42") || strings.Contains(out, token) {
		t.Fatalf("the CLI's events %v, in\n%s", found, out)
	}
}
