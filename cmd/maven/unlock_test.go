package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/config"
	"maven/app/ipc"
	"maven/app/mcp/mcptest"
	"maven/app/vault"
	"maven/db"
)

// lockedMCP is a scripted MCP server on a fixed loopback address that counts requests and
// checks the bearer token; it can be stopped and started again at the same address.
type lockedMCP struct {
	t        *testing.T
	scripted *mcptest.Scripted
	addr     string
	srv      *http.Server
	requests atomic.Int64
	badAuth  atomic.Int64
	want     string
}

func newLockedMCP(t *testing.T, wantAuth string) *lockedMCP {
	s := mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks", ReadOnly: true, Text: "no tasks"})
	t.Cleanup(s.Close)
	m := &lockedMCP{t: t, scripted: s, addr: "127.0.0.1:0", want: wantAuth}
	m.start()
	t.Cleanup(m.stop)
	return m
}

func (m *lockedMCP) start() {
	m.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", m.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		m.t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	h := m.scripted.HTTPHandler()
	m.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		if r.Header.Get("Authorization") != m.want {
			m.badAuth.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go m.srv.Serve(ln)
}

func (m *lockedMCP) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
	m.srv.Close()
}

// createVaultOffline makes the vault in the daemon's database, as the first PRF passkey's
// registration would, and returns its recovery code.
func createVaultOffline(t *testing.T, data string) string {
	t.Helper()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	bdb, err := db.Open(context.Background(), filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	code, err := vault.New(db.NewVaultStore(bdb), "localhost", time.Now).Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func healthz(t *testing.T, d *daemonProc) string {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return strings.TrimSpace(b.String())
}

// unlockWithRecovery posts the recovery code form as the /unlock page does.
func unlockWithRecovery(t *testing.T, d *daemonProc, code string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr+"/unlock/recovery", strings.NewReader(url.Values{"code": {code}}.Encode()))
	_, port, _ := strings.Cut(d.addr, ":")
	req.Host = "localhost:" + port // the recovery form answers at the configured origin's host only
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// secretSet runs `maven secret set NAME` with value on its standard input.
func secretSet(t *testing.T, data, name, value string) (string, error) {
	t.Helper()
	cmd := exec.Command(mavenBinary(t), "secret", "set", "--data", data, name)
	cmd.Stdin = strings.NewReader(value + "\n")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func serverState(t *testing.T, data, name string) string {
	t.Helper()
	return mcpServers(t, data)[name].State
}

const (
	daemonLocked   = `{"status":"ok","locked":true}`
	daemonUnlocked = `{"status":"ok","locked":false}`
)

// TestDaemonWithVaultBootsLockedAndSecretsWaitForUnlock drives the real binary: a daemon with a
// vault boots locked; `maven secret set` is refused until it is unlocked; a server that needs
// the secret is never dialled while locked and connects once unlocked; `maven lock` locks; a
// restart while the server is unreachable withdraws and disables nothing.
func TestDaemonWithVaultBootsLockedAndSecretsWaitForUnlock(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	remote := newLockedMCP(t, "Bearer tk-42")
	cfg := filepath.Join(dir, "maven.json")
	conf := fmt.Sprintf(`{"refresh_interval": "1s", "mcpServers": {"tasks": {"type": "http", "url": "http://%s/mcp",
		"headers": {"Authorization": "Bearer ${secret:tok}"}}}}`, remote.addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	code := createVaultOffline(t, data)

	d := startDaemon(t, data, "--config", cfg)
	if h := healthz(t, d); h != daemonLocked {
		t.Fatalf("a daemon with a vault boots %s", h)
	}
	var st statusResult
	out, _ := maven(t, data, "status", "--json")
	if json.Unmarshal([]byte(out), &st); !st.Locked {
		t.Fatalf("status while locked: %s", out)
	}
	if out, err := secretSet(t, data, "tok", "tk-42"); err == nil || !strings.Contains(out, "locked") {
		t.Fatalf("secret set while locked: %v %s", err, out)
	}
	// Over IPC, the refusal is error 423 (docs/design.md#ipc).
	var rpcErr *ipc.Error
	err := ipc.Call(context.Background(), filepath.Join(data, "maven.sock"), "secret_set", secretSetParams{Name: "tok", Value: []byte("tk-42")}, nil)
	if !errors.As(err, &rpcErr) || rpcErr.Code != 423 {
		t.Fatalf("secret_set while locked: %v, want error 423", err)
	}
	// While locked nothing runs: the voice webhook answers so.
	token, err := maven(t, data, "voice-token", "--rotate")
	if err != nil {
		t.Fatalf("voice-token: %v %s", err, token)
	}
	if r := postVoice(t, d.addr, strings.TrimSpace(token), "c1", "list tasks"); r.Outcome != "locked" || strings.Contains(r.Speech, "/unlock") || !strings.Contains(r.Output, "/unlock") {
		t.Fatalf("voice while locked: %+v", r)
	}
	time.Sleep(300 * time.Millisecond)
	if n := remote.requests.Load(); n != 0 || serverState(t, data, "tasks") != "locked" {
		t.Fatalf("while locked: %d requests, state %s", n, serverState(t, data, "tasks"))
	}

	// The recovery code unlocks; the secret is still missing, so the server waits.
	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther || healthz(t, d) != daemonUnlocked {
		t.Fatalf("recovery unlock: %d, %s", resp.StatusCode, healthz(t, d))
	}
	if out, err := secretSet(t, data, "tok", "tk-42"); err != nil {
		t.Fatalf("secret set: %v %s", err, out)
	}
	waitFor(t, 10*time.Second, func() bool { return serverState(t, data, "tasks") == "connected" })
	if remote.badAuth.Load() != 0 {
		t.Fatalf("%d requests with the wrong token", remote.badAuth.Load())
	}
	var row toolResult
	waitFor(t, 10*time.Second, func() bool {
		row = toolsByCmd(t, data)["mcp tasks list_tasks"]
		return row.ID != 0
	})
	withAllowlist(t, data, func(svc *allowlist.Service) {
		enable(t, svc, row.ID)
	})

	// maven lock: locked, and the server's session ends.
	if out, err := maven(t, data, "lock"); err != nil || !strings.Contains(out, "locked") {
		t.Fatalf("lock: %v %s", err, out)
	}
	if healthz(t, d) != daemonLocked || serverState(t, data, "tasks") != "locked" {
		t.Fatalf("after maven lock: %s, server %s", healthz(t, d), serverState(t, data, "tasks"))
	}

	// Restart while the server is unreachable: locked again, never dialled, nothing withdrawn.
	d.stop(t)
	remote.stop()
	remote.requests.Store(0)
	d = startDaemon(t, data, "--config", cfg)
	if healthz(t, d) != daemonLocked {
		t.Fatal("the restarted daemon is not locked")
	}
	if resp := unlockWithRecovery(t, d, code); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("recovery unlock after restart: %d", resp.StatusCode)
	}
	waitFor(t, 10*time.Second, func() bool {
		s := serverState(t, data, "tasks")
		return s == "backoff" || s == "connecting"
	})
	time.Sleep(1500 * time.Millisecond) // a refresh interval and more
	if got := toolsByCmd(t, data)["mcp tasks list_tasks"]; got.State != "enabled" {
		t.Fatalf("with the server unreachable the row is %s", got.State)
	}

	// Back: it connects, and the row is as the owner left it.
	remote.start()
	waitFor(t, 15*time.Second, func() bool { return serverState(t, data, "tasks") == "connected" })
	if got := toolsByCmd(t, data)["mcp tasks list_tasks"]; got.State != "enabled" || got.ID != row.ID {
		t.Fatalf("after the server came back: %+v", got)
	}
	log := d.stderr.String()
	if strings.Contains(log, "tk-42") || strings.Contains(log, code) {
		t.Fatal("a secret or the recovery code reached the log")
	}
}

// withAllowlist opens the daemon's database from the test, beside the daemon, to do what only
// the owner's browser may.
func withAllowlist(t *testing.T, data string, fn func(*allowlist.Service)) {
	t.Helper()
	bdb, err := db.Open(context.Background(), filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	fn(allowlist.NewService(db.NewToolStore(bdb), time.Now))
}

func TestSecretSetReadsStdinNotArgv(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	// Usage errors come before any daemon is needed.
	for _, args := range [][]string{{"secret"}, {"secret", "get", "x"}, {"secret", "set"}, {"secret", "set", "a", "b"}, {"secret", "set", "bad name"}} {
		cmd := exec.Command(mavenBinary(t), append(args, "--data", data)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err == nil || !(errorsAs(err, &ee) && ee.ExitCode() == 2) {
			t.Fatalf("maven %v: %v %s", args, err, out)
		}
	}
	startDaemon(t, data)
	if out, err := secretSet(t, data, "tok", "x"); err == nil || !strings.Contains(out, "no vault") {
		t.Fatalf("secret set without a vault: %v %s", err, out)
	}
	if out, err := maven(t, data, "lock"); err != nil || !strings.Contains(out, "no vault") {
		t.Fatalf("lock without a vault: %v %s", err, out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

func TestSecureCookiesFollowTheBrowsersScheme(t *testing.T) {
	tests := []struct {
		name    string
		origins []string
		tls     bool
		want    bool
	}{
		{"localhost over http", []string{"http://localhost:8080"}, false, false},
		{"served over TLS", []string{"https://maven.lan:8443"}, true, true},
		{"behind a TLS-terminating proxy", []string{"https://maven.example"}, false, true},
		{"one plain-http origin among them", []string{"https://maven.example", "http://localhost:8080"}, false, false},
	}
	for _, tt := range tests {
		cfg := config.Default()
		cfg.Origins = tt.origins
		if tt.tls {
			cfg.TLSCert, cfg.TLSKey = "/c.pem", "/k.pem"
		}
		if got := secureCookies(cfg); got != tt.want {
			t.Errorf("%s: secure %v, want %v", tt.name, got, tt.want)
		}
	}
}
