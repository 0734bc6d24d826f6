package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"maven/internal/daemontest"
	"maven/internal/testenv"
)

// TestSecretNeverOnACommandLine is issue 10 item 3 against the real binary: a config that puts
// ${secret:…} in args is refused, naming the key and saying to pass it through env; and the
// stdio server it does start, with the secret in its env, shows no secret in /proc/PID/cmdline
// to another user.
func TestSecretNeverOnACommandLine(t *testing.T) {
	node, memoryServer := testenv.NPMPeer(t, "mcp-server-memory")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")

	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`{"mcpServers": {"memory": {"command": %q, "args": [%q, "--token=${secret:tok}"]}}}`, node, memoryServer))
	cmd := exec.Command(mavenBinary(t), "serve", "--config", cfg, "--data", data, "--listen", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 1 ||
		!strings.Contains(string(out), "mcpServers.memory.args[1]: ${secret:tok} would put the secret on the command line") ||
		!strings.Contains(string(out), `pass it through env instead ("env": {"TOK": "${secret:tok}"})`) {
		t.Fatalf("serve with a secret in args: %v\n%s", err, out)
	}

	// The secret through env; the argument names the variable, as mcp-remote's --header does.
	write(fmt.Sprintf(`{"mcpServers": {"memory": {"command": %q, "args": [%q, "--label=${TOK}"], "env": {"TOK": "${secret:tok}"}}}}`, node, memoryServer))
	secret := "mvn-" + rand.Text()
	d, _ := startWithSecret(t, data, cfg, "tok", secret)
	waitFor(t, 20*time.Second, func() bool { return serverState(t, data, "memory") == "connected" })

	child := childOf(t, d.cmd.Process.Pid)
	cmdline := readAs(t, "/proc/"+strconv.Itoa(child)+"/cmdline")
	if !strings.Contains(cmdline, "mcp-server-memory") || !strings.Contains(cmdline, "--label=${TOK}") {
		t.Fatalf("another user reads the server's command line as %q: not the server's", cmdline)
	}
	if strings.Contains(cmdline, secret) {
		t.Fatalf("the secret is on the command line: %q", cmdline)
	}
	// The environment, where the secret is, is the server's user's alone.
	if environ := readAs(t, "/proc/"+strconv.Itoa(child)+"/environ"); os.Geteuid() == 0 && environ != "" {
		t.Fatalf("another user reads the server's environment")
	}
}

// startWithSecret makes a vault, approves the config's command lines, starts the daemon on
// them, unlocks it with the recovery code (which it returns) and seals value as name.
func startWithSecret(t *testing.T, data, cfg, name, value string) (*daemonProc, string) {
	t.Helper()
	code := createVaultOffline(t, data)
	daemontest.ApproveCommandLines(t, data, cfg)
	d := startDaemon(t, data, "--config", cfg)
	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("recovery unlock: %d", resp.StatusCode)
	}
	if out, err := secretSet(t, data, name, value); err != nil {
		t.Fatalf("secret set: %v %s", err, out)
	}
	return d, code
}

// childOf returns the PID of a child process of pid (any of its threads may have started it).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	var child int
	waitFor(t, 10*time.Second, func() bool {
		lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, l := range lists {
			b, _ := os.ReadFile(l)
			for _, f := range strings.Fields(string(b)) {
				child, _ = strconv.Atoi(f)
				return true
			}
		}
		return false
	})
	return child
}

// readAs reads a file as nobody when the test runs as root (another user), otherwise as the
// test's own user; "" when it cannot be read.
func readAs(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("cat", path)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: readerUID, Gid: readerUID}}
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return ""
	}
	return strings.ReplaceAll(out.String(), "\x00", " ")
}
