package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"maven/app/mcp"
	"maven/app/mcp/mcptest"
)

// memory is what /proc says of the daemon's own memory (its children not included), in KiB.
type memory struct {
	rss, hwm   int64
	settled    int64 // VmRSS a few seconds later
	anon, file int64 // of settled: the process's own memory, and the pages of files it maps (its binary)
}

// mcpHTTPServers serves servers scripted MCP servers of tools tools each over streamable HTTP
// on loopback, from this process, and returns their config entries and the bytes of the tools
// they list, as JSON.
func mcpHTTPServers(t *testing.T, servers, tools int) (entries []string, listed int) {
	for s := range servers {
		name := serverName(s)
		specs := catalog(name, tools)
		srv := httptest.NewServer(mcptest.NewScripted(specs...).HTTPHandler())
		t.Cleanup(srv.Close)
		entries = append(entries, fmt.Sprintf(`%q: {"type": "http", "url": %q}`, name, srv.URL+"/mcp"))
		for _, tool := range sdkTools(specs) {
			b, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			listed += len(b)
		}
	}
	return entries, listed
}

// benchMemory starts the real daemon with servers streamable-HTTP servers of tools tools each,
// waits until every server is connected and `maven tools --json` lists every row, and reads
// VmRSS and VmHWM of the daemon's process, then VmRSS again 5 s later.
func benchMemory(t *testing.T, bin string, servers, tools int) (m memory, listed int) {
	dir := t.TempDir()
	entries, listed := mcpHTTPServers(t, servers, tools)
	cfg := writeFile(t, dir, "maven.json", []byte(`{"mcpServers": {`+strings.Join(entries, ", ")+`}}`))
	data := filepath.Join(dir, "data")
	d := startDaemon(t, bin, data, cfg)
	d.waitServers(t, fmt.Sprintf("every server to list its %d tools", tools), func(s mcp.ServerStatus) bool {
		return s.State == mcp.StateConnected && s.Tools == tools
	})
	want := servers * tools
	waitFor(t, fmt.Sprintf("maven tools --json to list %d rows", want), 120*time.Second, func() bool {
		out, err := exec.Command(bin, "tools", "--json", "--data", data).Output()
		if err != nil {
			t.Fatalf("maven tools --json: %v", err)
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatal(err)
		}
		return len(rows) == want
	})
	pid := d.Cmd.Process.Pid
	m = memory{rss: procStatus(t, pid, "VmRSS"), hwm: procStatus(t, pid, "VmHWM")}
	time.Sleep(5 * time.Second)
	m.settled = procStatus(t, pid, "VmRSS")
	m.anon, m.file = procStatus(t, pid, "RssAnon"), procStatus(t, pid, "RssFile")
	d.stop(t)
	return m, listed
}

// procStatus reads a "kB" field of /proc/PID/status.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", field, rest, err)
		}
		return kb
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// buildScripted builds the scripted-mcp command.
func buildScripted(t *testing.T, dir string) string {
	t.Helper()
	bin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// mib formats KiB as MiB.
func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// reportMemory adds the daemon's resident memory after discovering 100 servers × 100 tools, its
// floor (the daemon idle with no server, plus the bytes of the tools' JSON it holds), and what
// a server and a row cost: the daemon is measured with no server, with 10 and 100 servers of
// 100 tools, and with 100 servers of one tool each.
func reportMemory(t *testing.T, e *benchEnv, rep *report) {
	type point struct {
		servers, tools int
		m              memory
		listed         int
	}
	points := []*point{{servers: 0}, {servers: 10, tools: 100}, {servers: 100, tools: 1}, {servers: 100, tools: 100}}
	for _, p := range points {
		p.m, p.listed = benchMemory(t, e.bin, p.servers, p.tools)
		rep.rawLine(fmt.Sprintf("memory, %d servers × %d tools: VmRSS %s after discovery, %s 5 s later (RssAnon %s, RssFile %s), VmHWM (peak) %s; the tools' JSON %s",
			p.servers, p.tools, mib(p.m.rss), mib(p.m.settled), mib(p.m.anon), mib(p.m.file), mib(p.m.hwm), mib(int64(p.listed)/1024)))
	}
	idle, ten, oneEach, full := points[0], points[1], points[2], points[3]
	floor := idle.m.settled + int64(full.listed)/1024
	// The target is issue 23's absolute bound, beside the floor rather than a ratio to it.
	rep.rows = append(rep.rows, reportRow{
		figure:   "Daemon's resident memory after discovering 100 streamable-HTTP servers × 100 tools (VmRSS 5 s later; peak VmHWM)",
		measured: fmt.Sprintf("%s; peak %s", mib(full.m.settled), mib(full.m.hwm)),
		floor:    fmt.Sprintf("%s (the daemon idle, %s, plus the tools' JSON, %s)", mib(floor), mib(idle.m.settled), mib(int64(full.listed)/1024)),
		ratio:    fmt.Sprintf("%.2f", float64(full.m.settled)/float64(floor)),
		target:   "≤ " + mib(targetRSSBytes/1024),
		ok:       okIf(full.m.settled <= targetRSSBytes/1024),
	})
	perServer := float64(oneEach.m.settled-idle.m.settled) / float64(oneEach.servers)
	perRow := float64(full.m.settled-oneEach.m.settled) / float64(full.servers*full.tools-oneEach.servers*oneEach.tools)
	rep.add("What a server costs (100 × 1 tool vs idle) and a row (100 × 100 vs 100 × 1), resident",
		fmt.Sprintf("%.0f KiB a server; %.2f KiB a row (a row's JSON is %.2f KiB); 10 × 100: %s", perServer, perRow,
			float64(full.listed)/float64(full.servers*full.tools)/1024, mib(ten.m.settled)))
}
