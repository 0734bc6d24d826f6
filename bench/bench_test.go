package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"maven/app/mcp/mcptest"
)

// Targets, each a ratio to the figure's floor (issue 23).
const (
	targetBootRatio      = 1.1
	targetUnlockRatio    = 1.1
	targetVoiceRatio     = 1.15 // a turn in-process ÷ a direct CallTool
	targetVoiceHTTPRatio = 1.2  // POST /voice ÷ (a direct CallTool + GET /healthz)
	targetRSSBytes       = 60 * 1024 * 1024
	// A 2026-07-28 server's list change reaches Maven's rows within twice the time a plain
	// client of the server takes to hear it and list again: Maven lists as that client does,
	// then reconciles the one row, within the listing's own time again.
	targetListenRatio = 2
)

// blackHoles is how many black-holed MCP servers boot and unlock are measured with (issue 23:
// with 10 the ratio hid what grows with the servers).
const blackHoles = 100

// churnRun is how long the hostile servers of the churn figure churn (issue 10).
const churnRun = 60 * time.Second

// TestBenchReport runs every figure of issue 7 in one run and prints one table of them. It is a
// test, not a Benchmark, because it drives the real binary, and because signing in needs
// authtest.Proof and the software authenticator, which only a test binary may use.
//
//	scripts/bench     (MAVEN_BENCH=1 go test -run TestBenchReport -count=1 -v -timeout 30m ./bench)
//
// MAVEN_BENCH_ONLY=boot,unlock,voice,tools,reconcile,memory,churn,listen,agents,approvals runs
// only the figures listed; MAVEN_BENCH_QUICK=1 takes fewer samples, to check the harness itself;
// MAVEN_BENCH_OUT=FILE writes the final table to FILE instead of standard output (scripts/bench
// prints it last).
func TestBenchReport(t *testing.T) {
	if os.Getenv("MAVEN_BENCH") != "1" {
		t.Skip("set MAVEN_BENCH=1 (or run scripts/bench) to run the benchmarks")
	}
	// n scales the sample counts down for a quick check of the harness.
	n := func(full int) int {
		if os.Getenv("MAVEN_BENCH_QUICK") == "1" {
			return max(3, full/10) | 1
		}
		return full
	}
	// run says whether a figure is wanted: all of them unless MAVEN_BENCH_ONLY lists some.
	only := os.Getenv("MAVEN_BENCH_ONLY")
	run := func(figure string) bool {
		return only == "" || slices.Contains(strings.Split(only, ","), figure)
	}
	started := time.Now()
	rep := &report{started: started.UTC(), loadBefore: loadAverage()}

	dir := t.TempDir()
	t.Log("building cmd/maven")
	e := &benchEnv{dir: dir, bin: buildMaven(t, dir), holes: mcptest.NewBlackHoles(t, blackHoles), n: n}

	figures := []struct {
		name, what string
		report     func(*testing.T, *benchEnv, *report)
	}{
		{"boot", "boot to ready, 0 vs 100 black-holed servers", reportBoot},
		{"unlock", "unlock answer, 0 vs 100 black-holed servers", reportUnlock},
		{"voice", "voice turn vs direct CallTool", reportVoice},
		{"tools", "/tools search over 50,000 rows vs 5,000 and vs GET /healthz", reportTools},
		{"reconcile", "reconcile of 100 servers × 100 tools vs its floor", reportReconcile},
		{"memory", "resident memory with 0, 10 and 100 servers of 100 tools, and 100 of one", reportMemory},
		{"churn", "two hostile servers of 100 tools: one redefines them, one renames them, every 200 ms, for 60 s", reportChurn},
		{"listen", "a 2026-07-28 server's list change to the row back in proposed, over HTTP and stdio", reportListen},
		{"agents", "agents through /mcp: a call, tools/list of 1,000 rows, a list change, 100 sessions, boot and unlock", reportAgents},
		{"approvals", "pending calls: made → push sent, approval → the agent's result, /approvals with 1,000 waiting", reportApprovals},
	}
	for i, f := range figures {
		if run(f.name) {
			t.Logf("%d/%d %s", i+1, len(figures), f.what)
			f.report(t, e, rep)
		}
	}

	rep.took = time.Since(started)
	rep.loadAfter = loadAverage()
	var out strings.Builder
	rep.write(&out)
	if path := os.Getenv("MAVEN_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	fmt.Print("\n" + out.String())
}

// benchEnv is what every figure shares: a scratch directory, the built binary, the black-holed
// MCP servers and the sample-count scaler.
type benchEnv struct {
	dir, bin string
	holes    *mcptest.BlackHoleSet
	n        func(full int) int
}

// report collects the figures and prints them as one Markdown table, then the raw samples. Every
// figure with a target is a ratio to its floor (issue 23): the same work done by the bare parts
// underneath, measured in the same run, interleaved with it, so that the target travels between
// machines; a row with no floor is a count or a figure kept for reference.
type report struct {
	started               time.Time
	took                  time.Duration
	loadBefore, loadAfter string
	rows                  []reportRow
	raws                  []string
}

// reportRow is one line of the table.
type reportRow struct {
	figure, measured, floor, ratio, target, ok string
}

// versus adds a row for a figure beside its floor: the medians of each, what the floor is, their
// ratio and its target.
func (r *report) versus(figure string, measured, floor []time.Duration, floorWhat string, target float64) {
	r.quotient(figure, ms(median(measured)), ms(median(floor))+" ("+floorWhat+")", ratio(median(measured), median(floor)), target)
}

// quotient adds a row for a ratio q of measured to floor, both given as words.
func (r *report) quotient(figure, measured, floor string, q, target float64) {
	r.rows = append(r.rows, reportRow{figure, measured, floor, fmt.Sprintf("%.2f", q), fmt.Sprintf("≤ %.2f", target), okIf(q <= target)})
}

// reference adds a row for a ratio q of measured to floor with no target of its own: what a
// figure whose target is not met costs beside the bare parts it is built on.
func (r *report) reference(figure, measured, floor string, q float64) {
	r.rows = append(r.rows, reportRow{figure, measured, floor, fmt.Sprintf("%.2f", q), "—", "—"})
}

// add adds a row with no floor: a count, or a figure kept for reference, with no target.
func (r *report) add(figure, measured string) {
	r.rows = append(r.rows, reportRow{figure, measured, "—", "—", "—", "—"})
}

func (r *report) raw(what string, d []time.Duration) { r.rawLine(what + ": " + spread(d)) }

func (r *report) rawLine(s string) { r.raws = append(r.raws, s) }

func okIf(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "Maven benchmarks, %s, %s %s/%s, %d CPUs (%s), load average %s before, %s after; took %s.\n\n",
		r.started.Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		cpuModel(), r.loadBefore, r.loadAfter, r.took.Round(time.Second))
	fmt.Fprintln(w, "| figure | measured | floor | ratio | target | ok? |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, row := range r.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.figure, row.measured, row.floor, row.ratio, row.target, row.ok)
	}
	fmt.Fprintln(w, "\nRaw samples:")
	fmt.Fprintln(w)
	for _, s := range r.raws {
		fmt.Fprintln(w, "    "+s)
	}
}

// loadAverage is the 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "?".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
