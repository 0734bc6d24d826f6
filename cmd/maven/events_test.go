package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

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
