package mcp

// Tests against the real npm MCP servers pinned in package.json (see docs/peers.md#npm-servers).
// They skip when `npm ci` has not been run, unless MAVEN_REQUIRE_PEERS=1 makes that a failure.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/internal/testenv"
)

// peerEverythingTools is how many tools server-everything 2026.8.31 lists to Maven, which
// declares form elicitation and nothing else: the 13 it lists to a client without capabilities,
// and trigger-elicitation-request.
const peerEverythingTools = 14

// peerOptions leave a real server the time a loaded CI machine may need.
func peerOptions() ManagerOptions {
	o := fastOptions()
	o.DialTimeout = 20 * time.Second
	o.ListTimeout = 20 * time.Second
	o.CallTimeout = 20 * time.Second
	return o
}

// annotations returns the listed tools by name.
func byName(tools []*sdk.Tool) map[string]*sdk.Tool {
	m := make(map[string]*sdk.Tool, len(tools))
	for _, t := range tools {
		m[t.Name] = t
	}
	return m
}

func readOnly(t *sdk.Tool) bool { return t.Annotations != nil && t.Annotations.ReadOnlyHint }

// checkEverything checks server-everything's list and echo, and returns the time from Run to the
// complete list being reconciled.
func checkEverything(t *testing.T, m *Manager, rec *fakeReconciler, started time.Time) time.Duration {
	t.Helper()
	waitFor(t, 30*time.Second, "server-everything's tools", func() bool { return len(rec.last("e")) == peerEverythingTools })
	listed := time.Since(started)
	tools := byName(rec.last("e"))
	for name, wantRO := range map[string]bool{"echo": true, "get-sum": true, "toggle-simulated-logging": false, "gzip-file-as-resource": false} {
		tool, ok := tools[name]
		if !ok {
			t.Errorf("%s is not listed", name)
			continue
		}
		if readOnly(tool) != wantRO {
			t.Errorf("%s read-only = %v, want %v", name, readOnly(tool), wantRO)
		}
	}
	if st := status(m, "e"); st.State != StateConnected || st.Tools != peerEverythingTools {
		t.Errorf("status = %+v", st)
	}
	start := time.Now()
	res, err := m.CallTool(context.Background(), "e", "echo", map[string]any{"message": "hello from maven"})
	if err != nil {
		t.Fatalf("CallTool(echo): %v", err)
	}
	if res.IsError || !strings.Contains(res.Output, "hello from maven") {
		t.Errorf("CallTool(echo) = %+v", res)
	}
	t.Logf("timing: complete list reconciled %s after Run; echo call %s", listed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Bad arguments are the tool's error, not a protocol failure (docs/peers.md#all-three).
	res, err = m.CallTool(context.Background(), "e", "get-sum", map[string]any{"a": "one"})
	if err != nil || !res.IsError {
		t.Errorf("CallTool(get-sum) with a bad argument = %+v, %v; want an IsError result", res, err)
	}
	return listed
}

func TestPeerEverythingStdio(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	rec := newFakeReconciler()
	started := time.Now()
	m := startManager(t, map[string]config.Server{
		"e": {Type: config.TransportStdio, Command: node, Args: []string{script, "stdio"}},
	}, rec, peerOptions())
	checkEverything(t, m, rec, started)

	start := time.Now()
	m.Close()
	t.Logf("timing: Close %s", time.Since(start).Round(time.Millisecond))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s", d)
	}
}

// spawnPeer starts an npm server in an HTTP mode on a free port and waits until it listens.
func spawnPeer(t *testing.T, node, script, mode string) (port int, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()

	cmd := exec.Command(node, script, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	t.Cleanup(stop)
	start := time.Now()
	// The log line is no proof: on a busy port the server says it runs and exits
	// (docs/peers.md#npm-servers).
	waitFor(t, 20*time.Second, fmt.Sprintf("%s %s to listen on %d", filepath.Base(script), mode, port), func() bool {
		select {
		case <-exited:
			t.Fatalf("%s %s exited before listening", filepath.Base(script), mode)
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 100*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	t.Logf("timing: %s listening %s after spawn", mode, time.Since(start).Round(time.Millisecond))
	return port, stop
}

func TestPeerEverythingStreamableHTTP(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	port, stop := spawnPeer(t, node, script, "streamableHttp")
	rec := newFakeReconciler()
	started := time.Now()
	m := startManager(t, map[string]config.Server{
		"e": {Type: config.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)},
	}, rec, peerOptions())
	checkEverything(t, m, rec, started)

	// A stopped server: the session is noticed dead, and a call fails cleanly and at once.
	stop()
	waitFor(t, 10*time.Second, "the stopped server to leave connected", func() bool {
		return status(m, "e").State != StateConnected
	})
	reconciled := rec.count("e")
	start := time.Now()
	_, err := m.CallTool(context.Background(), "e", "echo", map[string]any{"message": "x"})
	if !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool on a stopped server: %v, want ErrNotConnected", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("CallTool on a stopped server took %s", d)
	}
	waitFor(t, 10*time.Second, "a failed redial", func() bool { return strings.Contains(status(m, "e").LastError, "dial:") })
	if rec.count("e") != reconciled {
		t.Error("a stopped server was reconciled")
	}
}

func TestPeerEverythingSSE(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	port, _ := spawnPeer(t, node, script, "sse")
	for _, c := range []struct {
		name    string
		guessed bool
	}{{"type sse", false}, {"bare url", true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Server{Type: config.TransportSSE, URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port)}
			if c.guessed {
				// Tried as streamable HTTP first: the server refuses that POST with a 4xx, and
				// the SSE transport takes over.
				cfg.Type, cfg.TypeGuessed = config.TransportHTTP, true
			}
			rec := newFakeReconciler()
			started := time.Now()
			m := startManager(t, map[string]config.Server{"e": cfg}, rec, peerOptions())
			checkEverything(t, m, rec, started)
			if st := status(m, "e"); st.Transport != "sse" {
				t.Errorf("transport = %q, want sse", st.Transport)
			}
		})
	}
}

func TestPeerMemoryStdio(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-memory")
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")
	rec := newFakeReconciler()
	started := time.Now()
	m := startManager(t, map[string]config.Server{
		"memory": {Type: config.TransportStdio, Command: node, Args: []string{script},
			Env: map[string]string{"MEMORY_FILE_PATH": memFile}},
	}, rec, peerOptions())
	waitFor(t, 30*time.Second, "server-memory's tools", func() bool { return len(rec.last("memory")) == 9 })
	t.Logf("timing: complete list reconciled %s after Run", time.Since(started).Round(time.Millisecond))
	tools := byName(rec.last("memory"))
	for name, wantRO := range map[string]bool{"read_graph": true, "search_nodes": true, "open_nodes": true,
		"create_entities": false, "delete_entities": false, "delete_relations": false} {
		if tool, ok := tools[name]; !ok || readOnly(tool) != wantRO {
			t.Errorf("%s: listed %v, read-only %v; want read-only %v", name, ok, ok && readOnly(tool), wantRO)
		}
	}

	res, err := m.CallTool(context.Background(), "memory", "create_entities", map[string]any{
		"entities": []any{map[string]any{"name": "maven", "entityType": "daemon", "observations": []any{"runs tools"}}},
	})
	if err != nil || res.IsError {
		t.Fatalf("create_entities = %+v, %v", res, err)
	}
	res, err = m.CallTool(context.Background(), "memory", "read_graph", nil)
	if err != nil || res.IsError || !strings.Contains(res.Output, "runs tools") {
		t.Errorf("read_graph = %+v, %v", res, err)
	}
	if b, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(b), "maven") {
		t.Errorf("the memory file %s = %q, %v: MEMORY_FILE_PATH did not reach the server", memFile, b, err)
	}
}

func TestPeerFilesystemStdio(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-filesystem")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("remember the milk"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{
		"fs": {Type: config.TransportStdio, Command: node, Args: []string{script, dir}},
	}, rec, peerOptions())
	waitFor(t, 30*time.Second, "server-filesystem's tools", func() bool { return len(rec.last("fs")) == 14 })
	tools := byName(rec.last("fs"))
	for name, wantRO := range map[string]bool{"read_text_file": true, "list_directory": true, "write_file": false, "move_file": false} {
		if tool, ok := tools[name]; !ok || readOnly(tool) != wantRO {
			t.Errorf("%s: listed %v, read-only %v; want read-only %v", name, ok, ok && readOnly(tool), wantRO)
		}
	}
	// Without roots from the client, the command-line directory is what it serves
	// (docs/peers.md#npm-servers).
	res, err := m.CallTool(context.Background(), "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "note.txt")})
	if err != nil || res.IsError || !strings.Contains(res.Output, "remember the milk") {
		t.Errorf("read_text_file = %+v, %v", res, err)
	}
}

// server-everything's trigger-elicitation-request asks, over stdio in the 2025 era, for a form
// of many fields: the question reaches the elicitor of the call, and the server hears its answer.
func TestPeerEverythingElicitation(t *testing.T) {
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{
		"e": {Type: config.TransportStdio, Command: node, Args: []string{script, "stdio"}},
	}, rec, peerOptions())
	waitFor(t, 30*time.Second, "server-everything's tools", func() bool { return len(rec.last("e")) == peerEverythingTools })
	owner := &fakeElicitor{answer: ElicitAnswer{Action: ActionDecline}}
	res, err := m.CallTool(WithElicitor(context.Background(), owner), "e", "trigger-elicitation-request", nil)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !strings.Contains(strings.ToLower(res.Output), "decline") {
		t.Errorf("the server did not hear the decline: %q", res.Output)
	}
	asked := owner.questions()
	if len(asked) != 1 || asked[0].Mode != "form" || asked[0].Tool != "trigger-elicitation-request" ||
		!strings.Contains(string(asked[0].Schema), `"birthdate"`) {
		t.Errorf("questions = %+v", asked)
	}
}
