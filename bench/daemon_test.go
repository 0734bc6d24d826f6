package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/ipc"
	"maven/app/mcp"
	"maven/internal/daemontest"
)

// buildMaven builds cmd/maven into dir with go build, as a user would, and returns its path.
func buildMaven(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "maven")
	cmd := exec.Command("go", "build", "-o", bin, "maven/cmd/maven")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build maven/cmd/maven: %v\n%s", err, out)
	}
	return bin
}

// daemon is a running `maven serve`.
type daemon struct{ *daemontest.Daemon }

// setupTokenRE finds the token of the setup link a daemon prints on its first start.
var setupTokenRE = regexp.MustCompile(`/setup\?token=([^"\s&]+)`)

// startDaemon starts `maven serve --data data --listen 127.0.0.1:0 --config cfg` and returns once
// GET /healthz answers 200 (benchBoot times that); the test kills it at its end.
func startDaemon(t *testing.T, bin, data, cfg string) *daemon {
	t.Helper()
	d, err := daemontest.Start(daemontest.Command(bin, data, filepath.Dir(data), "--config", cfg), data, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	return &daemon{d}
}

// url returns the daemon's URL for path.
func (d *daemon) url(path string) string { return "http://" + d.Addr + path }

// healthz times a bare GET /healthz of d with client: the floor of every page and call figure.
func (d *daemon) healthz(t *testing.T, client *http.Client) time.Duration {
	start := time.Now()
	resp, err := client.Get(d.url("/healthz"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d", resp.StatusCode)
	}
	return took
}

func (d *daemon) socket() string { return filepath.Join(d.Data, "maven.sock") }

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if err := d.Stop(20 * time.Second); err != nil {
		t.Logf("%v", err)
	}
}

// call makes one IPC call, as the maven client commands do.
func (d *daemon) call(t *testing.T, method string, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ipc.Call(ctx, d.socket(), method, params, result); err != nil {
		t.Fatalf("ipc %s: %v\n%s", method, err, d.Log.String())
	}
}

// servers returns the daemon's MCP servers (the mcp_servers IPC method).
func (d *daemon) servers(t *testing.T) []mcp.ServerStatus {
	t.Helper()
	var list []mcp.ServerStatus
	d.call(t, "mcp_servers", nil, &list)
	return list
}

// waitServers polls the servers until cond holds for every one of them.
func (d *daemon) waitServers(t *testing.T, what string, cond func(mcp.ServerStatus) bool) {
	t.Helper()
	waitFor(t, what, 60*time.Second, func() bool {
		for _, s := range d.servers(t) {
			if !cond(s) {
				return false
			}
		}
		return true
	})
}

// setupToken returns the token of the setup link the daemon printed on its first start.
func (d *daemon) setupToken(t *testing.T) string {
	t.Helper()
	tok, ok := d.Log.Wait(setupTokenRE, 20*time.Second)
	if !ok {
		t.Fatalf("no setup link in the log\n%s", d.Log.String())
	}
	return tok
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// browser is a client with a cookie jar that speaks to the daemon as maven.js does, with a
// software authenticator standing in for the passkey. It asks for the configured origin's host
// (pages and ceremonies answer only there) and, to a daemon that trusts loopback as a proxy
// (withBrowsersFromManyAddresses), names an address of its own, as a phone on the LAN would
// be: anonymous ceremonies are limited per address.
type browser struct {
	t      *testing.T
	d      *daemon
	client *http.Client
	addr   string
}

// browsers counts the browsers made, for their addresses.
var browsers atomic.Int64

func newBrowser(t *testing.T, d *daemon) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := browsers.Add(1)
	return &browser{t: t, d: d, addr: fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff), client: &http.Client{
		Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// withBrowsersFromManyAddresses adds to a JSON config that loopback is a trusted proxy, so the
// address each browser names is believed.
func withBrowsersFromManyAddresses(t *testing.T, cfg []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatal(err)
	}
	m["trusted_proxies"] = []string{"127.0.0.1"}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// request makes a request of this browser to path.
func (b *browser) request(method, path string, body io.Reader) *http.Request {
	req, err := http.NewRequest(method, b.d.url(path), body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Host = strings.TrimPrefix(b.d.Origin(), "http://")
	req.Header.Set("X-Forwarded-For", b.addr)
	return req
}

// postJSON posts v as maven.js does (same origin) and decodes a 200 answer into out.
func (b *browser) postJSON(path string, v, out any) {
	b.t.Helper()
	status, body := b.postJSONStatus(path, v)
	if status != http.StatusOK {
		b.t.Fatalf("POST %s: %d %s", path, status, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			b.t.Fatalf("POST %s: %v: %s", path, err, body)
		}
	}
}

func (b *browser) postJSONStatus(path string, v any) (int, []byte) {
	b.t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		b.t.Fatal(err)
	}
	req := b.request(http.MethodPost, path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.d.Origin())
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// get fetches path, as htmx does when partial is set, and returns the status and body.
func (b *browser) get(path string, partial bool) (int, []byte) {
	b.t.Helper()
	req := b.request(http.MethodGet, path, nil)
	if partial {
		req.Header.Set("HX-Request", "true")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// beginAnswer is what the WebAuthn begin endpoints answer.
type beginAnswer struct {
	Options json.RawMessage `json:"options"`
}

// register registers a passkey of a through the setup link, as the /setup page does, which
// signs the browser in; with enroll it then lets the passkey unlock, which creates the vault
// (and unlocks it). It returns the recovery code when it made the vault.
func (b *browser) register(a *authtest.Authenticator, token string, enroll bool) string {
	b.t.Helper()
	var begin beginAnswer
	b.postJSON("/setup/begin", map[string]string{"token": token}, &begin)
	cred, err := a.Create(begin.Options)
	if err != nil {
		b.t.Fatal(err)
	}
	var fin struct {
		OK  bool  `json:"ok"`
		ID  int64 `json:"id"`
		PRF bool  `json:"prf"`
	}
	b.postJSON("/setup/finish", map[string]any{"name": "bench", "credential": json.RawMessage(cred)}, &fin)
	if !fin.OK || fin.ID == 0 {
		b.t.Fatalf("setup finish: %+v", fin)
	}
	if !enroll {
		return ""
	}
	if !fin.PRF {
		b.t.Fatal("the passkey did not report PRF support")
	}
	b.postJSON(fmt.Sprintf("/passkeys/%d/enroll/begin", fin.ID), map[string]any{}, &begin)
	if cred, err = a.Get(begin.Options); err != nil {
		b.t.Fatal(err)
	}
	var ans struct {
		OK           bool   `json:"ok"`
		RecoveryCode string `json:"recovery_code"`
	}
	b.postJSON("/passkeys/enroll/finish", map[string]any{"credential": json.RawMessage(cred)}, &ans)
	if !ans.OK || ans.RecoveryCode == "" {
		b.t.Fatalf("enroll: %+v", ans)
	}
	return ans.RecoveryCode
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// blackHoleConfig is a config with one http MCP server per address; with header set, each needs
// the secret tok.
func blackHoleConfig(addrs []string, header bool) []byte {
	var parts []string
	for i, a := range addrs {
		s := fmt.Sprintf(`"bh%d": {"type": "http", "url": "http://%s/mcp"`, i, a)
		if header {
			s += `, "headers": {"Authorization": "Bearer ${secret:tok}"}`
		}
		parts = append(parts, s+"}")
	}
	return []byte(`{"mcpServers": {` + strings.Join(parts, ", ") + `}}`)
}
