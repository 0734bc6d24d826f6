package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/ipc"
	"maven/internal/daemontest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mavenBinary builds cmd/maven once per test run: the daemon tests drive the real binary.
func mavenBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "maven-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "maven")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build maven: %v", buildErr)
	}
	return binPath
}

// daemonProc is a running `maven serve`.
type daemonProc struct {
	proc   *daemontest.Daemon
	cmd    *exec.Cmd
	addr   string
	data   string
	stderr *daemontest.Log
}

// startDaemon starts the daemon on a random port and waits until /healthz answers.
func startDaemon(t *testing.T, data string, extra ...string) *daemonProc {
	t.Helper()
	return runDaemon(t, daemonCommand(t, mavenBinary(t), data, extra...), data)
}

// daemonCommand is `maven serve` of the binary bin on data and a random port.
func daemonCommand(t *testing.T, bin, data string, extra ...string) *exec.Cmd {
	return daemontest.Command(bin, data, t.TempDir(), extra...) // no maven.json there: the embedded defaults
}

// runDaemon starts cmd, a `maven serve` keeping its data in data, and waits until /healthz
// answers. A failed test shows the daemon's log.
func runDaemon(t *testing.T, cmd *exec.Cmd, data string) *daemonProc {
	t.Helper()
	d, err := daemontest.Start(cmd, data, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Kill)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.Log.String())
		}
	})
	return &daemonProc{proc: d, cmd: d.Cmd, addr: d.Addr, data: data, stderr: d.Log}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemonProc) stop(t *testing.T) {
	t.Helper()
	if err := d.proc.Stop(15 * time.Second); err != nil {
		t.Fatalf("%v\n%s", err, d.stderr.String())
	}
}

func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// maven runs a client command against the daemon's data directory; --data goes right after the
// command name, before any "--".
func maven(t *testing.T, data string, args ...string) (string, error) {
	t.Helper()
	argv := append([]string{args[0], "--data", data}, args[1:]...)
	cmd := exec.Command(mavenBinary(t), argv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func TestDaemonLifecycle(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, data)

	resp, err := http.Get("http://" + d.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"status":"ok","locked":false}`+"\n" {
		t.Fatalf("healthz: %s", body)
	}

	out, err := maven(t, data, "status", "--json")
	if err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	var st statusResult
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Version != version || st.Listen != d.addr {
		t.Fatalf("status --json: %v %+v", err, st)
	}

	info, err := os.Stat(filepath.Join(data, "maven.sock"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", err, info)
	}

	if out, err := maven(t, data, "propose", "hello", "--", "/bin/echo", "hi"); err != nil {
		t.Fatalf("propose: %v: %s", err, out)
	}
	rows := toolsJSON(t, data)
	if len(rows) != 1 || rows[0].Name != "hello" || rows[0].State != "proposed" || strings.Join(rows[0].Cmd, " ") != "/bin/echo hi" {
		t.Fatalf("tools after propose: %+v", rows)
	}
	human, err := maven(t, data, "tools")
	if err != nil || !strings.Contains(human, "hello") || !strings.Contains(human, "proposed") {
		t.Fatalf("tools: %v %q", err, human)
	}

	d.stop(t)
	if _, err := os.Stat(filepath.Join(data, "maven.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left behind after SIGTERM: %v", err)
	}
	if !strings.Contains(d.stderr.String(), "msg=stopped") {
		t.Fatalf("no clean stop logged:\n%s", d.stderr.String())
	}

	startDaemon(t, data)
	if rows := toolsJSON(t, data); len(rows) != 1 || rows[0].Name != "hello" || rows[0].State != "proposed" {
		t.Fatalf("tools after restart: %+v", rows)
	}
}

func toolsJSON(t *testing.T, data string) []toolResult {
	t.Helper()
	out, err := maven(t, data, "tools", "--json")
	if err != nil {
		t.Fatalf("tools --json: %v: %s", err, out)
	}
	var rows []toolResult
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	return rows
}

func TestClientWithoutDaemon(t *testing.T) {
	out, err := maven(t, filepath.Join(t.TempDir(), "nothing"), "status")
	if err == nil || !strings.Contains(out, "not running") {
		t.Fatalf("status without a daemon: %v %q", err, out)
	}
}

func TestProposeRefusesBadInput(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	startDaemon(t, data)
	for _, args := range [][]string{
		{"propose", "hello"},                         // no argv
		{"propose", "hello", "/bin/echo"},            // no "--"
		{"propose", "bad name", "--", "/bin/echo"},   // not a name
		{"propose", "sneaky", "--", "mcp", "s", "t"}, // not a local command
	} {
		if out, err := maven(t, data, args...); err == nil {
			t.Errorf("%q was accepted: %s", args, out)
		}
	}
	// Over IPC, a bad name or argv is error -32602 (docs/design.md#ipc).
	var rpcErr *ipc.Error
	err := ipc.Call(context.Background(), filepath.Join(data, "maven.sock"), "propose_tool", proposeParams{Name: "bad name", Argv: []string{"/bin/echo"}}, nil)
	if !errors.As(err, &rpcErr) || rpcErr.Code != ipc.InvalidParams {
		t.Errorf("propose_tool with a bad name: %v, want error %d", err, ipc.InvalidParams)
	}
	if rows := toolsJSON(t, data); len(rows) != 0 {
		t.Fatalf("refused proposals left rows: %+v", rows)
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "maven.json")
	if err := os.WriteFile(cfg, []byte(`{"refresh_interval": "soon"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	err := run(context.Background(), []string{"serve", "--config", cfg, "--data", filepath.Join(dir, "data")},
		func(string) string { return "" }, nil, io.Discard, &errb)
	if err == nil || !strings.Contains(err.Error(), "refresh_interval") {
		t.Fatalf("err = %v", err)
	}
	missing := filepath.Join(dir, "missing.json")
	err = run(context.Background(), []string{"serve", "--config", missing, "--data", filepath.Join(dir, "data")}, func(string) string { return "" }, nil, io.Discard, &errb)
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("a missing explicit config: %v", err)
	}
}

func TestConfigToolsProposedAndWithdrawn(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}, {"name": "date", "argv": ["/bin/date"]}]}`)
	d := startDaemon(t, data, "--config", cfg)
	if rows := toolsJSON(t, data); len(rows) != 2 {
		t.Fatalf("%+v", rows)
	}
	d.stop(t)
	write(`{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}]}`)
	startDaemon(t, data, "--config", cfg)
	rows := toolsJSON(t, data)
	states := map[string]string{}
	for _, r := range rows {
		states[r.Name] = r.State + ":" + r.Provenance
	}
	if states["uptime"] != "proposed:proposed from the config file" || states["date"] != "withdrawn:removed from config" {
		t.Fatalf("%v", states)
	}
}

// TestProposeCannotRenameAnEnabledTool: over IPC, proposing an enabled command under a new name,
// or its name with another command, is error -32602 naming the row, and the row keeps the name
// and command the owner enabled (docs/design.md#rule-2).
func TestProposeCannotRenameAnEnabledTool(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, data)
	if out, err := maven(t, data, "propose", "hello", "--", "/bin/echo", "hi"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	hello := toolsJSON(t, data)[0]
	d.stop(t)
	enableOffline(t, data, hello.ID)
	startDaemon(t, data)

	sock := filepath.Join(data, "maven.sock")
	for _, p := range []proposeParams{
		{Name: "reboot_router", Argv: []string{"/bin/echo", "hi"}},
		{Name: "hello", Argv: []string{"/sbin/reboot"}},
	} {
		var rpcErr *ipc.Error
		err := ipc.Call(context.Background(), sock, "propose_tool", p, nil)
		if !errors.As(err, &rpcErr) || rpcErr.Code != ipc.InvalidParams || !strings.Contains(rpcErr.Message, `"hello"`) ||
			!strings.Contains(rpcErr.Message, strconv.FormatInt(hello.ID, 10)) {
			t.Errorf("propose_tool %+v: %v, want error %d naming tool %d %q", p, err, ipc.InvalidParams, hello.ID, "hello")
		}
	}
	rows := toolsJSON(t, data)
	if len(rows) != 1 || rows[0].Name != "hello" || rows[0].State != "enabled" || strings.Join(rows[0].Cmd, " ") != "/bin/echo hi" {
		t.Fatalf("rows after the refused proposals: %+v", rows)
	}
}
