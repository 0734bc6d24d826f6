package e2e

// The harness: the daemon under test, built once per test binary, run on 127.0.0.1:0 with its
// own data directory, and its log.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	log     *daemonLog
	cmd     *exec.Cmd
	done    chan error // the exit of cmd
}

var (
	listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)
	// A slog text value with '=' in it is quoted, so a link ends at a quote or a blank.
	setupLinkRE = regexp.MustCompile(`https?://[^\s"]+/setup[^\s"]*`)
)

// startMaven starts `maven serve` on a random port with a fresh data directory, waits until
// /healthz answers 200, and stops it with SIGTERM when the test ends. On failure the test log
// gets the daemon's whole output.
func startMaven(t *testing.T, opts mavenOptions) *mavenProc {
	t.Helper()
	m := &mavenProc{t: t, Data: filepath.Join(t.TempDir(), "data"), env: opts.Env, log: newDaemonLog()}
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
	m.log.append("--- restart ---")
	m.start(m.Addr)
}

// SetupLink returns the latest setup link the daemon printed (a URL with "/setup" in it), waiting
// up to setupLinkTimeout for one. Its host is what the daemon printed; use Rebase to open it.
func (m *mavenProc) SetupLink() string {
	m.t.Helper()
	link, ok := m.log.waitSetupLink(setupLinkTimeout)
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
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	m.cmd, m.done = cmd, done
	go func() { done <- cmd.Wait(); pw.Close() }()

	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			m.log.append(line)
			if mm := listeningRE.FindStringSubmatch(line); mm != nil {
				select {
				case addr <- mm[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr) // a line over 1 MiB: keep the daemon from blocking on its pipe
	}()

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case m.Addr = <-addr:
	case err := <-done:
		done <- err
		t.Fatalf("maven exited before listening: %v\n%s", err, m.log.String())
	case <-deadline.C:
		t.Fatalf("maven logged no listening address within %s:\n%s", startTimeout, m.log.String())
	}
	_, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		t.Fatalf("listening addr %q: %v", m.Addr, err)
	}
	m.BaseURL = "http://localhost:" + port

	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("http://" + m.Addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				client.CloseIdleConnections()
				return
			}
		}
		select {
		case <-tick.C:
		case err := <-done:
			done <- err
			t.Fatalf("maven exited before /healthz answered: %v\n%s", err, m.log.String())
		case <-deadline.C:
			t.Fatalf("/healthz not 200 within %s (last: %v):\n%s", startTimeout, describe(resp, err), m.log.String())
		}
	}
}

func describe(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// stop sends SIGTERM and waits for a clean exit; it does nothing if the daemon is not running.
func (m *mavenProc) stop() {
	t := m.t
	t.Helper()
	if m.cmd == nil {
		return
	}
	cmd, done := m.cmd, m.done
	m.cmd = nil
	select {
	case err := <-done:
		t.Errorf("maven had already exited: %v", err)
		return
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM maven: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("maven exit after SIGTERM: %v", err)
		}
	case <-time.After(stopTimeout):
		cmd.Process.Kill()
		<-done
		t.Errorf("maven did not exit within %s of SIGTERM", stopTimeout)
	}
}

// daemonLog keeps a daemon's output and notices setup links in it.
type daemonLog struct {
	mu      sync.Mutex
	b       strings.Builder
	link    string
	changed chan struct{} // closed and replaced on every line
}

func newDaemonLog() *daemonLog { return &daemonLog{changed: make(chan struct{})} }

func (l *daemonLog) append(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line)
	l.b.WriteByte('\n')
	if link := setupLinkRE.FindString(line); link != "" {
		l.link = link
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *daemonLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *daemonLog) waitSetupLink(timeout time.Duration) (string, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		link, changed := l.link, l.changed
		l.mu.Unlock()
		if link != "" {
			return link, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return "", false
		}
	}
}
