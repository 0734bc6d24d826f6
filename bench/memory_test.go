package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"maven/app/mcp"
	"maven/app/mcp/mcptest"
	"maven/internal/daemontest"
)

// memory is what /proc says of the daemon's own memory (its children not included), in KiB.
type memory struct {
	rss, hwm int64
	settled  int64 // VmRSS a few seconds later
}

// benchMemory starts the real daemon with servers stdio servers (scripted-mcp) of 100 tools
// each, waits until `maven tools --json` lists them all, and reads VmRSS and VmHWM of the
// daemon's process.
func benchMemory(t *testing.T, bin, scripted string, servers int) memory {
	dir := t.TempDir()
	var parts []string
	for s := range servers {
		name := serverName(s)
		specs, err := json.Marshal(catalog(name, 100))
		if err != nil {
			t.Fatal(err)
		}
		file := writeFile(t, dir, name+".json", specs)
		parts = append(parts, fmt.Sprintf(`%q: {"command": %q, "args": [%q]}`, name, scripted, file))
	}
	cfg := writeFile(t, dir, "maven.json", []byte(`{"mcpServers": {`+strings.Join(parts, ", ")+`}}`))
	data := filepath.Join(dir, "data")
	daemontest.ApproveCommandLines(t, data, cfg)
	d := startDaemon(t, bin, data, cfg)
	d.waitServers(t, "every server to list its 100 tools", func(s mcp.ServerStatus) bool {
		return s.State == mcp.StateConnected && s.Tools == 100
	})
	want := servers * 100
	waitFor(t, fmt.Sprintf("maven tools --json to list %d rows", want), 60*time.Second, func() bool {
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
	m := memory{rss: procStatus(t, pid, "VmRSS"), hwm: procStatus(t, pid, "VmHWM")}
	time.Sleep(5 * time.Second)
	m.settled = procStatus(t, pid, "VmRSS")
	if hwm := procStatus(t, pid, "VmHWM"); hwm > m.hwm {
		m.hwm = hwm
	}
	d.stop(t)
	return m
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

// reportMemory adds the daemon's resident memory after discovering 10 servers × 100 tools.
func reportMemory(t *testing.T, e *benchEnv, rep *report) {
	mem := benchMemory(t, e.bin, buildScripted(t, e.dir), 10)
	rep.add("Daemon's resident memory after discovering 10 stdio servers × 100 tools (VmRSS; 5 s later)",
		fmt.Sprintf("%s; %s (not yet a ratio; target ≤ %s)", mib(mem.rss), mib(mem.settled), mib(targetRSSBytes/1024)))
	rep.rawLine(fmt.Sprintf("memory: VmRSS %s after discovery, %s 5 s later, VmHWM (peak) %s", mib(mem.rss), mib(mem.settled), mib(mem.hwm)))

}
