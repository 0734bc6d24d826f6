package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/internal/daemontest"
)

// reloadTrigger makes the daemon read its config again and returns once it has applied or
// refused it, with what `maven reload` printed (stdout and stderr) and its error.
type reloadTrigger func(t *testing.T, d *daemonProc) (string, error)

// viaCLI is `maven reload`.
func viaCLI(t *testing.T, d *daemonProc) (string, error) {
	t.Helper()
	return maven(t, d.data, "reload")
}

// viaSIGHUP signals the daemon and waits for the log line that ends the reload; it prints
// nothing.
func viaSIGHUP(t *testing.T, d *daemonProc) (string, error) {
	t.Helper()
	count := func() int {
		log := d.stderr.String()
		return strings.Count(log, `msg="config reloaded"`) + strings.Count(log, `msg="config refused: the running config stays`)
	}
	before := count()
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() bool { return count() > before })
	return "", nil
}

// turnResult is a voice turn's reply, or why there is none.
type turnResult struct {
	reply voiceReply
	err   error
}

// voiceTurnAsync posts one utterance on its own goroutine.
func voiceTurnAsync(addr, token, conversation, text string) <-chan turnResult {
	out := make(chan turnResult, 1)
	go func() {
		r, err := daemontest.Say(context.Background(), addr, token, conversation, text)
		out <- turnResult{r, err}
	}()
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func pidIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func processAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func statusJSON(t *testing.T, data string) statusResult {
	t.Helper()
	out, err := maven(t, data, "status", "--json")
	if err != nil {
		t.Fatalf("status --json: %v %s", err, out)
	}
	var st statusResult
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

// TestReloadWhileAVoiceTurnRuns is issue 15's reload, by `maven reload` and by SIGHUP, while a
// voice turn runs a slow tool on a server the reload does not change: the turn completes with
// its result and that server's session is never redialled; the added server connects and
// proposes; the changed one reconnects to its new URL; the removed one stops, its process gone,
// and its rows are withdrawn "removed from config"; local tools follow the file. Then a broken
// config is refused whole, every error named, and the running config stays; and the removed
// server, put back, proposes its tools again.
func TestReloadWhileAVoiceTurnRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger reloadTrigger
	}{{"maven reload", viaCLI}, {"SIGHUP", viaSIGHUP}} {
		t.Run(tc.name, func(t *testing.T) { testReloadWhileAVoiceTurnRuns(t, tc.trigger, tc.name == "maven reload") })
	}
}

func testReloadWhileAVoiceTurnRuns(t *testing.T, reload reloadTrigger, printed bool) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	steady := mcptest.NewScripted(mcptest.ToolSpec{Name: "slow_report", Description: "A slow report", ReadOnly: true,
		Text: "the slow result", DelayMS: 6000})
	defer steady.Close()
	oldTarget := mcptest.NewScripted(mcptest.ToolSpec{Name: "ping", ReadOnly: true, Text: "pong"})
	newTarget := mcptest.NewScripted(mcptest.ToolSpec{Name: "pong", ReadOnly: true, Text: "ping"})
	fresh := mcptest.NewScripted(mcptest.ToolSpec{Name: "fresh_tool", ReadOnly: true, Text: "new"})
	steadyAt := serveScripted(t, steady, "127.0.0.1:0").addr
	oldAt := serveScripted(t, oldTarget, "127.0.0.1:0").addr
	newAt := serveScripted(t, newTarget, "127.0.0.1:0").addr
	freshAt := serveScripted(t, fresh, "127.0.0.1:0").addr
	bin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	goneTools, gonePid := filepath.Join(dir, "gone-tools.json"), filepath.Join(dir, "gone.pid")
	if err := mcptest.WriteTools(goneTools, mcptest.ToolSpec{Name: "note", ReadOnly: true, Text: "noted"}); err != nil {
		t.Fatal(err)
	}
	gone := fmt.Sprintf(`"gone": {"command": %q, "args": ["-pid", %q, %q]}`, bin, gonePid, goneTools)
	steadyEntry := fmt.Sprintf(`"steady": {"type": "http", "url": "http://%s/mcp"}`, steadyAt)
	cfg := filepath.Join(dir, "maven.json")
	first := fmt.Sprintf(`{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}],
		"mcpServers": {%s, "moving": {"type": "http", "url": "http://%s/mcp"}, %s}}`, steadyEntry, oldAt, gone)
	second := fmt.Sprintf(`{"refresh_interval": "1m", "metrics": true, "tools": [{"name": "date", "argv": ["/bin/date"]}],
		"mcpServers": {%s, "moving": {"type": "http", "url": "http://%s/mcp"},
		               "fresh": {"type": "http", "url": "http://%s/mcp", "autoApprove": ["fresh_tool"]}}}`, steadyEntry, newAt, freshAt)
	writeFile(t, cfg, first)
	daemontest.ApproveCommandLines(t, data, cfg)
	d := startDaemon(t, data, "--config", cfg)

	waitFor(t, 15*time.Second, func() bool { return len(toolsJSON(t, data)) == 4 })
	rows := toolsByCmd(t, data)
	withTools(t, data, func(svc *allowlist.Service) {
		enable(t, svc, rows["mcp steady slow_report"].ID)
		enable(t, svc, rows["mcp gone note"].ID)
	})
	pid := pidIn(t, gonePid)
	if !processAlive(pid) {
		t.Fatalf("the stdio server runs as pid %d?", pid)
	}
	steadySince := mcpServers(t, data)["steady"].Since
	token, err := maven(t, data, "voice-token", "--rotate")
	if err != nil {
		t.Fatalf("voice-token: %v %s", err, token)
	}

	// The turn is running when the config changes under it.
	turn := voiceTurnAsync(d.addr, strings.TrimSpace(token), "reload", "slow report")
	waitFor(t, 10*time.Second, func() bool { return steady.Calls("slow_report") == 1 })
	writeFile(t, cfg, second)
	out, err := reload(t, d)
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	select {
	case r := <-turn:
		t.Fatalf("the turn ended before the reload did, so this test shows nothing: %+v", r)
	default:
	}
	if printed {
		for _, want := range []string{
			"config reloaded from " + cfg, "servers added:   fresh", "servers changed: moving (url)",
			"servers removed: gone (stopped; their tools are withdrawn)", "tools added:     date",
			"tools removed:   uptime (withdrawn)", "needs a restart: metrics, refresh_interval (changed, but read only at start",
			"config warning: mcpServers.fresh.autoApprove: ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("maven reload printed no %q:\n%s", want, out)
			}
		}
	}
	if processAlive(pid) {
		t.Errorf("the removed server's process %d outlived the reload", pid)
	}

	select {
	case r := <-turn:
		if r.err != nil || r.reply.Outcome != "ran" || r.reply.Speech != "the slow result" {
			t.Errorf("the turn on the unchanged server: %+v %v", r.reply, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the voice turn never answered")
	}
	waitFor(t, 15*time.Second, func() bool {
		s := mcpServers(t, data)
		return s["fresh"].State == "connected" && s["moving"].State == "connected" && s["moving"].Tools == 1
	})
	servers := mcpServers(t, data)
	if _, ok := servers["gone"]; ok || len(servers) != 3 {
		t.Errorf("servers after the reload: %+v", servers)
	}
	if s := servers["steady"]; s.State != "connected" || !s.Since.Equal(steadySince) || steady.Sessions() != 1 {
		t.Errorf("the unchanged server was redialled: %+v (connected since %s), %d sessions", s, steadySince, steady.Sessions())
	}
	if oldTarget.Sessions() != 0 || newTarget.Sessions() != 1 {
		t.Errorf("the changed server did not move: %d sessions on the old URL, %d on the new", oldTarget.Sessions(), newTarget.Sessions())
	}
	waitFor(t, 10*time.Second, func() bool {
		rows = toolsByCmd(t, data)
		return rows["mcp fresh fresh_tool"].State == "proposed" && rows["mcp moving pong"].State == "proposed"
	})
	for cmd, want := range map[string]string{
		"mcp gone note": "withdrawn:removed from config", "/usr/bin/uptime": "withdrawn:removed from config",
		"/bin/date": "proposed:proposed from the config file", "mcp steady slow_report": "enabled:",
	} {
		if r := rows[cmd]; r.State+":"+r.Provenance != want && !(want == "enabled:" && r.State == "enabled") {
			t.Errorf("%s: %s:%s, want %s", cmd, r.State, r.Provenance, want)
		}
	}

	// A broken config is refused whole: every error named, the running config untouched.
	writeFile(t, cfg, `{"listen": "nowhere", "tols": [], "mcpServers": {"steady": {"type": "http", "url": "ftp://x"}, "bad": {"commnd": "x"}}}`)
	out, err = reload(t, d)
	if printed {
		// 1: the command failed; 2 would say the command line was wrong.
		if exit := new(exec.ExitError); !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("maven reload of a broken config: %v, want exit status 1:\n%s", err, out)
		}
		for _, want := range []string{"was refused and the running config stays", "listen: ", "tols: unknown key",
			"mcpServers.steady.url: ", "mcpServers.bad.commnd: unknown key"} {
			if !strings.Contains(out, want) {
				t.Errorf("maven reload of a broken config does not say %q:\n%s", want, out)
			}
		}
	}
	st := statusJSON(t, data)
	if st.ConfigRefused == nil || len(st.ConfigRefused.Errors) < 4 || st.ConfigRefused.File != cfg || st.ConfigRefused.At.IsZero() {
		t.Fatalf("status after a refused reload: %+v", st.ConfigRefused)
	}
	keys := map[string]bool{}
	for _, e := range st.ConfigRefused.Errors {
		keys[e.Key] = true
	}
	for _, k := range []string{"listen", "tols", "mcpServers.steady.url", "mcpServers.bad.commnd"} {
		if !keys[k] {
			t.Errorf("status does not name the error at %s: %+v", k, st.ConfigRefused.Errors)
		}
	}
	if !strings.Contains(d.stderr.String(), `level=ERROR msg="config: unknown key (did you mean \"tools\"?)" key=tols`) {
		t.Error("the refused config's errors are not in the log")
	}
	if s := mcpServers(t, data); len(s) != 3 || s["steady"].State != "connected" || s["fresh"].State != "connected" {
		t.Errorf("the refused config changed the servers: %+v", s)
	}
	if r := toolsByCmd(t, data)["/bin/date"]; r.State != "proposed" {
		t.Errorf("the refused config changed the tools: %+v", r)
	}

	// The removed server comes back: it proposes its tools again, never enabled by itself.
	writeFile(t, cfg, strings.Replace(second, steadyEntry, steadyEntry+", "+gone, 1))
	if out, err := reload(t, d); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	waitFor(t, 15*time.Second, func() bool { return toolsByCmd(t, data)["mcp gone note"].State == "proposed" })
	if p := toolsByCmd(t, data)["mcp gone note"].Provenance; !strings.Contains(p, "returned unchanged") || !strings.Contains(p, "enabled before") {
		t.Errorf("the returning tool's provenance: %q", p)
	}
	if st := statusJSON(t, data); st.ConfigRefused != nil {
		t.Errorf("a good reload leaves the refusal in status: %+v", st.ConfigRefused)
	}
}

// TestReloadChangedCommandLineWaitsForApproval: a stdio server whose command line changed is
// stopped at once, and the new one waits for the owner's approval: it never starts before.
func TestReloadChangedCommandLineWaitsForApproval(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	bin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	tools, pidFile := filepath.Join(dir, "tools.json"), filepath.Join(dir, "notes.pid")
	if err := mcptest.WriteTools(tools, mcptest.ToolSpec{Name: "read_notes", ReadOnly: true, Text: "notes"}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "maven.json")
	entry := func(extra string) string {
		return fmt.Sprintf(`{"mcpServers": {"notes": {"command": %q, "args": [%s"-pid", %q, %q]}}}`, bin, extra, pidFile, tools)
	}
	writeFile(t, cfg, entry(""))
	daemontest.ApproveCommandLines(t, data, cfg)
	startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool { return mcpServers(t, data)["notes"].State == "connected" })
	pid := pidIn(t, pidFile)

	writeFile(t, cfg, entry(`"-redefine-every", "1h", `))
	out, err := maven(t, data, "reload")
	if err != nil || !strings.Contains(out, "servers changed: notes (args)") || !strings.Contains(out, "waits for you on /tools") {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	if processAlive(pid) {
		t.Errorf("the old process %d still runs", pid)
	}
	waitFor(t, 10*time.Second, func() bool { return mcpServers(t, data)["notes"].State == "awaiting-approval" })
	st := statusJSON(t, data)
	if len(st.AwaitingApproval) != 1 || st.AwaitingApproval[0].Server != "notes" || !strings.Contains(st.AwaitingApproval[0].Command, "-redefine-every 1h") {
		t.Errorf("status: %+v", st.AwaitingApproval)
	}
	if p := pidIn(t, pidFile); p != pid {
		t.Errorf("the changed command line started (pid %d) before it was approved", p)
	}
	if r := toolsByCmd(t, data)["mcp notes read_notes"]; r.State != "proposed" {
		t.Errorf("a server waiting for approval withdrew its rows: %+v", r)
	}
}

// TestConcurrentReloadsAreSerialized: reloads asked for at once run one after the other, so
// exactly one of them adds the new server and the others find nothing to change.
func TestConcurrentReloadsAreSerialized(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")
	writeFile(t, cfg, `{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}]}`)
	d := startDaemon(t, data, "--config", cfg)
	writeFile(t, cfg, `{"tools": [{"name": "uptime", "argv": ["/usr/bin/uptime"]}, {"name": "date", "argv": ["/bin/date"]}],
		"mcpServers": {"far": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}`)
	const n = 6
	type answer struct {
		out []byte
		err error
	}
	answers := make(chan answer, n+1)
	for range n {
		go func() {
			out, err := exec.Command(mavenBinary(t), "reload", "--json", "--data", data).Output()
			answers <- answer{out, err}
		}()
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	added := 0
	for range n {
		a := <-answers
		var res reloadResult
		if a.err != nil || json.Unmarshal(a.out, &res) != nil || !res.Applied {
			t.Fatalf("a concurrent reload: %v\n%s", a.err, a.out)
		}
		added += len(res.Servers.Added)
		if len(res.Servers.Added) == 0 && !res.Changes.None() {
			t.Errorf("a reload after the one that applied the change still saw changes: %+v", res.Changes)
		}
	}
	// The SIGHUP may have come first and applied the change itself.
	waitFor(t, 10*time.Second, func() bool {
		return strings.Count(d.stderr.String(), `msg="config reloaded"`) == n+1
	})
	if n := strings.Count(d.stderr.String(), `servers_added=[far]`); n != 1 || added > 1 {
		t.Errorf("the server was added by %d reloads (%d of them by the CLI)", n, added)
	}
	if s := mcpServers(t, data); len(s) != 1 || s["far"].Name != "far" {
		t.Errorf("servers: %+v", s)
	}
	if rows := toolsJSON(t, data); len(rows) != 2 {
		t.Errorf("rows: %+v", rows)
	}
}

// TestRestartWithdrawsRowsOfRemovedServers: a server taken out of the config while the daemon
// was stopped has its rows withdrawn at the next start, enabled ones included; put back, it
// proposes them again. A start without any config file (the defaults) withdraws nothing: no
// file said the server is gone.
func TestRestartWithdrawsRowsOfRemovedServers(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	remote := mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", ReadOnly: true, Text: "none"},
		mcptest.ToolSpec{Name: "add_task", Text: "added"})
	defer remote.Close()
	at := serveScripted(t, remote, "127.0.0.1:0").addr
	cfg := filepath.Join(dir, "maven.json")
	with := fmt.Sprintf(`{"mcpServers": {"tasks": {"type": "http", "url": "http://%s/mcp"}}}`, at)
	writeFile(t, cfg, with)
	d := startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool { return len(toolsJSON(t, data)) == 2 })
	listTasks := toolsByCmd(t, data)["mcp tasks list_tasks"].ID
	d.stop(t)
	enableOffline(t, data, listTasks)

	d = startDaemon(t, data) // no config file where it looks: the defaults
	if r := toolsByCmd(t, data); r["mcp tasks list_tasks"].State != "enabled" || r["mcp tasks add_task"].State != "proposed" {
		t.Errorf("a start on the defaults withdrew rows: %+v", r)
	}
	d.stop(t)

	writeFile(t, cfg, `{}`)
	d = startDaemon(t, data, "--config", cfg)
	for cmd, r := range toolsByCmd(t, data) {
		if r.State != "withdrawn" || r.Provenance != "removed from config" {
			t.Errorf("%s after a start without its server: %s %q", cmd, r.State, r.Provenance)
		}
	}
	if !strings.Contains(d.stderr.String(), `mcp_server=tasks`) {
		t.Errorf("the withdrawal is not logged:\n%s", d.stderr.String())
	}
	d.stop(t)

	writeFile(t, cfg, with)
	startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool {
		for _, r := range toolsJSON(t, data) {
			if r.State != "proposed" {
				return false
			}
		}
		return true
	})
	if p := toolsByCmd(t, data)["mcp tasks list_tasks"].Provenance; !strings.Contains(p, "returned unchanged") || !strings.Contains(p, "enabled before") {
		t.Errorf("provenance of the returning enabled tool: %q", p)
	}
}

// TestReloadOfAMissingFileIsRefused: once the daemon runs on a file, a reload that finds it gone
// is refused like a broken one, rather than running on the defaults and withdrawing every
// server's rows.
func TestReloadOfAMissingFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	remote := mcptest.NewScripted(mcptest.ToolSpec{Name: "list_tasks", ReadOnly: true, Text: "none"})
	defer remote.Close()
	at := serveScripted(t, remote, "127.0.0.1:0").addr
	cfg := filepath.Join(dir, "maven.json")
	writeFile(t, cfg, fmt.Sprintf(`{"mcpServers": {"tasks": {"type": "http", "url": "http://%s/mcp"}}}`, at))
	d := startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool { return toolsByCmd(t, data)["mcp tasks list_tasks"].State == "proposed" })
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	out, err := maven(t, data, "reload")
	if err == nil || !strings.Contains(out, "cannot read") {
		t.Fatalf("a reload of a missing file: %v\n%s", err, out)
	}
	if s := mcpServers(t, data)["tasks"]; s.State != "connected" {
		t.Errorf("the server after a refused reload: %+v\n%s", s, d.stderr.String())
	}
	if r := toolsByCmd(t, data)["mcp tasks list_tasks"]; r.State != "proposed" {
		t.Errorf("the row after a refused reload: %+v", r)
	}
	if st := statusJSON(t, data); st.ConfigRefused == nil || !strings.Contains(st.ConfigRefused.Errors[0].Msg, "cannot read") {
		t.Errorf("status: %+v", st.ConfigRefused)
	}
}

// TestStartCardFollowsReload: a daemon started on the defaults (no maven.json where it looks)
// says so on an empty /tools; once the owner writes the file and reloads, the page says the
// config came from it.
func TestStartCardFollowsReload(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	d := runDaemon(t, daemontest.Command(mavenBinary(t), data, dir), data)
	link := newSetupLink(t, data)
	ctx := context.Background()
	b := daemontest.NewBrowser(d.proc)
	if _, err := b.Register(ctx, link.URL, authtest.New(d.proc.Origin()), "Phone"); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "maven.json")
	page := func(want string) {
		t.Helper()
		status, body, err := b.Do(ctx, "GET", "/tools", "", nil)
		if err != nil || status != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("/tools: %d %v; want %q in:\n%s", status, err, want, body)
		}
	}
	page("No config file was found at <code>" + cfg + "</code>")
	writeFile(t, cfg, `{}`)
	if out, err := maven(t, data, "reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	page("Maven read its config from <code>" + cfg + "</code>")
}
