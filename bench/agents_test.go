package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/db"
)

// Targets of the agents' figures (issue 20's, as ratios to their floors, issue 23).
const (
	targetAgentCallRatio = 1.2 // a call through /mcp ÷ (the same call direct + GET /healthz)
	targetAgentListRatio = 40  // tools/list of 1,000 rows ÷ GET /healthz, as /tools' search partial
	// A redefinition reaches a listening agent within the reconcile's own time again.
	targetAgentChangeRatio = 2
	// 100 sessions grow the daemon by 20 MB at most over what it holds before them: the ratio's
	// target is 1 + 20 MB ÷ the floor, as measured.
	targetAgentSessionsGrowth = 20e6
	targetAgentBootRatio      = 1.2
)

// agentClients is how many static clients the call figure spreads its calls over: each client
// may make 10 calls a second (agents.DefaultCallsPerSecond, 30 at once), and the figure makes
// a few hundred.
const agentClients = 40

// agentBench is a daemon whose agents see 1,000 enabled rows: search_tasks of the tasks server
// (in allow_tools, so that an agent's call with arguments runs at once), 989 tools of the many
// server, and the 10 tools of the modern server, a 2026-07-28 server that redefines its tools on
// SIGHUP. Each upstream is scripted-mcp serving streamable HTTP from a process of its own.
type agentBench struct {
	d          *daemon
	tasks      *voiceRemote       // the tasks server and a direct session on it
	relay      *sdk.ClientSession // a session on a bare relay of the tasks server (mcptest.Relay)
	scripted   string             // the scripted-mcp binary
	modernPID  int
	modernFile string
	modern     []mcptest.ToolSpec
	rows       map[string]int64 // row id by remote name, of the modern server's rows
	search     string           // the local name of the tasks server's search_tasks
	tokens     []string         // the static clients' tokens
	transport  *http.Transport  // the agents' connections
}

const (
	agentManyTools   = 989
	agentModernTools = 10
)

// startAgentBench starts the daemon and its upstreams, enables every row as the owner would
// (with the daemon stopped, through the test's stand-in for the passkey, as benchVoiceHTTP
// does), adds the static clients over IPC, and returns once every server is connected.
func startAgentBench(t *testing.T, bin, scripted string) *agentBench {
	dir := t.TempDir()
	ab := &agentBench{tasks: startVoiceRemote(t, scripted), rows: map[string]int64{}, scripted: scripted,
		transport: &http.Transport{MaxIdleConnsPerHost: 200, IdleConnTimeout: time.Minute}}
	t.Cleanup(ab.transport.CloseIdleConnections)
	many := make([]mcptest.ToolSpec, agentManyTools)
	for i := range many {
		many[i] = mcptest.ToolSpec{Name: fmt.Sprintf("list_items_%04d", i), ReadOnly: true, Text: "ok",
			Description: fmt.Sprintf("Lists the items of shelf %d; returns at most 50 as JSON, newest first.", i)}
	}
	manyFile := filepath.Join(dir, "many.json")
	if err := mcptest.WriteTools(manyFile, many...); err != nil {
		t.Fatal(err)
	}
	ab.modern = make([]mcptest.ToolSpec, agentModernTools)
	for i := range ab.modern {
		ab.modern[i] = mcptest.ToolSpec{Name: fmt.Sprintf("list_%02d", i), Description: "Lists tasks.", ReadOnly: true, Text: "milk"}
	}
	ab.modernFile = filepath.Join(dir, "modern.json")
	if err := mcptest.WriteTools(ab.modernFile, ab.modern...); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "modern.pid")
	modernURL := startScriptedHTTP(t, scripted, ab.modernFile, "-era", "modern", "-pid", pidFile)
	manyURL := startScriptedHTTP(t, scripted, manyFile)
	cfg := writeFile(t, dir, "maven.json", []byte(fmt.Sprintf(`{"mcpServers": {
		"tasks": {"type": "http", "url": %q, "allow_tools": ["search_tasks"]},
		"many": {"type": "http", "url": %q},
		"modern": {"type": "http", "url": %q}}}`, ab.tasks.url, manyURL, modernURL)))
	data := filepath.Join(dir, "data")
	ab.d = startEnabled(t, bin, data, cfg, 1+agentManyTools+agentModernTools)
	ab.relay = connectSDK(t, startRelay(t, scripted, ab.tasks.url, ""))
	for _, row := range ipcTools(t, ab.d) {
		if len(row.Cmd) == 3 && row.Cmd[1] == "modern" {
			ab.rows[row.Cmd[2]] = row.ID
		}
		if strings.Join(row.Cmd, " ") == "mcp tasks search_tasks" {
			ab.search = row.Name
		}
	}
	for i := range agentClients {
		var added struct {
			Token string `json:"token"`
		}
		ab.d.call(t, "client_add", map[string]any{"name": fmt.Sprintf("agent %d", i)}, &added)
		ab.tokens = append(ab.tokens, added.Token)
	}
	waitFor(t, "the modern server's pid", 30*time.Second, func() bool {
		b, _ := os.ReadFile(pidFile)
		ab.modernPID, _ = strconv.Atoi(string(b))
		return ab.modernPID > 0
	})
	return ab
}

// ipcRow is a row of the tools IPC method, as the bench reads it.
type ipcRow struct {
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Cmd   []string `json:"cmd"`
	State string   `json:"state"`
}

func ipcTools(t *testing.T, d *daemon) []ipcRow {
	var rows []ipcRow
	d.call(t, "tools", nil, &rows)
	return rows
}

// startEnabled starts the daemon on cfg, waits until want rows are proposed, stops it, enables
// every row with the test's stand-in for the owner's passkey, and starts it again.
func startEnabled(t *testing.T, bin, data, cfg string, want int) *daemon {
	ctx := context.Background()
	d := startDaemon(t, bin, data, cfg)
	var rows []ipcRow
	waitFor(t, fmt.Sprintf("%d rows to be proposed", want), 60*time.Second, func() bool {
		rows = ipcTools(t, d)
		return len(rows) >= want
	})
	d.stop(t)
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	service := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	for _, r := range rows {
		row, err := service.Get(ctx, r.ID)
		if err == nil {
			_, err = service.EnableTool(ctx, r.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, r.ID, row.ApprovalDigest())))
		}
		if err != nil {
			bdb.Close()
			t.Fatal(err)
		}
	}
	bdb.Close()
	d = startDaemon(t, bin, data, cfg)
	d.waitServers(t, "every server to connect", func(s mcp.ServerStatus) bool { return s.State == mcp.StateConnected })
	return d
}

// agent connects an agent of the client with token to /mcp, with go-sdk's client; era names
// the protocol it asks for ("" for go-sdk's latest), and changed, if set, hears its list
// changes.
func (ab *agentBench) agent(t *testing.T, token, era string, changed func()) *sdk.ClientSession {
	t.Helper()
	var opts *sdk.ClientOptions
	if changed != nil {
		opts = &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed() }}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench-agent", Version: "0"}, opts)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: mcptest.Bearer{Token: token, Base: ab.transport}}
	var sessOpts *sdk.ClientSessionOptions
	if era != "" {
		sessOpts = &sdk.ClientSessionOptions{ProtocolVersion: era}
	}
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ab.d.Origin() + "/mcp", HTTPClient: hc}, sessOpts)
	if err != nil {
		t.Fatalf("an agent's connect to /mcp: %v\n%s", err, ab.d.Log.String())
	}
	return cs
}

// resultText is the text of a tool result, for a failure's message.
func resultText(res *sdk.CallToolResult) string {
	if res == nil {
		return "no result"
	}
	var parts []string
	for _, c := range res.Content {
		if text, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, text.Text)
		}
	}
	return fmt.Sprintf("isError %v: %s", res.IsError, strings.Join(parts, " "))
}

// agentCallTimes are the call figure's sides: an agent's call through /mcp, the same call
// straight to the tasks server, a bare GET /healthz of the daemon, and the same call through a
// bare relay of the tasks server (go-sdk's server and client with nothing between).
type agentCallTimes struct{ agent, direct, health, relay []time.Duration }

// benchAgentCall times an agent's search_tasks call through /mcp against the same call made
// directly on the tasks server, GET /healthz, and the same call through a bare relay of the
// tasks server, interleaved in one loop (the order rotates), n times each; the agents' calls go
// round agentClients clients, one session each.
func benchAgentCall(t *testing.T, ab *agentBench, n int) agentCallTimes {
	ctx := context.Background()
	sessions := make([]*sdk.ClientSession, len(ab.tokens))
	for i, tok := range ab.tokens {
		sessions[i] = ab.agent(t, tok, "", nil)
		defer sessions[i].Close()
	}
	params := &sdk.CallToolParams{Name: ab.search, Arguments: map[string]any{"query": "milk"}}
	call := func(i int) time.Duration {
		start := time.Now()
		res, err := sessions[i%len(sessions)].CallTool(ctx, params)
		took := time.Since(start)
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("an agent's call: %v %s\n%s", err, resultText(res), ab.d.Log.String())
		}
		if text, ok := res.Content[0].(*sdk.TextContent); !ok || !strings.Contains(text.Text, "milk") {
			t.Fatalf("an agent's call answered %+v", res.Content[0])
		}
		return took
	}
	relayed := func() time.Duration {
		start := time.Now()
		res, err := ab.relay.CallTool(ctx, &sdk.CallToolParams{Name: "search_tasks", Arguments: map[string]any{"query": "milk"}})
		took := time.Since(start)
		if err != nil || res.IsError || !strings.Contains(resultText(res), "milk") {
			t.Fatalf("a call through the relay: %v %s", err, resultText(res))
		}
		return took
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	for i := range 2 * len(sessions) {
		call(i)
		ab.tasks.call(t)
		ab.d.healthz(t, hc)
		relayed()
	}
	var at agentCallTimes
	for i := range n {
		steps := []func(){
			func() { at.agent = append(at.agent, call(i)) },
			func() { at.direct = append(at.direct, ab.tasks.call(t)) },
			func() { at.health = append(at.health, ab.d.healthz(t, hc)) },
			func() { at.relay = append(at.relay, relayed()) },
		}
		for j := range steps {
			steps[(i+j)%len(steps)]()
		}
	}
	return at
}

// listRecorder keeps the first tools/list request go-sdk's client sends, headers and body, so
// that the bench can send the same request itself.
type listRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (l *listRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		l.mu.Lock()
		if l.body == nil && bytes.Contains(body, []byte(`"tools/list"`)) {
			l.header, l.body = r.Header.Clone(), body
		}
		l.mu.Unlock()
	}
	return l.base.RoundTrip(r)
}

// nextCursorRE finds the cursor of a tools/list answer's next page.
var nextCursorRE = regexp.MustCompile(`"nextCursor":"([^"]+)"`)

// agentListTimes are the list figure's sides: an agent's tools/list of the 1,000 rows through
// /mcp, a bare GET /healthz of the daemon, the same listing from a bare go-sdk server offering
// the same 1,000 tools (a relay of Maven's list), and the listing through go-sdk's client.
type agentListTimes struct{ list, health, bare, sdkList []time.Duration }

// benchAgentList times an agent's whole tools/list (every page) of the 1,000 rows against GET
// /healthz and against the same listing from a bare go-sdk server offering the same tools (a
// relay of Maven's list, started here: go-sdk's own encoding of the answer), interleaved, n
// times each. The list is the request go-sdk's client sends (a 2026-07-28 one, recorded once),
// sent over plain HTTP and read to its end, so that what is timed is the server's answer, not the
// client's decoding of it; after them, for reference, the same listing through go-sdk's client,
// whose decoding checks every tool's schema again.
func benchAgentList(t *testing.T, ab *agentBench, n int) agentListTimes {
	ctx := context.Background()
	rec := &listRecorder{base: ab.transport}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench-agent", Version: "0"}, nil)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: mcptest.Bearer{Token: ab.tokens[0], Base: rec}}
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ab.d.Origin() + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	want := 1 + agentManyTools + agentModernTools
	viaSDK := func() time.Duration {
		start := time.Now()
		count := 0
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			count++
		}
		took := time.Since(start)
		if count != want {
			t.Fatalf("tools/list gave %d tools, want %d", count, want)
		}
		return took
	}
	viaSDK()
	if rec.body == nil {
		t.Fatal("go-sdk's client sent no tools/list")
	}
	raw := &http.Client{Timeout: 30 * time.Second, Transport: mcptest.Bearer{Token: ab.tokens[0], Base: ab.transport}}
	bareURL := startRelay(t, ab.scripted, ab.d.Origin()+"/mcp", ab.tokens[0])
	page := func(url, cursor string) []byte {
		body := rec.body
		if cursor != "" {
			var msg map[string]any
			if err := json.Unmarshal(body, &msg); err != nil {
				t.Fatal(err)
			}
			params, _ := msg["params"].(map[string]any)
			if params == nil {
				params = map[string]any{}
			}
			params["cursor"] = cursor
			msg["params"] = params
			if body, err = json.Marshal(msg); err != nil {
				t.Fatal(err)
			}
		}
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = rec.header.Clone()
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list over HTTP: %d %v %.300s", resp.StatusCode, err, answer)
		}
		return answer
	}
	once := func(url string) time.Duration {
		start := time.Now()
		tools, cursor := 0, ""
		for {
			answer := page(url, cursor)
			tools += bytes.Count(answer, []byte(`"inputSchema"`))
			m := nextCursorRE.FindSubmatch(answer)
			if m == nil {
				break
			}
			cursor = string(m[1])
		}
		took := time.Since(start)
		if tools != want {
			t.Fatalf("tools/list of %s over HTTP gave %d tools, want %d", url, tools, want)
		}
		return took
	}
	hcHealth := &http.Client{Timeout: 30 * time.Second}
	var lt agentListTimes
	steps := []func(){
		func() { lt.list = append(lt.list, once(ab.d.Origin()+"/mcp")) },
		func() { lt.health = append(lt.health, ab.d.healthz(t, hcHealth)) },
		func() { lt.bare = append(lt.bare, once(bareURL)) },
	}
	for range 5 {
		for _, step := range steps {
			step()
		}
	}
	lt = agentListTimes{}
	for r := range n {
		for j := range steps {
			steps[(r+j)%len(steps)]()
		}
	}
	for range max(5, n/10) {
		lt.sdkList = append(lt.sdkList, viaSDK())
	}
	return lt
}

// benchAgentChange times, n times, the modern server redefining one enabled tool (its tools
// file rewritten, then SIGHUP) to a listening agent hearing its list changed, and beside it, from
// the same signal, the row read back as proposed from the daemon's database: Maven's own
// reconcile, the floor. The agent holds a 2025-era session (the list change comes on its event
// stream). Changes are RefreshGap apart, as in benchListen.
func benchAgentChange(t *testing.T, ab *agentBench, n int) (heard, reconciled []time.Duration) {
	ctx := context.Background()
	changes := make(chan time.Time, 16)
	cs := ab.agent(t, ab.tokens[0], "2025-11-25", func() {
		select {
		case changes <- time.Now():
		default:
		}
	})
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bdb, err := db.Open(ctx, filepath.Join(ab.d.Data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	rows := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	for i := range min(n, len(ab.modern)) {
		spec := &ab.modern[i]
		id := ab.rows[spec.Name]
		time.Sleep(mcp.DefaultRefreshGap + 100*time.Millisecond) // past the gap since the last list
		for len(changes) > 0 {
			<-changes
		}
		spec.Description = fmt.Sprintf("Lists tasks (redefinition %d).", i)
		if err := mcptest.WriteTools(ab.modernFile, ab.modern...); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := syscall.Kill(ab.modernPID, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		var done time.Duration
		for done == 0 {
			row, err := rows.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if row.State == allowlist.StateProposed {
				done = time.Since(start)
			} else if time.Since(start) > 30*time.Second {
				t.Fatalf("the redefinition never brought %s back to proposed", spec.Name)
			}
			time.Sleep(200 * time.Microsecond)
		}
		select {
		case at := <-changes:
			heard = append(heard, at.Sub(start))
			reconciled = append(reconciled, done)
		case <-time.After(30 * time.Second):
			t.Fatalf("the agent never heard that %s changed", spec.Name)
		}
	}
	return heard, reconciled
}

// agentSessions is how many agent sessions the memory figure holds open at once.
const agentSessions = 100

// benchAgentSessions reads the daemon's resident memory before, while agentSessions 2025-era
// agent sessions of one client (each with its event stream, and having listed the 1,000 tools
// once) are open at once, and 5 s after they closed them (each agent ending its session, as a
// client does). The client's servers are built by its first session (agents.Service.Servers),
// so the growth includes them once.
func benchAgentSessions(t *testing.T, ab *agentBench) (before, open, after int64) {
	ctx := context.Background()
	pid := ab.d.Cmd.Process.Pid
	time.Sleep(5 * time.Second) // the daemon's start settled
	before = procStatus(t, pid, "VmRSS")
	sessions := make([]*sdk.ClientSession, agentSessions)
	var wg sync.WaitGroup
	for i := range sessions {
		sessions[i] = ab.agent(t, ab.tokens[0], "2025-11-25", func() {})
		wg.Go(func() {
			if _, err := sessions[i].ListTools(ctx, nil); err != nil {
				t.Errorf("tools/list: %v", err)
			}
		})
	}
	wg.Wait()
	time.Sleep(5 * time.Second)
	open = procStatus(t, pid, "VmRSS")
	for _, cs := range sessions {
		cs.Close()
	}
	time.Sleep(5 * time.Second)
	after = procStatus(t, pid, "VmRSS")
	return before, open, after
}

// benchAgentBoot times boot to ready of two daemons on data directories of their own, booted
// again and again (alternating): one with agentClients static clients and their tools, one
// with none. Only the clients differ: both have the tasks server configured, black-holed.
func benchAgentBoot(t *testing.T, bin string, hole string, rounds int) (none, agents []time.Duration) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "maven.json", blackHoleConfig([]string{hole}, false))
	datas := [2]string{filepath.Join(dir, "none"), filepath.Join(dir, "agents")}
	for i, data := range datas {
		d := startDaemon(t, bin, data, cfg)
		if i == 1 {
			for c := range agentClients {
				d.call(t, "client_add", map[string]any{"name": fmt.Sprintf("agent %d", c)}, nil)
			}
		}
		d.stop(t)
	}
	boot := func(data string) time.Duration {
		start := time.Now()
		d := startDaemon(t, bin, data, cfg)
		took := time.Since(start)
		d.stop(t)
		return took
	}
	boot(datas[0])
	boot(datas[1])
	var took [2][]time.Duration
	for r := range rounds {
		for _, i := range order(r) {
			took[i] = append(took[i], boot(datas[i]))
		}
	}
	return took[0], took[1]
}

// reportAgents adds the agents' figures (issue 20's targets as ratios).
func reportAgents(t *testing.T, e *benchEnv, rep *report) {
	ab := startAgentBench(t, e.bin, buildScripted(t, e.dir))

	before, open, after := benchAgentSessions(t, ab)
	rep.quotient(fmt.Sprintf("Resident memory (VmRSS) with %d agent sessions open at once (2025 era, each having listed the 1,000 tools)", agentSessions),
		fmt.Sprintf("%s (+%s)", mib(open), mib(open-before)), mib(before)+" (the daemon before them; the target is 20 MB more)",
		float64(open)/float64(before), 1+targetAgentSessionsGrowth/float64(before*1024))
	rep.add("Resident memory 5 s after the agents ended those sessions (an idle one ends after 10 min: `TestAgentsSessionsAreBoundedAndIdleOnesEnd`)", mib(after))

	at := benchAgentCall(t, ab, e.n(1001))
	floor := median(at.direct) + median(at.health)
	rep.quotient("An agent's read-only call (`tools/call` through `/mcp`, a static client's token)", ms(median(at.agent)),
		fmt.Sprintf("%s (the same call straight to the server %s + `GET /healthz` %s)", ms(floor), ms(median(at.direct)), ms(median(at.health))),
		ratio(median(at.agent), floor), targetAgentCallRatio)
	relay := median(at.relay)
	rep.reference("The same agent's call beside the same call through a bare relay (`mcptest.Relay`: go-sdk's server and client, nothing between)",
		ms(median(at.agent)), fmt.Sprintf("%s (the relay; itself %.2f× the call's floor above)", ms(relay), ratio(relay, floor)),
		ratio(median(at.agent), relay))
	rep.raw("agent's call through /mcp", at.agent)
	rep.raw("the same call straight to the server, beside it", at.direct)
	rep.raw("GET /healthz, beside it", at.health)
	rep.raw("the same call through a bare go-sdk relay, beside it", at.relay)

	lt := benchAgentList(t, ab, e.n(201))
	rep.versus(fmt.Sprintf("An agent's `tools/list` of 1,000 enabled rows, over HTTP (median %s; issue 20 asked ≤ 5 ms)", ms(median(lt.list))),
		lt.list, lt.health, "`GET /healthz`", targetAgentListRatio)
	rep.reference("The same listing beside a bare go-sdk server offering the same 1,000 tools (a relay of Maven's list)",
		ms(median(lt.list)), ms(median(lt.bare))+" (the bare server)", ratio(median(lt.list), median(lt.bare)))
	rep.add("The same listing through go-sdk's client, its decoding of the 1,000 tools included: median", ms(median(lt.sdkList)))
	rep.raw("agent's tools/list over HTTP, 1,000 rows", lt.list)
	rep.raw("GET /healthz, beside it", lt.health)
	rep.raw("the same listing from a bare go-sdk server, beside it", lt.bare)
	rep.raw("the same listing through go-sdk's client", lt.sdkList)

	heard, reconciled := benchAgentChange(t, ab, agentModernTools)
	rep.versus(fmt.Sprintf("A 2026-07-28 server redefines an enabled tool → a connected agent hears its list changed (median of %d)", len(heard)),
		heard, reconciled, "the row back in `proposed`: Maven's reconcile, from the same signal", targetAgentChangeRatio)
	rep.raw("server's list change to the agent hearing it", heard)
	rep.raw("server's list change to the row in proposed, beside it", reconciled)
	ab.d.stop(t)

	none, agents := benchAgentBoot(t, e.bin, e.holes.Addrs[0], e.n(41))
	rep.versus(fmt.Sprintf("Boot to ready with %d agents' clients configured", agentClients), agents, none, "no clients", targetAgentBootRatio)
	rep.raw("boot, no clients", none)
	rep.raw(fmt.Sprintf("boot, %d clients", agentClients), agents)

	alone, withAgents := benchUnlockOf(t, e.bin, [2]unlockSetup{{cfg: []byte(`{}`)}, {cfg: []byte(`{}`), prepare: withAgentClients}}, e.n(101))
	rep.versus(fmt.Sprintf("Unlock answer (`POST /unlock/finish`) with %d agents' clients and one agent connected", agentClients),
		withAgents, alone, "no clients", targetAgentBootRatio)
	rep.raw("unlock answer, no clients", alone)
	rep.raw(fmt.Sprintf("unlock answer, %d clients and an agent", agentClients), withAgents)
}

// withAgentClients adds agentClients static clients to a daemon and connects one agent (a
// 2025-era session, listening for list changes) for as long as the test runs.
func withAgentClients(t *testing.T, s *unlockSide) {
	var token string
	for c := range agentClients {
		var added struct {
			Token string `json:"token"`
		}
		s.d.call(t, "client_add", map[string]any{"name": fmt.Sprintf("agent %d", c)}, &added)
		token = added.Token
	}
	ab := &agentBench{d: s.d, transport: &http.Transport{}}
	cs := ab.agent(t, token, "2025-11-25", func() {})
	t.Cleanup(func() { cs.Close() })
}
