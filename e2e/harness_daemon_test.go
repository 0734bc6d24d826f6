package e2e

// The harness: the daemon under test, built once per test binary, run on 127.0.0.1:0 with its
// own data directory, and its log.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"maven/internal/daemontest"
)

// mavenBinary builds cmd/maven once per test binary.
func mavenBinary(t *testing.T) string {
	t.Helper()
	suite.buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "maven-e2e-")
		if err != nil {
			suite.buildErr = err
			return
		}
		suite.buildDir = dir
		suite.binary = filepath.Join(dir, "maven")
		out, err := exec.Command("go", "build", "-o", suite.binary, "maven/cmd/maven").CombinedOutput()
		if err != nil {
			suite.buildErr = fmt.Errorf("go build maven/cmd/maven: %v\n%s", err, out)
		}
	})
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	return suite.binary
}

// mavenOptions configure one daemon.
type mavenOptions struct {
	Config string   // JSON for --config; empty runs the embedded defaults (no maven.json in its cwd)
	Env    []string // extra KEY=VALUE for the daemon's environment
	// Listen is --listen; empty is 127.0.0.1:0. A config with origins of its own needs the port
	// it names (freePort).
	Listen string
}

// mavenProc is one running daemon. Its data directory survives Restart.
type mavenProc struct {
	t       *testing.T
	Data    string // --data
	Addr    string // 127.0.0.1:PORT the daemon listens on
	BaseURL string // http://localhost:PORT, the origin the browser uses
	config  string
	env     []string
	log     *daemontest.Log // every run's output, stdout and stderr interleaved
	proc    *daemontest.Daemon
}

// A slog text value with '=' in it is quoted, so a link ends at a quote or a blank.
var setupLinkRE = regexp.MustCompile(`https?://[^\s"]+/setup[^\s"]*`)

// startMaven starts `maven serve` on a random port with a fresh data directory, waits until
// /healthz answers 200, and stops it with SIGTERM when the test ends. On failure the test log
// gets the daemon's whole output.
func startMaven(t *testing.T, opts mavenOptions) *mavenProc {
	t.Helper()
	m := &mavenProc{t: t, Data: filepath.Join(t.TempDir(), "data"), env: opts.Env, log: &daemontest.Log{}}
	if opts.Config != "" {
		m.config = filepath.Join(t.TempDir(), "maven.json")
		if err := os.WriteFile(m.config, []byte(opts.Config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("maven output:\n%s", m.log.String())
		}
	})
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	m.start(listen)
	return m
}

// freePort returns a loopback port nothing listens on right now, for a daemon whose config
// names its own origins.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// URL returns the browser's URL for path on this daemon.
func (m *mavenProc) URL(path string) string { return m.BaseURL + path }

// Log returns everything the daemon wrote so far, stdout and stderr interleaved.
func (m *mavenProc) Log() string { return m.log.String() }

// Restart stops the daemon with SIGTERM and starts it again on the same port with the same data
// directory, so BaseURL and the browser's origin stay the same.
func (m *mavenProc) Restart() {
	m.t.Helper()
	m.stop()
	m.log.Write([]byte("--- restart ---\n"))
	m.start(m.Addr)
}

// SetupLink returns the latest setup link the daemon printed (a URL with "/setup" in it), waiting
// up to setupLinkTimeout for one. Its host is what the daemon printed; use Rebase to open it.
func (m *mavenProc) SetupLink() string {
	m.t.Helper()
	link, ok := m.log.Wait(setupLinkRE, setupLinkTimeout)
	if !ok {
		m.t.Fatalf("maven printed no setup link within %s:\n%s", setupLinkTimeout, m.log.String())
	}
	return link
}

// Rebase moves a URL the daemon printed onto BaseURL, keeping its path, query and fragment.
func (m *mavenProc) Rebase(link string) string {
	m.t.Helper()
	i := strings.Index(link, "://")
	if i < 0 {
		m.t.Fatalf("not an absolute URL: %q", link)
	}
	rest := link[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		return m.BaseURL + rest[j:]
	}
	return m.BaseURL
}

// CLI runs a maven client command against this daemon (MAVEN_DATA set) and returns its stdout;
// a non-zero exit fails the test.
func (m *mavenProc) CLI(args ...string) string {
	m.t.Helper()
	cmd := exec.Command(mavenBinary(m.t), args...)
	cmd.Dir = m.t.TempDir()
	cmd.Env = append(m.baseEnv(), "MAVEN_DATA="+m.Data)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		m.t.Fatalf("maven %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func (m *mavenProc) baseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return append(env, m.env...)
}

func (m *mavenProc) start(listen string) {
	t := m.t
	t.Helper()
	args := []string{"serve", "--data", m.Data, "--listen", listen}
	if m.config != "" {
		args = append(args, "--config", m.config)
	}
	cmd := exec.Command(mavenBinary(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = m.baseEnv()
	proc, err := daemontest.StartLogged(cmd, m.Data, startTimeout, m.log)
	if err != nil {
		t.Fatal(err)
	}
	m.proc, m.Addr, m.BaseURL = proc, proc.Addr, proc.Origin()
}

// stop sends SIGTERM and waits for a clean exit; it does nothing if the daemon is not running.
func (m *mavenProc) stop() {
	m.t.Helper()
	if m.proc == nil {
		return
	}
	proc := m.proc
	m.proc = nil
	if err := proc.Stop(stopTimeout); err != nil {
		m.t.Errorf("%v", err)
	}
}
