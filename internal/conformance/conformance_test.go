package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/internal/testenv"
)

// expectedFailures are the client scenarios Maven does not pass yet, each with why. The test
// fails when a scenario the go-sdk reference client passes fails for Maven and is not listed
// here, and when a listed scenario passes (delete its line then).
var expectedFailures = map[string]string{
	"auth/2025-03-26-oauth-metadata-backcompat": "the metadata's issuer is not the server's origin, which go-sdk refuses (RFC 8414 section 3.3); the go-sdk reference fails it too",
	"auth/client-credentials-jwt":               "the client credentials grant (a machine signs in, no owner): Maven signs in only for its owner; the go-sdk reference has no client for it either",
	"auth/client-credentials-basic":             "the client credentials grant (a machine signs in, no owner): Maven signs in only for its owner; the go-sdk reference has no client for it either",
	"auth/cross-app-access-complete-flow":       "cross-app access (enterprise-managed authorization): the go-sdk reference has no client for it either",
}

// suiteVersion is the conformance suite package.json pins.
const suiteVersion = "0.1.16"

// TestConformanceSuite runs every client scenario of the MCP conformance suite against Maven
// (this package's command driving the real binary) and against go-sdk's own conformance client,
// in one run, and checks that Maven passes what the reference passes, except expectedFailures.
// A Maven scenario passes when the suite passes it and the command exited 0 (it did what the
// scenario needs); the suite alone judges the reference.
func TestConformanceSuite(t *testing.T) {
	node, cli := suitePeers(t)
	dir := t.TempDir()
	if strings.ContainsAny(dir, " \t'\"$`\\") {
		t.Fatalf("the suite splits its --command on spaces and runs it through a shell: %q will not do", dir)
	}
	maven := build(t, dir, "maven", "maven/cmd/maven")
	client := build(t, dir, "maven-conformance", "maven/internal/conformance")
	reference := build(t, dir, "go-sdk-everything-client", "github.com/modelcontextprotocol/go-sdk/conformance/everything-client")

	names := clientScenarios(t, node, cli)
	for name := range expectedFailures {
		if !slices.Contains(names, name) {
			t.Errorf("expectedFailures names %q, which the suite does not list", name)
		}
	}
	start := time.Now()
	results := runAll(t, node, cli, filepath.Join(dir, "results"), names, map[string]string{
		"maven":     client + " -maven " + maven + " -timeout 50s",
		"reference": reference,
	})

	var table strings.Builder
	const row = "%-42s %-6s %-9s %s\n"
	fmt.Fprintf(&table, row, "scenario", "Maven", "go-sdk", "why Maven fails")
	mavenPassed, referencePassed := 0, 0
	for _, name := range names {
		m, r := results[name]["maven"], results[name]["reference"]
		m.pass = m.err == nil && m.suitePassed && m.clientExit == 0 && !m.timedOut
		r.pass = r.err == nil && r.suitePassed
		if m.pass {
			mavenPassed++
		}
		if r.pass {
			referencePassed++
		}
		reason, expected := expectedFailures[name]
		why := ""
		if !m.pass {
			why = m.why()
		}
		fmt.Fprintf(&table, row, name, m.verdict(), r.verdict(), why)
		switch {
		case m.pass && expected:
			t.Errorf("%s passes for Maven now: delete its line from expectedFailures (%q)", name, reason)
		case !m.pass && r.pass && !expected:
			t.Errorf("%s: the go-sdk reference passes it, Maven does not (%s)\n%s", name, m.why(), m.output)
		}
	}
	fmt.Fprintf(&table, "Maven %d of %d, go-sdk reference %d of %d (%s)", mavenPassed, len(names), referencePassed, len(names), time.Since(start).Round(time.Second))
	t.Log("\n" + table.String())
}

// runAll runs every scenario with every client (who → command), a few at once, keeping the
// suite's results under out, and returns the outcomes by scenario and client.
func runAll(t *testing.T, node, cli, out string, names []string, clients map[string]string) map[string]map[string]*outcome {
	type job struct {
		name, who string
		out       *outcome
	}
	var jobs []job
	results := map[string]map[string]*outcome{}
	for _, name := range names {
		results[name] = map[string]*outcome{}
		for who := range clients {
			o := &outcome{}
			results[name][who] = o
			jobs = append(jobs, job{name, who, o})
		}
	}
	run := func(j job) {
		dir := filepath.Join(out, j.who, strconv.Itoa(slices.Index(names, j.name)))
		*j.out = runTimed(node, cli, dir, j.name, clients[j.who])
	}
	// Each run is a node process with its mock servers and a client (for Maven, a daemon too),
	// mostly waiting on each other: four at once keep two cores busy. A scenario that times the
	// client runs alone afterwards, so that the others do not delay it.
	queue := make(chan job)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for j := range queue {
				run(j)
			}
		})
	}
	var timed []job
	for _, j := range jobs {
		if timedScenarios[j.name] {
			timed = append(timed, j)
			continue
		}
		queue <- j
	}
	close(queue)
	wg.Wait()
	for _, j := range timed {
		run(j)
	}
	return results
}

// timedScenarios are the scenarios whose checks time the client: sse-retry wants the reconnect
// 500 ms after the stream closed, and warns, failing the run, past 700 ms.
var timedScenarios = map[string]bool{"sse-retry": true}

// runTimed runs a scenario as runScenario does, and again, up to three runs in all, while the
// only thing wrong is that the client was slightly late. On a shared two-core machine under
// the rest of the tests a reconnect can start a few hundred milliseconds late (866 ms once in
// CI; 502 ms in each of 6 idle runs, Maven and the reference alike). A client that ignores
// the retry field, reconnects early, or does not reconnect fails every run.
func runTimed(node, cli, dir, name, command string) outcome {
	var o outcome
	for attempt := 1; attempt <= 3; attempt++ {
		o = runScenario(node, cli, filepath.Join(dir, strconv.Itoa(attempt)), name, command)
		if !o.onlyLate {
			break
		}
	}
	return o
}

// outcome is what one run of a scenario with one client came to.
type outcome struct {
	suitePassed bool   // the suite exited 0
	clientExit  int    // the client's exit status, as the suite reports it
	timedOut    bool   // the suite killed the client
	passed, of  int    // checks that succeeded, of those that succeeded or failed
	failure     string // the first failed check or warning
	onlyLate    bool   // the suite failed the run only for the client's slightly late reconnect
	said        string // this package's command's last word on a failure
	output      string // the suite's output and the client's stderr, for a failure message
	pass        bool   // the verdict
	err         error  // the suite could not be run, or left no results
}

func (o *outcome) verdict() string {
	if o.pass {
		return "pass"
	}
	return "FAIL"
}

// why says briefly why a run failed.
func (o *outcome) why() string {
	var parts []string
	if o.err != nil {
		parts = append(parts, o.err.Error())
	}
	if o.timedOut {
		parts = append(parts, "the client timed out")
	} else if o.clientExit != 0 {
		parts = append(parts, fmt.Sprintf("the client exited %d", o.clientExit))
	}
	parts = append(parts, fmt.Sprintf("%d of %d checks pass", o.passed, o.of))
	switch {
	case o.said != "":
		parts = append(parts, o.said)
	case o.failure != "":
		parts = append(parts, o.failure)
	}
	return strings.Join(parts, "; ")
}

var (
	clientExitRE = regexp.MustCompile(`Client exited with code (-?\d+)`)
	saidRE       = regexp.MustCompile(`(?m)^maven-conformance: (.*)$`)
	ansiRE       = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// runScenario runs `conformance client --scenario name` with command as the client, keeping
// its results in out.
func runScenario(node, cli, out, name, command string) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return outcome{err: err}
	}
	cmd := exec.CommandContext(ctx, node, cli, "client", "--command", command, "--scenario", name,
		"--timeout", "60000", "--output-dir", out)
	cmd.Dir = out
	raw, err := cmd.CombinedOutput()
	text := ansiRE.ReplaceAllString(string(raw), "")
	o := outcome{output: text}
	var exit *exec.ExitError
	switch {
	case err == nil:
		o.suitePassed = true
	case !errors.As(err, &exit):
		o.err = err
	}
	if m := clientExitRE.FindStringSubmatch(text); m != nil {
		o.clientExit, _ = strconv.Atoi(m[1])
	}
	o.timedOut = strings.Contains(text, "Client timed out after")
	if m := saidRE.FindAllStringSubmatch(text, -1); m != nil {
		o.said = m[len(m)-1][1]
	}
	files, _ := filepath.Glob(filepath.Join(out, name+"-*", "checks.json"))
	if len(files) != 1 {
		o.err = fmt.Errorf("want one checks.json for %s in %s, found %d", name, out, len(files))
		return o
	}
	o.readChecks(files[0])
	// The suite shows the client's stderr only when it exited non-zero.
	if stderr, err := os.ReadFile(filepath.Join(filepath.Dir(files[0]), "stderr.txt")); err == nil && o.clientExit == 0 {
		o.output += "\nclient stderr:\n" + string(stderr)
	}
	return o
}

// readChecks counts the checks of a checks.json and notes the first that failed or warned.
func (o *outcome) readChecks(path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		o.err = err
		return
	}
	var checks []struct {
		Name, Status, Description, ErrorMessage string
	}
	if err := json.Unmarshal(raw, &checks); err != nil {
		o.err = fmt.Errorf("%s: %w", path, err)
		return
	}
	late, other := 0, 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			o.passed++
			o.of++
		case "FAILURE", "WARNING":
			if c.Status == "FAILURE" {
				o.of++
			}
			if o.failure == "" {
				o.failure = strings.TrimSpace(c.Status + " " + c.Name + ": " + c.Description + " " + c.ErrorMessage)
			}
			if c.Status == "WARNING" && c.Name == "ClientRespectsRetryField" && strings.Contains(c.ErrorMessage, "slightly late") {
				late++
			} else {
				other++
			}
		}
	}
	o.onlyLate = late > 0 && other == 0 && o.clientExit == 0 && !o.timedOut && o.err == nil
}

// suitePeers returns Node 22 and the suite's CLI script, or skips (fails with
// MAVEN_REQUIRE_PEERS=1) when `npm ci` has not installed them.
func suitePeers(t *testing.T) (node, cli string) {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	node = os.Getenv("MAVEN_NODE22")
	if node == "" {
		node = filepath.Join(root, "node_modules", "node", "bin", "node")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		testenv.MissingPeer(t, "Node 22 is not at %s (npm package node@22, or set MAVEN_NODE22): %v", node, err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "v%d.", &major); err != nil || major < 22 {
		testenv.MissingPeer(t, "the conformance suite needs Node 22 or newer; %s is %s", node, bytes.TrimSpace(out))
	}
	pkg := filepath.Join(root, "node_modules", "@modelcontextprotocol", "conformance")
	raw, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		testenv.MissingPeer(t, "the conformance suite is not installed: %v", err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Version != suiteVersion {
		testenv.MissingPeer(t, "the conformance suite installed is %q, package.json pins %s: %v", meta.Version, suiteVersion, err)
	}
	return node, filepath.Join(pkg, "dist", "index.js")
}

// build builds the package pkg into dir/name with this module's go.mod, and returns its path.
func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// clientScenarios lists the suite's client scenarios (`conformance list --client`).
func clientScenarios(t *testing.T, node, cli string) []string {
	t.Helper()
	out, err := exec.Command(node, cli, "list", "--client").Output()
	if err != nil {
		t.Fatalf("conformance list --client: %v", err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "  - "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	for _, core := range []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"} {
		if !slices.Contains(names, core) {
			t.Fatalf("conformance list --client does not list %s:\n%s", core, out)
		}
	}
	if len(names) != 26 {
		t.Fatalf("conformance %s lists %d client scenarios, not 26:\n%s", suiteVersion, len(names), out)
	}
	return names
}

// TestOnlyALateReconnectIsRunAgain checks that runTimed runs again only for the suite's
// "slightly late" warning, never for a failure: a client that ignores the retry field (very
// late), reconnects early, or also fails another check must fail.
func TestOnlyALateReconnectIsRunAgain(t *testing.T) {
	const late = `{"name":"ClientRespectsRetryField","status":"WARNING","errorMessage":"Client reconnected slightly late (866ms instead of 500ms)."}`
	for _, c := range []struct {
		name, checks string
		want         bool
	}{
		{"slightly late", `[{"name":"ClientGracefulReconnect","status":"SUCCESS"},` + late + `]`, true},
		{"very late", `[{"name":"ClientRespectsRetryField","status":"FAILURE","errorMessage":"Client reconnected very late (1500ms instead of 500ms)."}]`, false},
		{"too early", `[{"name":"ClientRespectsRetryField","status":"FAILURE","errorMessage":"Client reconnected too early (100ms instead of 500ms)."}]`, false},
		{"late and no Last-Event-ID", `[` + late + `,{"name":"ClientSendsLastEventId","status":"WARNING","errorMessage":"Client did not send Last-Event-ID header on reconnection."}]`, false},
		{"all passed", `[{"name":"ClientRespectsRetryField","status":"SUCCESS"}]`, false},
	} {
		path := filepath.Join(t.TempDir(), "checks.json")
		if err := os.WriteFile(path, []byte(c.checks), 0o600); err != nil {
			t.Fatal(err)
		}
		var o outcome
		o.readChecks(path)
		if o.err != nil || o.onlyLate != c.want {
			t.Errorf("%s: onlyLate = %v (err %v), want %v", c.name, o.onlyLate, o.err, c.want)
		}
	}
}
