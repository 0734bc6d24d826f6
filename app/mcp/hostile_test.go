package mcp

// The hostile-server suite (issue 7): one Manager with the real ToolReconciler on a real SQLite
// database, a well-behaved server whose row the owner enabled, and servers that misbehave. Each
// test checks that the good server keeps working, that nothing a hostile server did withdraws or
// enables a row (docs/design.md#rule-6, docs/design.md#rule-8, docs/design.md#rule-10), and that no
// goroutine outlives Close.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp/mcptest"
	"maven/db"
	"maven/internal/testenv"
)

// hostileOptions are short timeouts, so that stalls cost the suite little time. RefreshGap is
// the daemon's default.
func hostileOptions() ManagerOptions {
	return ManagerOptions{
		RefreshInterval:   time.Hour,
		RefreshGap:        DefaultRefreshGap,
		DialTimeout:       2 * time.Second,
		ListTimeout:       500 * time.Millisecond,
		CallTimeout:       500 * time.Millisecond,
		KeepAlive:         500 * time.Millisecond,
		BackoffMin:        50 * time.Millisecond,
		BackoffMax:        400 * time.Millisecond,
		TerminateDuration: 200 * time.Millisecond,
	}
}

// The tools every hostile server lists when it lists properly; the first one's row is enabled
// before the Manager starts, as if the owner had approved it in an earlier run.
var hostileTools = []hostileTool{
	{Name: "lights_on", Description: "Turns the lights on.", ReadOnly: false},
	{Name: "lights_status", Description: "Says which lights are on.", ReadOnly: true},
	{Name: "thermostat", Description: "Reads the thermostat.", ReadOnly: true},
}

// hostileServer is one configured hostile server.
type hostileServer struct {
	name   string
	script hostileScript
	cfg    config.Server
	http   *hostileHTTP // nil for stdio
}

func hostileOverHTTP(t *testing.T, name string, script hostileScript) hostileServer {
	t.Helper()
	if script.Tools == nil {
		script.Tools = hostileTools
	}
	h := newHostileHTTP(script)
	srv := newRestartable(t, h)
	t.Cleanup(h.close) // runs before srv.stop: cleanups run last-in first-out
	return hostileServer{name: name, script: script, http: h,
		cfg: config.Server{Type: config.TransportHTTP, URL: srv.url("/mcp")}}
}

func hostileOverStdio(name string, script hostileScript) hostileServer {
	if script.Tools == nil {
		script.Tools = hostileTools
	}
	return hostileServer{name: name, script: script, cfg: script.stdioConfig()}
}

// countingReconciler counts the complete lists the Manager hands to the real reconciler.
type countingReconciler struct {
	*ToolReconciler
	mu sync.Mutex
	n  map[string]int
}

func (c *countingReconciler) Reconcile(ctx context.Context, server string, tools []*sdk.Tool) error {
	c.mu.Lock()
	c.n[server]++
	c.mu.Unlock()
	return c.ToolReconciler.Reconcile(ctx, server, tools)
}

func (c *countingReconciler) count(server string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[server]
}

// hostileEnv is one daemon's worth of MCP: database, allowlist, reconciler and Manager.
type hostileEnv struct {
	t          *testing.T
	ctx        context.Context
	bdb        *bun.DB
	svc        *allowlist.Service
	rec        *countingReconciler
	m          *Manager
	servers    map[string]hostileServer
	good       *mcptest.Scripted
	goodSrv    *restartable
	goodName   string
	goodTool   string
	goodID     int64
	goroutines int // before the Manager started
	finished   bool
}

// goodEcho is the good server's enabled tool.
var goodEcho = mcptest.ToolSpec{Name: "echo", Description: "Echoes its arguments.", ReadOnly: true, Echo: true}

// newHostileEnv seeds and enables rows for the hostile servers, starts a good scripted server
// over streamable HTTP, runs a Manager over all of them, waits for the good server's row and
// enables it. A good server passed in replaces the scripted one; its tool is the one enabled.
func newHostileEnv(t *testing.T, opts ManagerOptions, hostile []hostileServer, good ...goodServer) *hostileEnv {
	t.Helper()
	e := &hostileEnv{t: t, ctx: context.Background(), servers: map[string]hostileServer{},
		goroutines: runtime.NumGoroutine()}
	var err error
	e.bdb, err = db.Open(e.ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	e.svc = allowlist.NewService(db.NewToolStore(e.bdb), time.Now)
	e.rec = &countingReconciler{ToolReconciler: NewToolReconciler(e.svc, time.Now, testLogger(t)), n: map[string]int{}}
	t.Cleanup(func() { e.finish(false) })

	servers := map[string]config.Server{}
	for _, h := range hostile {
		// An earlier session listed the tools and the owner enabled the first.
		if err := e.rec.ToolReconciler.Reconcile(e.ctx, h.name, h.script.sdkTools()); err != nil {
			t.Fatal(err)
		}
		e.enable(h.name, h.script.Tools[0].Name)
		e.servers[h.name] = h
		servers[h.name] = h.cfg
	}
	if len(good) == 0 {
		e.good = mcptest.NewScripted(goodEcho)
		e.goodSrv = newRestartable(t, e.good.HTTPHandler())
		t.Cleanup(e.good.Close)
		good = []goodServer{{name: "good", tool: "echo", cfg: config.Server{Type: config.TransportHTTP, URL: e.goodSrv.url("/mcp")}}}
	}
	e.goodName, e.goodTool = good[0].name, good[0].tool
	servers[e.goodName] = good[0].cfg

	e.m = NewManager(servers, e.rec, opts, testLogger(t))
	e.m.Run(e.ctx)
	waitFor(t, 30*time.Second, "the good server's rows", func() bool {
		rows, err := e.svc.List(e.ctx, allowlist.Filter{Scope: allowlist.MCPScope(e.goodName)})
		return err == nil && slices.ContainsFunc(rows, func(r allowlist.Tool) bool { return r.RemoteName() == e.goodTool })
	})
	e.goodID = e.enable(e.goodName, e.goodTool)
	return e
}

// goodServer is a well-behaved server other than the default scripted one.
type goodServer struct {
	name, tool string
	cfg        config.Server
}

// enable enables server's row for tool with a test step-up and returns its id.
func (e *hostileEnv) enable(server, tool string) int64 {
	e.t.Helper()
	row := e.row(server, tool)
	if _, err := e.svc.EnableTool(e.ctx, row.ID, authtest.Proof(e.t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		e.t.Fatalf("enable %s/%s: %v", server, tool, err)
	}
	return row.ID
}

func (e *hostileEnv) rows(server string) []allowlist.Tool {
	e.t.Helper()
	rows, err := e.svc.List(e.ctx, allowlist.Filter{Scope: allowlist.MCPScope(server)})
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func (e *hostileEnv) row(server, tool string) allowlist.Tool {
	e.t.Helper()
	for _, r := range e.rows(server) {
		if r.RemoteName() == tool {
			return r
		}
	}
	e.t.Fatalf("no row for %s/%s", server, tool)
	return allowlist.Tool{}
}

// events returns the audit trail of server's rows.
func (e *hostileEnv) events(server string) []allowlist.Event {
	e.t.Helper()
	ids := map[int64]bool{}
	for _, r := range e.rows(server) {
		ids[r.ID] = true
	}
	all, err := e.svc.Events(e.ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []allowlist.Event
	for _, ev := range all {
		if ids[ev.ToolID] {
			out = append(out, ev)
		}
	}
	return out
}

// callGood calls the good server's enabled tool and fails the test unless it answers.
func (e *hostileEnv) callGood() time.Duration {
	e.t.Helper()
	d, err := e.tryGood()
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// tryGood checks that the good server's row is enabled and calls it; it may run on any
// goroutine.
func (e *hostileEnv) tryGood() (time.Duration, error) {
	row, err := e.svc.Get(e.ctx, e.goodID)
	if err != nil || row.State != allowlist.StateEnabled {
		return 0, fmt.Errorf("the good server's row: %+v, %v; want it enabled", row, err)
	}
	start := time.Now()
	msg := fmt.Sprintf("ping %d", start.UnixNano())
	res, err := e.m.CallTool(e.ctx, e.goodName, e.goodTool, map[string]any{"message": msg})
	d := time.Since(start)
	if err != nil || res.IsError || !strings.Contains(res.Output, msg) {
		return d, fmt.Errorf("CallTool on the good server = %+v, %v (after %s)", res, err, d)
	}
	return d, nil
}

// checkIntact checks that a hostile server's rows are all still there, none withdrawn, the
// approved one still enabled, and that no event of them withdrew anything.
func (e *hostileEnv) checkIntact(server string) {
	e.t.Helper()
	h := e.servers[server]
	rows := e.rows(server)
	if len(rows) != len(h.script.Tools) {
		e.t.Errorf("%s: %d rows, want %d", server, len(rows), len(h.script.Tools))
	}
	for _, r := range rows {
		want := allowlist.StateProposed
		if r.RemoteName() == h.script.Tools[0].Name {
			want = allowlist.StateEnabled
		}
		if r.State != want {
			e.t.Errorf("%s/%s is %s, want %s (provenance %q)", server, r.RemoteName(), r.State, want, r.Provenance)
		}
	}
	for _, ev := range e.events(server) {
		if ev.Action == "withdrawn" {
			e.t.Errorf("%s: a row was withdrawn: %s", server, ev.Detail)
		}
	}
}

// finish closes the Manager, the servers and the database, then waits for the goroutine count
// to come back to what it was before the environment started. check is false when it runs as
// a cleanup after a failure, where only the closing matters.
func (e *hostileEnv) finish(check bool) {
	if e.finished {
		return
	}
	e.finished = true
	start := time.Now()
	e.m.Close()
	closed := time.Since(start)
	for _, h := range e.servers {
		if h.http != nil {
			h.http.close()
		}
	}
	if e.good != nil {
		e.good.Close()
		e.goodSrv.stop()
	}
	e.bdb.Close()
	if !check {
		return
	}
	e.t.Logf("Close took %s", closed.Round(time.Millisecond))
	if closed > 5*time.Second {
		e.t.Errorf("Close took %s", closed)
	}
	// The hostile HTTP servers started before the count was taken and are stopped by their own
	// cleanups, after this. Pooled keep-alive connections of http.DefaultTransport are not the
	// Manager's: they are closed, and their goroutines on both ends go with them.
	allowed := e.goroutines
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > allowed {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			e.t.Errorf("%d goroutines 10s after Close, %d before the Manager started:\n%s", runtime.NumGoroutine(), allowed, buf[:n])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heap returns the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapPeak samples the heap (live objects and garbage not yet collected) every 2ms until stop
// is called, which returns the highest sample.
func heapPeak() (stop func() uint64) { return peakOf("/memory/classes/heap/objects:bytes") }

// liveHeapPeak is heapPeak of the heap the last collection found live: what was kept, without
// the garbage the collector has not reached yet, which grows with the machine's load (the
// collector runs behind a storm's allocations when the cores are busy).
func liveHeapPeak() (stop func() uint64) { return peakOf("/gc/heap/live:bytes") }

// peakOf samples the runtime metric every 2ms until stop is called, which returns the highest
// sample.
func peakOf(metric string) (stop func() uint64) {
	sample := []metrics.Sample{{Name: metric}}
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

const mib = 1 << 20

// cpuTime returns the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// durations summarises call latencies.
type durations []time.Duration

func (d durations) String() string {
	if len(d) == 0 {
		return "no calls"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("%d calls, median %s, p99 %s, max %s", len(s),
		s[len(s)/2].Round(10*time.Microsecond), s[len(s)*99/100].Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond))
}

// TestHostileListChangedStorm: two servers send thousands of list_changed notifications a
// second, over streamable HTTP and stdio. Refreshes coalesce, every call to the good server is
// answered throughout, the heap does not grow with the storm, and nothing is written for lists
// that did not change. How fast the good server answers during the storm is logged beside how
// fast before, not asserted: on two shared cores that moved with the machine's load (a median of
// 32 ms against 1 ms before, with CI and four builds running), and timing targets live in the
// bench, not in unit tests.
func TestHostileListChangedStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("a storm of several seconds; skipped with -short")
	}
	gate := filepath.Join(t.TempDir(), "storm")
	const perSecond = 5000
	script := hostileScript{Storm: perSecond, StormGate: gate}
	hs := []hostileServer{hostileOverHTTP(t, "storm_http", script), hostileOverStdio("storm_stdio", script)}
	// One call, list or ping held up past a short timeout by a loaded machine (two cores, the
	// storm servers and CI at once) is no failure of Maven's: the daemon's own timeouts here.
	opts := hostileOptions()
	opts.ListTimeout, opts.CallTimeout, opts.KeepAlive = DefaultListTimeout, DefaultCallTimeout, DefaultKeepAlive
	e := newHostileEnv(t, opts, hs)
	for _, h := range hs {
		waitFor(t, 10*time.Second, h.name+" listed", func() bool { return e.rec.count(h.name) > 0 })
	}
	eventsBefore := len(e.events("storm_http")) + len(e.events("storm_stdio"))

	var quiet durations
	for range 50 {
		quiet = append(quiet, e.callGood())
	}
	heapBefore := heap()
	refreshesBefore := map[string]int{}
	for _, h := range hs {
		refreshesBefore[h.name] = e.rec.count(h.name)
	}
	listsBefore := hs[0].http.requests.get("tools/list")

	peak, livePeak := heapPeak(), liveHeapPeak()
	cpuBefore := cpuTime()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stormStart := time.Now()
	var stormy durations
	for time.Since(stormStart) < 3*time.Second {
		stormy = append(stormy, e.callGood())
		time.Sleep(5 * time.Millisecond) // a steady trickle of calls, not a benchmark loop
	}
	stormFor := time.Since(stormStart)
	cpu := cpuTime() - cpuBefore
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	heapPeakV, livePeakV := peak(), livePeak()
	notified := hs[0].http.notified.Load()
	lists := hs[0].http.requests.get("tools/list") - listsBefore
	refreshes := map[string]int{}
	for _, h := range hs {
		refreshes[h.name] = e.rec.count(h.name) - refreshesBefore[h.name]
	}
	heapAfter := heap()

	t.Logf("storm: %s; over HTTP %d notifications sent (%.0f/s), %d lists, %d reconciles; over stdio ≈%d notifications, %d reconciles",
		stormFor.Round(time.Millisecond), notified, float64(notified)/stormFor.Seconds(), lists, refreshes["storm_http"],
		int(perSecond*stormFor.Seconds()), refreshes["storm_stdio"])
	t.Logf("good server calls: quiet %s; during the storm %s", quiet, stormy)
	t.Logf("CPU of this process (Manager, good server and the HTTP storm server) during the storm: %s in %s",
		cpu.Round(time.Millisecond), stormFor.Round(time.Millisecond))
	t.Logf("heap: %.1f MiB before, peak %.1f MiB during (%.1f MiB of it found live), %.1f MiB after", float64(heapBefore)/mib,
		float64(heapPeakV)/mib, float64(livePeakV)/mib, float64(heapAfter)/mib)

	if notified < 1000 {
		t.Errorf("only %d notifications were sent: the storm did not happen", notified)
	}
	// Coalescing: one refresh per RefreshGap at most, however many notifications.
	for name, n := range refreshes {
		if n == 0 {
			t.Errorf("%s: no refresh during the storm", name)
		}
		if limit := int(stormFor/DefaultRefreshGap) + 2; n > limit {
			t.Errorf("%s: %d refreshes in %s for ≈%d notifications: more than one per %s", name, n,
				stormFor.Round(time.Millisecond), int(stormFor.Seconds()*perSecond), DefaultRefreshGap)
		}
	}
	if heapAfter > heapBefore+16*mib {
		t.Errorf("the heap grew from %.1f to %.1f MiB over the storm", float64(heapBefore)/mib, float64(heapAfter)/mib)
	}
	// Bounded by what the collector found live: the garbage it had yet to reach grew with the
	// load (CI saw a peak of 78 MiB; 33 MiB on an idle machine, 54 MiB beside two busy loops,
	// with 15, 21 and 26 MiB of it live).
	if livePeakV > heapBefore+64*mib {
		t.Errorf("the live heap peaked at %.1f MiB during the storm, from %.1f", float64(livePeakV)/mib, float64(heapBefore)/mib)
	}
	// The lists never changed, so nothing was written.
	if n := len(e.events("storm_http")) + len(e.events("storm_stdio")) - eventsBefore; n != 0 {
		t.Errorf("%d events written for lists that never changed", n)
	}
	for _, h := range hs {
		if st := status(e.m, h.name); st.State != StateConnected {
			t.Errorf("%s is %s (%s) after the storm", h.name, st.State, st.LastError)
		}
		e.checkIntact(h.name)
	}
	e.finish(true)
}

// TestHostileHangs: servers that start an answer and stall, on initialize, tools/list and
// tools/call, over streamable HTTP and stdio, all at once. Timeouts fire, the supervisors back
// off and retry, and nothing is withdrawn.
func TestHostileHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out dial, list and call timeouts; skipped with -short")
	}
	var hs []hostileServer
	for _, method := range []string{"initialize", "tools/list", "tools/call"} {
		script := hostileScript{On: map[string]misbehaviour{method: answerHang}}
		short := strings.TrimPrefix(method, "tools/")
		hs = append(hs, hostileOverHTTP(t, "hang_"+short+"_http", script), hostileOverStdio("hang_"+short+"_stdio", script))
	}
	// go-sdk opens the standalone stream inside Connect, after initialize: one that never
	// answers holds up the dial, which the dial timeout ends.
	hs = append(hs, hostileOverHTTP(t, "hang_stream_http", hostileScript{On: map[string]misbehaviour{"GET": answerHang}}))
	opts := hostileOptions()
	opts.DialTimeout = time.Second
	e := newHostileEnv(t, opts, hs)

	// Calls to the good server keep working while the others stall.
	stopCalls := make(chan struct{})
	var goodCalls durations
	var callsDone sync.WaitGroup
	stop := sync.OnceFunc(func() {
		close(stopCalls)
		callsDone.Wait()
	})
	t.Cleanup(stop) // before the environment's own cleanup, should the test stop early
	callsDone.Go(func() {
		for {
			select {
			case <-stopCalls:
				return
			case <-time.After(20 * time.Millisecond):
			}
			d, err := e.tryGood()
			if err != nil {
				t.Error(err)
				return
			}
			goodCalls = append(goodCalls, d)
		}
	})

	for _, name := range []string{"hang_initialize_http", "hang_initialize_stdio", "hang_stream_http"} {
		waitFor(t, 10*time.Second, name+" to time out", func() bool {
			st := status(e.m, name)
			return strings.Contains(st.LastError, "no answer within") && st.State != StateConnected
		})
	}
	for _, tr := range []string{"http", "stdio"} {
		name := "hang_initialize_" + tr
		waitFor(t, 10*time.Second, name+" to time out", func() bool {
			st := status(e.m, name)
			return strings.Contains(st.LastError, "no answer within") && st.State != StateConnected
		})
		name = "hang_list_" + tr
		waitFor(t, 10*time.Second, name+" to time out", func() bool {
			return strings.Contains(status(e.m, name).LastError, "tools/list")
		})
	}
	// Each is retried: more than one dial, and more than one list.
	waitFor(t, 10*time.Second, "a second initialize", func() bool {
		return e.servers["hang_initialize_http"].http.requests.get("initialize") >= 2
	})
	waitFor(t, 10*time.Second, "a second tools/list", func() bool {
		return e.servers["hang_list_http"].http.requests.get("tools/list") >= 2
	})

	for _, tr := range []string{"http", "stdio"} {
		name := "hang_call_" + tr
		waitState(t, e.m, name, StateConnected, 10*time.Second)
		start := time.Now()
		_, err := e.m.CallTool(e.ctx, name, "lights_status", nil)
		d := time.Since(start)
		t.Logf("%s: CallTool returned after %s: %v", name, d.Round(time.Millisecond), err)
		if err == nil {
			t.Errorf("%s: a stalled call succeeded", name)
		}
		if d > opts.CallTimeout+500*time.Millisecond {
			t.Errorf("%s: a stalled call took %s, the timeout is %s", name, d, opts.CallTimeout)
		}
		// The session is unusable after half an answer; it is replaced.
		waitFor(t, 10*time.Second, name+" reconnected", func() bool {
			return status(e.m, name).State == StateConnected
		})
	}
	stop()
	t.Logf("good server during the hangs: %s", goodCalls)
	for _, h := range hs {
		st := status(e.m, h.name)
		t.Logf("%s: %s, last error %q", h.name, st.State, st.LastError)
		e.checkIntact(h.name)
		if strings.HasPrefix(h.name, "hang_initialize") || strings.HasPrefix(h.name, "hang_list") || h.name == "hang_stream_http" {
			if n := e.rec.count(h.name); n != 0 {
				t.Errorf("%s was reconciled %d times", h.name, n)
			}
		}
	}
	t.Logf("HTTP initialize attempts %d, tools/list attempts %d",
		e.servers["hang_initialize_http"].http.requests.get("initialize"),
		e.servers["hang_list_http"].http.requests.get("tools/list"))
	e.finish(true)
}

// TestHostileChurningToolList: a server whose every tools/list describes every tool anew, and
// which announces list_changed often. Each tool's redefinitions within the churn window are one
// audit event with a repeat count; once a tool has changed more often than the budget allows,
// the refresh that would go over it writes nothing and the server is failed, not listened to,
// with a plain reason. Its rows move between proposed states only, never to enabled or
// withdrawn, and the good server is unaffected.
func TestHostileChurningToolList(t *testing.T) {
	script := hostileScript{Churn: true, Storm: 200}
	hs := []hostileServer{hostileOverHTTP(t, "churn_http", script), hostileOverStdio("churn_stdio", script)}
	opts := hostileOptions()
	opts.RefreshGap = 20 * time.Millisecond // many refreshes in little time
	e := newHostileEnv(t, opts, hs)
	for _, h := range hs {
		waitFor(t, 20*time.Second, h.name+" failed for changing its tools too often", func() bool {
			st := status(e.m, h.name)
			return st.State == StateFailed && strings.Contains(st.LastError, "changes its tools too often")
		})
	}
	e.callGood()
	// Counted before the Manager closes, with the events, so the two agree.
	e.m.Close()
	for _, h := range hs {
		n := e.rec.count(h.name)
		var evs []allowlist.Event // what the churn wrote: all but the seeding's proposals and approval
		for _, ev := range e.events(h.name) {
			if ev.Action != "proposed" && ev.Action != "enabled" {
				evs = append(evs, ev)
			}
		}
		t.Logf("%s: %d refreshes, %d events: %s", h.name, n, len(evs), status(e.m, h.name).LastError)
		// Each listing changes every tool: the budget lets each change DefaultChurnPerTool
		// times, and the list after that is refused.
		if n != DefaultChurnPerTool+1 {
			t.Errorf("%s: %d lists reached the reconciler, want %d", h.name, n, DefaultChurnPerTool+1)
		}
		if len(evs) != len(h.script.Tools) {
			t.Errorf("%s: %d new events for %d tools, want one each", h.name, len(evs), len(h.script.Tools))
		}
		for _, ev := range evs {
			d := string(ev.Detail)
			if ev.Action != "redefined" || (strings.Contains(d, `"to"`) && !strings.Contains(d, `"to":"proposed"`)) {
				t.Errorf("%s: event %s %s", h.name, ev.Action, d)
			}
			if ev.Repeats != DefaultChurnPerTool-1 {
				t.Errorf("%s: event %d counts %d repeats, want %d", h.name, ev.ID, ev.Repeats, DefaultChurnPerTool-1)
			}
		}
		for _, r := range e.rows(h.name) {
			if r.State != allowlist.StateProposed {
				t.Errorf("%s/%s is %s, want proposed", h.name, r.RemoteName(), r.State)
			}
			// The tenth listing was the last one written.
			if want := fmt.Sprintf("(listing %d)", DefaultChurnPerTool); !strings.Contains(r.Description, want) {
				t.Errorf("%s/%s: description %q, want the one of %s", h.name, r.RemoteName(), r.Description, want)
			}
		}
		// The row the owner approved went back to proposed, keeping the approved shape.
		approved := e.row(h.name, h.script.Tools[0].Name)
		if approved.PreviousDeclared == "" || !strings.Contains(approved.PreviousDeclared, h.script.Tools[0].Description) {
			t.Errorf("%s: the approved shape was not kept: %q", h.name, approved.PreviousDeclared)
		}
	}
	e.finish(true)
}

// TestHostileMalformedJSONRPC: garbage, wrong ids, responses without an id, and results of the
// wrong type, for initialize, tools/list and tools/call, over both transports. No panic, the
// broken sessions are dropped and redialled, calls fail cleanly, and nothing is withdrawn.
func TestHostileMalformedJSONRPC(t *testing.T) {
	type variant struct {
		method string
		how    misbehaviour
	}
	variants := []variant{
		{"initialize", answerGarbage}, {"initialize", answerNoID}, {"initialize", answerWrongType},
		{"tools/list", answerGarbage}, {"tools/list", answerWrongID}, {"tools/list", answerNoID}, {"tools/list", answerWrongType},
		{"tools/call", answerGarbage}, {"tools/call", answerWrongID}, {"tools/call", answerNoID}, {"tools/call", answerWrongType},
		{"tools/list", answerBigError}, {"tools/call", answerBigError},
	}
	if testing.Short() {
		variants = []variant{{"initialize", answerGarbage}, {"tools/list", answerWrongType}, {"tools/call", answerNoID},
			{"tools/list", answerBigError}}
	}
	var hs []hostileServer
	for _, v := range variants {
		script := hostileScript{On: map[string]misbehaviour{v.method: v.how}, BigBytes: mib}
		name := strings.ReplaceAll(strings.TrimPrefix(v.method, "tools/")+"_"+string(v.how), "-", "_")
		hs = append(hs, hostileOverHTTP(t, name+"_http", script), hostileOverStdio(name+"_stdio", script))
	}
	opts := hostileOptions()
	opts.BackoffMin, opts.BackoffMax = 100*time.Millisecond, time.Second // fewer respawns
	e := newHostileEnv(t, opts, hs)

	for _, h := range hs {
		method := ""
		for m := range h.script.On {
			method = m
		}
		switch method {
		case "initialize":
			waitFor(t, 15*time.Second, h.name+" to fail its dial", func() bool {
				return strings.Contains(status(e.m, h.name).LastError, "dial:")
			})
		case "tools/list":
			waitFor(t, 15*time.Second, h.name+" to fail its list", func() bool {
				return status(e.m, h.name).LastError != ""
			})
		case "tools/call":
			waitState(t, e.m, h.name, StateConnected, 15*time.Second)
			start := time.Now()
			res, err := e.m.CallTool(e.ctx, h.name, "lights_status", nil)
			d := time.Since(start)
			if err == nil {
				t.Errorf("%s: CallTool = %+v, want an error", h.name, res)
			}
			if d > opts.CallTimeout+500*time.Millisecond {
				t.Errorf("%s: CallTool took %s", h.name, d)
			}
			if err != nil && len(err.Error()) > maxErrorText+100 {
				t.Errorf("%s: CallTool's error is %d bytes long", h.name, len(err.Error()))
			}
			t.Logf("%s: CallTool failed after %s: %.300v", h.name, d.Round(time.Millisecond), err)
		}
	}
	e.callGood()
	for _, h := range hs {
		st := status(e.m, h.name)
		t.Logf("%s: %s, reconciled %d times, last error %.300q", h.name, st.State, e.rec.count(h.name), st.LastError)
		// A server writes its error messages: what is kept of them is bounded.
		if len(st.LastError) > maxErrorText+10 {
			t.Errorf("%s: LastError is %d bytes long", h.name, len(st.LastError))
		}
		e.checkIntact(h.name)
	}
	e.finish(true)
}

// TestHostileHugeResponses: a tools/list with one 50 MB description and a tools/call result of
// 50 MB, over streamable HTTP and stdio. The heap is measured before, at its peak while the
// server keeps trying, and after.
func TestHostileHugeResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("moves hundreds of megabytes; skipped with -short")
	}
	const size = 50 * mib
	for _, c := range []struct {
		name, method string
		stdio        bool
	}{
		{"list_http", "tools/list", false},
		{"call_http", "tools/call", false},
		{"list_stdio", "tools/list", true},
		{"call_stdio", "tools/call", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := hostileScript{On: map[string]misbehaviour{c.method: answerBig}, BigBytes: size}
			var h hostileServer
			if c.stdio {
				h = hostileOverStdio("big", script)
			} else {
				h = hostileOverHTTP(t, "big", script)
			}
			opts := hostileOptions()
			opts.ListTimeout, opts.CallTimeout = 5*time.Second, 5*time.Second
			// The daemon's own first redial delay: the peak is that of one attempt and its
			// garbage, not of attempts piled up faster than a real daemon would make them.
			opts.BackoffMin = DefaultBackoffMin
			// Measured from before the Manager starts: the hostile server is at work at once.
			before := heap()
			peak := heapPeak()
			e := newHostileEnv(t, opts, []hostileServer{h})
			if c.method == "tools/list" {
				start := time.Now()
				// The list fails and takes its session with it: wait for two such failures.
				failures, since := 0, time.Time{}
				waitFor(t, 30*time.Second, "two failed sessions", func() bool {
					st := status(e.m, "big")
					if st.State == StateBackoff && !st.Since.Equal(since) {
						failures, since = failures+1, st.Since
					}
					return failures >= 2
				})
				took := time.Since(start)
				p := peak()
				after := heap()
				t.Logf("50 MB tools/list: heap %.1f MiB before, peak %.1f MiB, %.1f MiB after; two failed sessions in %s; last error %q",
					float64(before)/mib, float64(p)/mib, float64(after)/mib, took.Round(time.Millisecond), status(e.m, "big").LastError)
				checkHeap(t, c.stdio, before, p, after)
				if n := e.rec.count("big"); n != 0 {
					t.Errorf("a list with a 50 MB description was reconciled %d times", n)
				}
			} else {
				for i := range 3 {
					waitState(t, e.m, "big", StateConnected, 10*time.Second)
					start := time.Now()
					res, err := e.m.CallTool(e.ctx, "big", "lights_status", nil)
					t.Logf("50 MB tools/call #%d after %s: output %d bytes, truncated %v, error %v",
						i+1, time.Since(start).Round(time.Millisecond), len(res.Output), res.Truncated, err)
					if err == nil && len(res.Output) > MaxResultText {
						t.Errorf("a call returned %d bytes of output", len(res.Output))
					}
				}
				p := peak()
				after := heap()
				t.Logf("50 MB tools/call: heap %.1f MiB before, peak %.1f MiB, %.1f MiB after", float64(before)/mib, float64(p)/mib, float64(after)/mib)
				checkHeap(t, c.stdio, before, p, after)
			}
			e.callGood()
			e.checkIntact("big")
			e.finish(true)
		})
	}
}

// checkHeap checks that nothing of the huge answers stays on the heap, and bounds its peak
// (live objects and garbage not yet collected). Over HTTP, Maven cuts a response at
// MaxResponseBytes (16 MiB); the sdk's io.ReadAll holds up to about twice that while it grows,
// and the peak is 35–70 MiB depending on when the collector runs. Over stdio, go-sdk's own
// 16 MiB frame limit applies: its json.Decoder doubles its buffer up to it (≈50 MiB at the end
// of one attempt), and the heap peaks at about twice that before the collector catches up.
func checkHeap(t *testing.T, stdio bool, before, peak, after uint64) {
	t.Helper()
	if after > before+16*mib {
		t.Errorf("the heap kept %.1f MiB more after the huge answers", float64(after-before)/mib)
	}
	limit := uint64(96 * mib)
	if stdio {
		limit = 128 * mib
	}
	if peak > before+limit {
		t.Errorf("the heap peaked %.1f MiB above where it started, more than %d MiB", float64(peak-before)/mib, limit/mib)
	}
}

// TestHostileDisconnectDuringCall: servers that start answering a call and then drop the
// connection (HTTP) or exit (stdio). The call fails at once with a clear error, the supervisor
// reconnects, and nothing is withdrawn.
func TestHostileDisconnectDuringCall(t *testing.T) {
	script := hostileScript{On: map[string]misbehaviour{"tools/call": answerDrop}}
	hs := []hostileServer{hostileOverHTTP(t, "drop_http", script), hostileOverStdio("drop_stdio", script)}
	e := newHostileEnv(t, hostileOptions(), hs)
	for _, h := range hs {
		for i := range 2 {
			waitState(t, e.m, h.name, StateConnected, 10*time.Second)
			// Connected is reported before the session's first list reaches the reconciler: wait
			// for the list of session i+1, so that the count moves below only with a new session.
			waitFor(t, 10*time.Second, h.name+"'s list", func() bool { return e.rec.count(h.name) >= i+1 })
			before := e.rec.count(h.name)
			start := time.Now()
			_, err := e.m.CallTool(e.ctx, h.name, "lights_on", nil)
			d := time.Since(start)
			t.Logf("%s #%d: CallTool failed after %s: %v", h.name, i+1, d.Round(time.Millisecond), err)
			if err == nil {
				t.Fatalf("%s: a dropped call succeeded", h.name)
			}
			if !errors.Is(err, ErrNotConnected) {
				t.Errorf("%s: %v, want ErrNotConnected", h.name, err)
			}
			if d > 250*time.Millisecond {
				t.Errorf("%s: the dropped call took %s to fail", h.name, d)
			}
			// A new session lists again.
			waitFor(t, 10*time.Second, h.name+" to reconnect and list", func() bool {
				return e.rec.count(h.name) > before && status(e.m, h.name).State == StateConnected
			})
		}
		e.callGood()
		e.checkIntact(h.name)
	}
	if n := e.servers["drop_http"].http.requests.get("initialize"); n < 3 {
		t.Errorf("drop_http was initialized %d times, want a new session after each drop", n)
	}
	e.finish(true)
}

// TestHostileWithPeer runs the real server-everything as the good server beside a storm, a
// stalled list and a garbage list.
func TestHostileWithPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node beside a storm; skipped with -short")
	}
	node, script := testenv.NPMPeer(t, "mcp-server-everything")
	hs := []hostileServer{
		hostileOverHTTP(t, "storm", hostileScript{Storm: 5000}),
		hostileOverStdio("stall", hostileScript{On: map[string]misbehaviour{"tools/list": answerHang}}),
		hostileOverHTTP(t, "garbage", hostileScript{On: map[string]misbehaviour{"tools/list": answerGarbage}}),
	}
	opts := hostileOptions()
	opts.DialTimeout = 20 * time.Second // node under a loaded CI machine
	e := newHostileEnv(t, opts, hs, goodServer{name: "everything", tool: "echo",
		cfg: config.Server{Type: config.TransportStdio, Command: node, Args: []string{script, "stdio"}}})
	waitFor(t, 10*time.Second, "stall and garbage to fail their lists", func() bool {
		return status(e.m, "stall").LastError != "" && status(e.m, "garbage").LastError != ""
	})
	var calls durations
	for range 20 {
		calls = append(calls, e.callGood())
	}
	t.Logf("server-everything echo beside the hostile servers: %s; storm notifications %d, lists %d",
		calls, hs[0].http.notified.Load(), hs[0].http.requests.get("tools/list"))
	if st := status(e.m, "everything"); st.State != StateConnected || st.Tools != peerEverythingTools {
		t.Errorf("server-everything: %+v", st)
	}
	for _, h := range hs {
		e.checkIntact(h.name)
	}
	e.finish(true)
}
