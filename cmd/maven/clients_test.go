package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientCommands drives `maven client` against the real binary: add prints a token once on
// stdout (the database keeps only its hash), refuses a name an approved client has and a tool
// no row is named; list shows the client and its tools, never the token; revoke ends it, and a
// second revoke says it is not approved. (docs/design.md#rule-29)
func TestClientCommands(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	startDaemon(t, data)
	if out, err := maven(t, data, "propose", "hello", "--", "/bin/echo", "hi"); err != nil {
		t.Fatalf("propose: %v %s", err, out)
	}

	cmd := exec.Command(mavenBinary(t), "client", "add", "Claude Code", "--tools", "hello", "--data", data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client add: %v %s", err, stderr.String())
	}
	token := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(token, "mvn_client_") || strings.Contains(token, "\n") || !strings.Contains(stderr.String(), "only time") {
		t.Fatalf("client add printed %q, said %q", stdout.String(), stderr.String())
	}
	for name, args := range map[string][]string{
		"the same name":   {"client", "add", "Claude Code"},
		"an unknown tool": {"client", "add", "desk", "--tools", "nosuch"},
		"a bad name":      {"client", "add", " padded"},
	} {
		out, err := maven(t, data, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: %v %s", name, err, out)
		}
	}
	if out, err := maven(t, data, "client", "list", "--tools", "x"); err == nil || !strings.Contains(out, "--tools goes with client add") {
		t.Errorf("list --tools: %v %s", err, out)
	}

	out, err := maven(t, data, "client", "list", "--json")
	var list []clientResult
	if err != nil || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("client list --json: %v %s", err, out)
	}
	if len(list) != 1 || list[0].ID != "static:Claude Code" || list[0].Kind != "static" || list[0].State != "approved" ||
		list[0].AllTools || len(list[0].Tools) != 1 || list[0].Tools[0].Name != "hello" || list[0].ApprovedAt == nil {
		t.Fatalf("client list = %+v", list)
	}
	if strings.Contains(out, strings.TrimPrefix(token, "mvn_client_")) {
		t.Error("client list shows the token")
	}
	db, err := os.ReadFile(filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(data, "maven.db-wal"))
	if bytes.Contains(append(db, wal...), []byte(strings.TrimPrefix(token, "mvn_client_"))) {
		t.Error("the database holds the token")
	}

	if out, err := maven(t, data, "client", "revoke", "Claude Code"); err != nil || !strings.Contains(out, "is revoked") {
		t.Fatalf("client revoke: %v %s", err, out)
	}
	if out, err := maven(t, data, "client", "revoke", "Claude Code"); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("a second revoke: %v %s", err, out)
	}
	if out, err := maven(t, data, "client", "list"); err != nil || !strings.Contains(out, "static token") || !strings.Contains(out, "revoked") {
		t.Errorf("client list: %v\n%s", err, out)
	}
}
