package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockLeavesNoKeyOrSecretInMemory is docs/design.md#rule-22 against the real binary: with two
// servers using a secret (a header of an http server, the environment of a stdio server),
// `maven lock` must leave neither the data key nor the secret's value in the daemon's memory.
// The test reads /proc/PID/mem the way another process would (CI runs as root, which may read
// any process); a first scan before the lock proves the scan finds both.
func TestLockLeavesNoKeyOrSecretInMemory(t *testing.T) {
	node, memoryServer := npmPeer(t, "mcp-server-memory")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	secret := "mvn-" + rand.Text() + rand.Text()
	remote := newLockedMCP(t, "Bearer "+secret)
	cfg := filepath.Join(dir, "maven.json")
	conf := fmt.Sprintf(`{"mcpServers": {
		"tasks": {"type": "http", "url": "http://%s/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}},
		"memory": {"command": %q, "args": [%q], "env": {"MEMORY_TOKEN": "${secret:tok}"}}}}`,
		remote.addr, node, memoryServer)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, code := startWithSecret(t, data, cfg, "tok", secret)
	dek := recoveryDEK(t, data, code)
	waitFor(t, 20*time.Second, func() bool {
		s := mcpServers(t, data)
		return s["tasks"].State == "connected" && s["memory"].State == "connected"
	})

	pid := d.cmd.Process.Pid
	patterns := map[string][]byte{
		"secret":                   []byte(secret),
		"secret-base64":            []byte(base64.StdEncoding.EncodeToString([]byte(secret))),
		"data key":                 dek,
		"recovery code":            []byte(code),
		"recovery code, canonical": []byte(strings.ReplaceAll(code, "-", "")),
	}
	before, _ := waitForScan(t, pid, patterns, 5*time.Second, func(c map[string]int) bool {
		return c["secret"] > 0 && c["data key"] > 0
	})
	t.Logf("unlocked, two servers using the secret: found %v", before)
	if before["secret"] == 0 || before["data key"] == 0 {
		t.Fatalf("the scan finds neither the secret nor the key while unlocked (%v): it proves nothing", before)
	}

	if out, err := maven(t, data, "lock"); err != nil || !strings.Contains(out, "locked") {
		t.Fatalf("lock: %v %s", err, out)
	}
	waitFor(t, 10*time.Second, func() bool {
		s := mcpServers(t, data)
		return s["tasks"].State == "locked" && s["memory"].State == "locked"
	})
	after, hits := waitForScan(t, pid, patterns, 40*time.Second, func(c map[string]int) bool { return len(c) == 0 })
	t.Logf("after maven lock: found %v", after)
	for _, h := range hits {
		t.Errorf("after lock: %s at %#x (%s)", h.Pattern, h.Addr, h.Region)
	}
}
