package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/app/runner"
	"maven/app/voice"
	"maven/app/voice/hatest"
	"maven/db"
)

const searchSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`

// voiceBenchConfig lifts the webhook's turn rate (a real config option, docs/design.md#config's
// voice block), so turns are measured back to back and never paced or refused by the limiter.
const voiceBenchConfig = `"voice": {"turns_per_second": 1000000, "burst": 1000000}`

// voiceRemote is the scripted search_tasks server, serving streamable HTTP from a process of
// its own (as a real MCP server does, so the daemon's call and the direct one both cross a
// process boundary), and a direct go-sdk client session on it.
type voiceRemote struct {
	url    string
	direct *sdk.ClientSession
}

func startVoiceRemote(t *testing.T, scripted string) *voiceRemote {
	t.Helper()
	dir := t.TempDir()
	tools, err := json.Marshal([]mcptest.ToolSpec{{Name: "search_tasks", Description: "Searches tasks",
		InputSchema: json.RawMessage(searchSchema), ReadOnly: true, Echo: true}})
	if err != nil {
		t.Fatal(err)
	}
	r := &voiceRemote{url: startScriptedHTTP(t, scripted, writeFile(t, dir, "tools.json", tools))}
	r.direct = connectSDK(t, r.url)
	return r
}

// connectSDK connects a go-sdk client to the streamable-HTTP server at url, until the test ends.
func connectSDK(t *testing.T, url string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startScriptedHTTP starts scripted-mcp serving streamable HTTP from a process of its own, with
// args before its tools file, stops it when the test ends, and returns its endpoint.
func startScriptedHTTP(t *testing.T, scripted, toolsFile string, args ...string) string {
	t.Helper()
	return serveScripted(t, scripted, nil, append(args, toolsFile)...)
}

// startRelay starts scripted-mcp as a bare relay (mcptest.Relay) of the 2026-07-28 server at
// url, sending token, and returns its endpoint. The relay holds a few MiB where the daemon holds
// tens, and Go collects a heap each time it doubles: with GOGC=800 its heap may grow about as far
// as the daemon's before a collection, so that the floor is not slowed by collections the daemon
// does not make (bench/README.md has the figure both ways).
func startRelay(t *testing.T, scripted, url, token string) string {
	t.Helper()
	return serveScripted(t, scripted, []string{"GOGC=800"}, "-relay", url, "-token", token, "-era", "modern")
}

// serveScripted starts scripted-mcp with args and env added to the bench's environment,
// serving streamable HTTP from a process of its own, stops it when the test ends, and returns
// its endpoint.
func serveScripted(t *testing.T, scripted string, env []string, args ...string) string {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	args = append([]string{"-http", "127.0.0.1:0", "-addr", addrFile}, args...)
	cmd := exec.Command(scripted, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder // written by the process until it exits, read after
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var addr []byte
	waitFor(t, "scripted-mcp "+strings.Join(args, " ")+" to listen", 30*time.Second, func() bool {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("scripted-mcp %s exited before it listened (%v): %s", strings.Join(args, " "), err, stderr.String())
		default:
		}
		var err error
		addr, err = os.ReadFile(addrFile)
		return err == nil && len(addr) > 0
	})
	return "http://" + string(addr) + "/mcp"
}

// call is the direct CallTool the voice turn is compared with.
func (r *voiceRemote) call(t *testing.T) time.Duration {
	start := time.Now()
	res, err := r.direct.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}})
	took := time.Since(start)
	if err != nil || res.IsError {
		t.Fatalf("direct CallTool: %v %+v", err, res)
	}
	return took
}

// notLocked is the lock state of a daemon without a vault.
type notLocked struct{}

func (notLocked) Locked() bool { return false }

// benchVoiceInProcess times voice.Service.Turn ("search tasks milk": match, bind, audit event,
// call through the MCP manager over loopback streamable HTTP) against a direct CallTool on the
// same server, alternately, n times each, wired as the daemon wires them (real SQLite).
func benchVoiceInProcess(t *testing.T, r *voiceRemote, n int) (turn, direct []time.Duration) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	logger := slog.New(slog.DiscardHandler)
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	servers := map[string]config.Server{"tasks": {Name: "tasks", Type: config.TransportHTTP, URL: r.url, AllowTools: []string{"search_tasks"}}}
	manager := mcp.NewManager(servers, mcp.NewToolReconciler(rows, time.Now, logger), mcp.ManagerOptions{Version: "bench"}, logger)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	manager.Run(mctx)
	defer manager.Close()

	var row allowlist.Tool
	waitFor(t, "search_tasks to be proposed", 30*time.Second, func() bool {
		list, _ := rows.List(ctx, allowlist.Filter{Scope: "mcp:tasks"})
		if len(list) == 1 {
			row = list[0]
		}
		return row.ID != 0
	})
	if _, err := rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	turns := voice.New(voice.Deps{Rows: rows, Binder: manager, Runner: runner.New(rows, manager, runner.Options{}), Lock: notLocked{}},
		voice.Options{Logger: logger, TurnsPerSecond: 1e6, Burst: 1e6})
	once := func() time.Duration {
		start := time.Now()
		rep := turns.Turn(ctx, voice.Request{Conversation: "b", Text: "search tasks milk"})
		took := time.Since(start)
		if rep.Outcome != voice.OutcomeRan || !strings.Contains(rep.Speech, "milk") {
			t.Fatalf("voice turn: %+v", rep)
		}
		return took
	}
	for range 20 {
		once()
		r.call(t)
	}
	for i := range n {
		if i%2 == 0 {
			turn = append(turn, once())
			direct = append(direct, r.call(t))
		} else {
			direct = append(direct, r.call(t))
			turn = append(turn, once())
		}
	}
	return turn, direct
}

// voiceHTTPTimes are the over-HTTP voice figures: POST /voice, the direct CallTool beside it, and
// GET /healthz of the same daemon, a bare HTTP round trip to it. What Maven adds to a turn over
// HTTP is median(post) − median(direct) − median(health).
type voiceHTTPTimes struct {
	post, direct, health []time.Duration
}

// benchVoiceHTTP times POST /voice on the real daemon, over HTTP, with the body Home Assistant
// sends for a home of 150 exposed entities (≈28 KiB), against a direct CallTool on the same
// server and GET /healthz, interleaved in one loop (the order rotates), n times each.
func benchVoiceHTTP(t *testing.T, bin string, r *voiceRemote, n int) voiceHTTPTimes {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeFile(t, dir, "maven.json", []byte(`{`+voiceBenchConfig+`, "mcpServers": {"tasks": {"type": "http", "url": "`+r.url+`", "allow_tools": ["search_tasks"]}}}`))
	d := startDaemon(t, bin, data, cfg)
	var id int64
	waitFor(t, "search_tasks to be proposed", 30*time.Second, func() bool {
		var rows []struct {
			ID  int64    `json:"id"`
			Cmd []string `json:"cmd"`
		}
		d.call(t, "tools", nil, &rows)
		for _, row := range rows {
			if strings.Join(row.Cmd, " ") == "mcp tasks search_tasks" {
				id = row.ID
			}
		}
		return id != 0
	})
	// Enabling is the owner's passkey step-up on /tools; here the test's stand-in does it with
	// the daemon stopped.
	d.stop(t)
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	row, err := rows.Get(ctx, id)
	if err == nil {
		_, err = rows.EnableTool(ctx, id, authtest.Proof(t, auth.One(auth.ActionEnableTool, id, row.ApprovalDigest())))
	}
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, bin, data, cfg)
	d.waitServers(t, "tasks to connect", func(s mcp.ServerStatus) bool { return s.State == mcp.StateConnected })
	out, err := exec.Command(bin, "voice-token", "--rotate", "--data", data).Output()
	if err != nil {
		t.Fatalf("maven voice-token --rotate: %v", err)
	}
	token := strings.TrimSpace(string(out))

	client := &http.Client{Timeout: 30 * time.Second}
	body := hatest.Body(hatest.Chat{ConversationID: "01JF8QBENCH", Entities: hatest.Home(150),
		Log: []hatest.Message{hatest.Text("system", hatest.SystemPrompt), hatest.Text("user", "search tasks milk")}})
	once := func() time.Duration {
		req, _ := http.NewRequest(http.MethodPost, d.url("/voice"), bytes.NewReader(body))
		req.SetBasicAuth("homeassistant", token)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		var rep struct {
			Outcome string `json:"outcome"`
		}
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &rep) != nil || rep.Outcome != "ran" {
			t.Fatalf("POST /voice: %d %s", resp.StatusCode, raw)
		}
		return took
	}
	health := func() time.Duration { return d.healthz(t, client) }
	for range 20 {
		once()
		r.call(t)
		health()
	}
	var vt voiceHTTPTimes
	for i := range n {
		steps := []func(){
			func() { vt.post = append(vt.post, once()) },
			func() { vt.direct = append(vt.direct, r.call(t)) },
			func() { vt.health = append(vt.health, health()) },
		}
		for j := range steps {
			steps[(i+j)%len(steps)]()
		}
	}
	d.stop(t)
	return vt
}

// reportVoice adds a voice turn beside a direct CallTool, in-process and over HTTP.
func reportVoice(t *testing.T, e *benchEnv, rep *report) {
	remote := startVoiceRemote(t, buildScripted(t, e.dir))
	turn, direct := benchVoiceInProcess(t, remote, e.n(2001))
	rep.versus("Voice turn (in-process `voice.Service.Turn`)", turn, direct, "direct `CallTool`", targetVoiceRatio)
	rep.add("Voice turn (in-process) vs direct `CallTool`: p99", fmt.Sprintf("%s vs %s (%.2f×)",
		ms(quantile(turn, 0.99)), ms(quantile(direct, 0.99)), ratio(quantile(turn, 0.99), quantile(direct, 0.99))))
	rep.raw("voice turn, in-process", turn)
	rep.raw("direct CallTool, beside it", direct)
	vt := benchVoiceHTTP(t, e.bin, remote, e.n(1001))
	floor := median(vt.direct) + median(vt.health)
	rep.quotient("`POST /voice` with a 28 KiB Home Assistant body", ms(median(vt.post)),
		fmt.Sprintf("%s (direct `CallTool` %s + `GET /healthz` %s)", ms(floor), ms(median(vt.direct)), ms(median(vt.health))),
		ratio(median(vt.post), floor), targetVoiceHTTPRatio)
	rep.add("`POST /voice` over HTTP vs direct `CallTool`: p99", fmt.Sprintf("%s vs %s (%.2f×)",
		ms(quantile(vt.post, 0.99)), ms(quantile(vt.direct, 0.99)), ratio(quantile(vt.post, 0.99), quantile(vt.direct, 0.99))))
	rep.raw("POST /voice over HTTP (28 KiB body)", vt.post)
	rep.raw("direct CallTool, beside it", vt.direct)
	rep.raw("GET /healthz of the same daemon, beside it (the webhook's own hop)", vt.health)

}
