package e2e

// The harness. Run the suite with scripts/test, or, after scripts/test has installed the driver
// into .cache/playwright-driver once:
//
//	go test ./e2e/ -v                         (-run TestSmoke for one journey)
//
// startMaven runs the real daemon (cmd/maven, built once per test binary) on 127.0.0.1:0 with its
// own data directory; newBrowser gives each test a fresh context in the one shared headless
// Chromium; addAuthenticator attaches a CDP virtual authenticator to a page. The browser talks to
// http://localhost:PORT, never 127.0.0.1: the WebAuthn RP ID is "localhost". Every helper is safe
// under t.Parallel. No sleeps: wait with the auto-waiting assertions in tab.Expect.

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

const (
	startTimeout     = 30 * time.Second // from exec to a 200 from /healthz
	stopTimeout      = 15 * time.Second // from SIGTERM to exit
	setupLinkTimeout = 10 * time.Second
	actionTimeout    = 10 * time.Second // Playwright actions, navigations and assertions
)

// chromiumArgs keep the browser from talking to anything but the daemon under test.
var chromiumArgs = []string{
	"--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--disable-sync",
}

// suite is what one test binary shares: the maven binary and one Chromium, both made on first use.
var suite struct {
	buildOnce sync.Once
	buildDir  string
	binary    string
	buildErr  error

	browserOnce sync.Once
	pw          *playwright.Playwright
	browser     playwright.Browser
	browserErr  error
	launchTook  time.Duration
}

func TestMain(m *testing.M) {
	code := m.Run()
	if suite.browser != nil {
		suite.browser.Close()
	}
	if suite.pw != nil {
		suite.pw.Stop()
	}
	if suite.buildDir != "" {
		os.RemoveAll(suite.buildDir)
	}
	os.Exit(code)
}

// requireE2E skips the test when the browser setup is missing, or fails it under
// MAVEN_REQUIRE_E2E=1 (CI), where a skipped e2e suite would be a silent hole.
func requireE2E(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("MAVEN_REQUIRE_E2E") == "1" {
		t.Fatalf("e2e setup: %v", err)
	}
	t.Skipf("e2e setup: %v (run scripts/test once to install it; MAVEN_REQUIRE_E2E=1 fails instead of skipping)", err)
}

// ---------------------------------------------------------------------------------------------
// The daemon

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
	m.start("127.0.0.1:0")
	return m
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

// ---------------------------------------------------------------------------------------------
// The browser

// sharedBrowser starts Playwright and Chromium once per test binary.
func sharedBrowser() (playwright.Browser, error) {
	suite.browserOnce.Do(func() {
		start := time.Now()
		suite.pw, suite.browser, suite.browserErr = launchChromium()
		suite.launchTook = time.Since(start)
	})
	return suite.browser, suite.browserErr
}

func launchChromium() (*playwright.Playwright, playwright.Browser, error) {
	dir, err := driverDir()
	if err != nil {
		return nil, nil, err
	}
	if os.Getenv("PLAYWRIGHT_NODEJS_PATH") == "" && !exists(filepath.Join(dir, "node")) {
		// The npm package brings no node of its own, unlike Playwright's driver download.
		if node, err := exec.LookPath("node"); err == nil {
			os.Setenv("PLAYWRIGHT_NODEJS_PATH", node)
		}
	}
	pw, err := playwright.Run(&playwright.RunOptions{
		DriverDirectory: dir, SkipInstallBrowsers: true, Stdout: os.Stderr, Stderr: os.Stderr,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("playwright driver in %s: %w", dir, err)
	}
	launch := playwright.BrowserTypeLaunchOptions{Headless: playwright.Bool(true), Args: chromiumArgs}
	if path, err := chromiumPath(); err != nil {
		pw.Stop()
		return nil, nil, err
	} else if path != "" {
		launch.ExecutablePath = playwright.String(path)
	}
	browser, err := pw.Chromium.Launch(launch)
	if err != nil {
		pw.Stop()
		return nil, nil, fmt.Errorf("launch chromium: %w", err)
	}
	return pw, browser, nil
}

// driverDir is PLAYWRIGHT_DRIVER_PATH, else the repository's .cache/playwright-driver (where
// scripts/test puts it), else playwright-go's own default. It must hold package/cli.js: checked
// here because playwright-go would create a missing directory and only then complain.
func driverDir() (string, error) {
	dir := os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	if dir == "" {
		if d, err := filepath.Abs(filepath.Join("..", ".cache", "playwright-driver")); err == nil && exists(filepath.Join(d, "package", "cli.js")) {
			return d, nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache := filepath.Join(home, ".cache")
		if runtime.GOOS == "darwin" {
			cache = filepath.Join(home, "Library", "Caches")
		}
		dir = filepath.Join(cache, "ms-playwright-go", "1.52.0")
	}
	if !exists(filepath.Join(dir, "package", "cli.js")) {
		return "", fmt.Errorf("no Playwright driver: %s has no package/cli.js (set PLAYWRIGHT_DRIVER_PATH)", dir)
	}
	return dir, nil
}

// chromiumPath is MAVEN_CHROMIUM, else Debian's /usr/bin/chromium, else chromium on PATH, else ""
// for Playwright's own download.
func chromiumPath() (string, error) {
	if p := os.Getenv("MAVEN_CHROMIUM"); p != "" {
		if !exists(p) {
			return "", fmt.Errorf("MAVEN_CHROMIUM=%s does not exist", p)
		}
		return p, nil
	}
	if exists("/usr/bin/chromium") {
		return "/usr/bin/chromium", nil
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// device is a viewport to emulate.
type device struct {
	name          string
	width, height int
	mobile        bool // meta viewport, touch events
	scale         float64
}

var (
	desktop = device{name: "desktop", width: 1280, height: 800, scale: 1}
	phone   = device{name: "phone", width: 390, height: 844, mobile: true, scale: 2}
)

// tab is one test's browser: a fresh context (its own cookies, storage and authenticators) and
// its first page, with Playwright's auto-waiting assertions.
type tab struct {
	t       *testing.T
	Context playwright.BrowserContext
	Page    playwright.Page
	Expect  playwright.PlaywrightAssertions
	outDir  string

	mu    sync.Mutex
	shots int
	notes []string // console errors and page errors, logged on failure
}

// newBrowser opens a fresh browser context and page in the shared Chromium, on a desktop viewport
// unless a device is given. When the test fails it saves a screenshot of every open page under
// e2e/out/<test name>/ and logs the page's console errors (CSP violations among them).
func newBrowser(t *testing.T, dev ...device) *tab {
	t.Helper()
	browser, err := sharedBrowser()
	requireE2E(t, err)
	d := desktop
	if len(dev) > 0 {
		d = dev[0]
	}
	ctx, err := browser.NewContext(playwright.BrowserNewContextOptions{
		Viewport:          &playwright.Size{Width: d.width, Height: d.height},
		IsMobile:          playwright.Bool(d.mobile),
		HasTouch:          playwright.Bool(d.mobile),
		DeviceScaleFactor: playwright.Float(d.scale),
	})
	if err != nil {
		t.Fatalf("new browser context: %v", err)
	}
	ctx.SetDefaultTimeout(actionTimeout.Seconds() * 1000)
	ctx.SetDefaultNavigationTimeout(actionTimeout.Seconds() * 1000)
	tb := &tab{
		t:       t,
		Context: ctx,
		Expect:  playwright.NewPlaywrightAssertions(actionTimeout.Seconds() * 1000),
		outDir:  outDir(t),
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range ctx.Pages() {
				t.Logf("page %d at %s", i, p.URL())
				tb.screenshot(p, fmt.Sprintf("failure-%s-page%d", d.name, i))
			}
			tb.mu.Lock()
			for _, n := range tb.notes {
				t.Logf("browser: %s", n)
			}
			tb.mu.Unlock()
		}
		ctx.Close()
	})
	ctx.OnPage(tb.watch)
	tb.Page, err = ctx.NewPage()
	if err != nil {
		t.Fatalf("new page: %v", err)
	}
	return tb
}

func (tb *tab) watch(p playwright.Page) {
	note := func(s string) {
		tb.mu.Lock()
		tb.notes = append(tb.notes, s)
		tb.mu.Unlock()
	}
	p.OnConsole(func(m playwright.ConsoleMessage) {
		if m.Type() == "error" || m.Type() == "warning" {
			note(fmt.Sprintf("console %s on %s: %s (%s)", m.Type(), p.URL(), m.Text(), m.Location().URL))
		}
	})
	p.OnPageError(func(err error) { note(fmt.Sprintf("page error at %s: %v", p.URL(), err)) })
}

// Goto navigates the page and fails the test unless the response is a 2xx or 3xx.
func (tb *tab) Goto(url string) playwright.Response {
	tb.t.Helper()
	resp, err := tb.Page.Goto(url)
	if err != nil {
		tb.t.Fatalf("goto %s: %v", url, err)
	}
	if resp != nil && resp.Status() >= 400 {
		tb.t.Fatalf("goto %s: HTTP %d", url, resp.Status())
	}
	return resp
}

// Screenshot saves a full-page screenshot of the page as e2e/out/<test name>/NN-name.png.
func (tb *tab) Screenshot(name string) {
	tb.t.Helper()
	tb.screenshot(tb.Page, name)
}

func (tb *tab) screenshot(p playwright.Page, name string) {
	tb.t.Helper()
	tb.mu.Lock()
	tb.shots++
	n := tb.shots
	tb.mu.Unlock()
	path := filepath.Join(tb.outDir, fmt.Sprintf("%02d-%s.png", n, name))
	if err := os.MkdirAll(tb.outDir, 0o755); err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	if _, err := p.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true)}); err != nil {
		tb.t.Logf("screenshot %s: %v", path, err)
		return
	}
	tb.t.Logf("screenshot: %s", path)
}

var (
	outDirsMu sync.Mutex
	outDirs   = map[string]string{} // test name → its directory, emptied on first use in this run

	unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// outDir is e2e/out/<test name>/, cleared once per run so it never shows an older run's shots.
func outDir(t *testing.T) string {
	outDirsMu.Lock()
	defer outDirsMu.Unlock()
	if dir, ok := outDirs[t.Name()]; ok {
		return dir
	}
	dir := filepath.Join("out", unsafeFileChars.ReplaceAllString(t.Name(), "_"))
	os.RemoveAll(dir)
	outDirs[t.Name()] = dir
	return dir
}

// ---------------------------------------------------------------------------------------------
// Virtual WebAuthn authenticators (CDP WebAuthn domain)

// authenticatorOptions are CDP's WebAuthn.VirtualAuthenticatorOptions.
type authenticatorOptions struct {
	Protocol            string `json:"protocol"`  // "ctap2" or "u2f"
	Transport           string `json:"transport"` // "internal", "usb", "nfc", "ble", "hybrid"
	HasResidentKey      bool   `json:"hasResidentKey"`
	HasUserVerification bool   `json:"hasUserVerification"`
	IsUserVerified      bool   `json:"isUserVerified"`
	HasPRF              bool   `json:"hasPrf"`
	// Backup flags of the credentials it creates.
	DefaultBackupEligibility bool `json:"defaultBackupEligibility"`
	DefaultBackupState       bool `json:"defaultBackupState"`
}

// passkey is a platform authenticator with discoverable credentials, user verification that
// succeeds, and PRF: what a phone or laptop passkey offers. Change fields for other kinds.
func passkey() authenticatorOptions {
	return authenticatorOptions{
		Protocol: "ctap2", Transport: "internal",
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, HasPRF: true,
	}
}

var (
	cdpMu       sync.Mutex
	cdpSessions = map[playwright.Page]playwright.CDPSession{}
)

// cdpSession returns the page's DevTools session with the WebAuthn domain enabled, made once per
// page: an authenticator is only reachable through the session that added it.
func cdpSession(t *testing.T, page playwright.Page) playwright.CDPSession {
	t.Helper()
	cdpMu.Lock()
	s, ok := cdpSessions[page]
	cdpMu.Unlock()
	if ok {
		return s
	}
	// Now and then, with many pages starting at once on two cores, Chromium never answers
	// WebAuthn.enable on a fresh session. A command with no answer must not hang the suite (nor,
	// through a shared lock, every other test): give it a deadline and one more session.
	var err error
	for attempt := 1; ; attempt++ {
		s, err = page.Context().NewCDPSession(page)
		if err != nil {
			t.Fatalf("new CDP session: %v", err)
		}
		// enableUI false: no UI for the virtual authenticator, ceremonies answer straight away.
		_, err = sendWithin(s, "WebAuthn.enable", map[string]any{"enableUI": false}, cdpDeadline)
		if err == nil {
			break
		}
		s.Detach()
		if attempt == 2 {
			t.Fatalf("WebAuthn.enable: %v", err)
		}
		t.Logf("WebAuthn.enable: %v; trying a new CDP session", err)
	}
	cdpMu.Lock()
	cdpSessions[page] = s
	cdpMu.Unlock()
	page.OnClose(func(playwright.Page) {
		cdpMu.Lock()
		delete(cdpSessions, page)
		cdpMu.Unlock()
	})
	return s
}

// cdpDeadline bounds one CDP command: they answer in milliseconds when they answer at all.
const cdpDeadline = 15 * time.Second

// sendWithin sends a CDP command and gives up after d.
func sendWithin(s playwright.CDPSession, method string, params map[string]any, d time.Duration) (any, error) {
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := s.Send(method, params)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(d):
		return nil, fmt.Errorf("no answer within %s", d)
	}
}

// cdpSend sends a CDP command, failing the test on error, and decodes the result into out (if
// not nil).
func cdpSend(t *testing.T, cdp playwright.CDPSession, method string, params any, out any) {
	t.Helper()
	var p map[string]any
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
	}
	res, err := sendWithin(cdp, method, p, cdpDeadline)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out == nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s result %s: %v", method, b, err)
	}
}

// addAuthenticator attaches a virtual authenticator to the page and returns its id. The browser
// then uses it for every WebAuthn ceremony on that page, without any prompt. Chromium allows one
// "internal" authenticator per page: give a second one another transport ("usb").
func addAuthenticator(t *testing.T, page playwright.Page, opts authenticatorOptions) string {
	t.Helper()
	var res struct {
		AuthenticatorID string `json:"authenticatorId"`
	}
	cdpSend(t, cdpSession(t, page), "WebAuthn.addVirtualAuthenticator", map[string]any{"options": opts}, &res)
	return res.AuthenticatorID
}

// replaceAuthenticator removes the authenticator and adds a fresh one with opts, holding copies
// of the old one's credentials (with their sign counts and backup flags but not their PRF
// secrets: CDP cannot carry those, so the copies answer no PRF). It returns the new id.
func replaceAuthenticator(t *testing.T, page playwright.Page, id string, opts authenticatorOptions) string {
	t.Helper()
	cdp := cdpSession(t, page)
	var res struct {
		Credentials []map[string]any `json:"credentials"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredentials", map[string]any{"authenticatorId": id}, &res)
	cdpSend(t, cdp, "WebAuthn.removeVirtualAuthenticator", map[string]any{"authenticatorId": id}, nil)
	newID := addAuthenticator(t, page, opts)
	for _, c := range res.Credentials {
		cdpSend(t, cdp, "WebAuthn.addCredential", map[string]any{"authenticatorId": newID, "credential": c}, nil)
	}
	return newID
}

// setUserVerified makes the authenticator's next user verifications succeed or fail. Chromium
// answers a failed verification with NotAllowedError in the page, so the server never sees it,
// and the authenticator stays unusable after one (switching back to true does not help): use
// replaceAuthenticator to go on. To make the server see an assertion without UV, use
// setResponseOverrides with IsBadUV.
func setUserVerified(t *testing.T, cdp playwright.CDPSession, id string, verified bool) {
	t.Helper()
	cdpSend(t, cdp, "WebAuthn.setUserVerified", map[string]any{"authenticatorId": id, "isUserVerified": verified}, nil)
}

// responseOverrides are CDP's WebAuthn.setResponseOverrideBits: they corrupt the authenticator's
// next responses.
type responseOverrides struct {
	IsBogusSignature bool `json:"isBogusSignature"`
	IsBadUV          bool `json:"isBadUV"` // UV flag cleared in the response
	IsBadUP          bool `json:"isBadUP"` // UP flag cleared in the response
}

// setResponseOverrides sets (or, with the zero value, clears) the authenticator's response
// overrides.
func setResponseOverrides(t *testing.T, cdp playwright.CDPSession, id string, o responseOverrides) {
	t.Helper()
	params := map[string]any{"authenticatorId": id}
	b, _ := json.Marshal(o)
	json.Unmarshal(b, &params)
	cdpSend(t, cdp, "WebAuthn.setResponseOverrideBits", params, nil)
}

// virtualCredential is CDP's WebAuthn.Credential. Binary fields are standard base64.
type virtualCredential struct {
	CredentialID         string `json:"credentialId"`
	IsResidentCredential bool   `json:"isResidentCredential"`
	RPID                 string `json:"rpId"`
	PrivateKey           string `json:"privateKey"`
	UserHandle           string `json:"userHandle"`
	SignCount            int    `json:"signCount"`
	LargeBlob            string `json:"largeBlob,omitempty"`
	BackupEligibility    *bool  `json:"backupEligibility,omitempty"`
	BackupState          *bool  `json:"backupState,omitempty"`
	UserName             string `json:"userName,omitempty"`
	UserDisplayName      string `json:"userDisplayName,omitempty"`
}

// IDBase64URL is the credential id as the page and the server see it (unpadded base64url).
func (c virtualCredential) IDBase64URL() string {
	b, err := base64.StdEncoding.DecodeString(c.CredentialID)
	if err != nil {
		return c.CredentialID
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// virtualCredentials lists the credentials the authenticator holds.
func virtualCredentials(t *testing.T, cdp playwright.CDPSession, id string) []virtualCredential {
	t.Helper()
	var res struct {
		Credentials []virtualCredential `json:"credentials"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredentials", map[string]any{"authenticatorId": id}, &res)
	return res.Credentials
}

// onlyCredential returns the authenticator's one credential, failing unless it holds exactly one.
func onlyCredential(t *testing.T, cdp playwright.CDPSession, id string) virtualCredential {
	t.Helper()
	creds := virtualCredentials(t, cdp, id)
	if len(creds) != 1 {
		t.Fatalf("authenticator holds %d credentials, want 1: %+v", len(creds), creds)
	}
	return creds[0]
}

// setCredentialProperties changes a credential's backup flags (BE, BS); nil leaves one as is.
func setCredentialProperties(t *testing.T, cdp playwright.CDPSession, id, credentialID string, backupEligibility, backupState *bool) {
	t.Helper()
	params := map[string]any{"authenticatorId": id, "credentialId": credentialID}
	if backupEligibility != nil {
		params["backupEligibility"] = *backupEligibility
	}
	if backupState != nil {
		params["backupState"] = *backupState
	}
	cdpSend(t, cdp, "WebAuthn.setCredentialProperties", params, nil)
}

// setSignCount replaces a credential with a copy whose signature counter is n, as a cloned
// authenticator would present it. CDP has no direct setter, so the credential is removed and
// added back, which loses its PRF secret: the copy answers no PRF.
func setSignCount(t *testing.T, cdp playwright.CDPSession, id, credentialID string, n int) {
	t.Helper()
	var res struct {
		Credential map[string]any `json:"credential"`
	}
	cdpSend(t, cdp, "WebAuthn.getCredential", map[string]any{"authenticatorId": id, "credentialId": credentialID}, &res)
	if res.Credential == nil {
		t.Fatalf("no credential %s", credentialID)
	}
	res.Credential["signCount"] = n
	cdpSend(t, cdp, "WebAuthn.removeCredential", map[string]any{"authenticatorId": id, "credentialId": credentialID}, nil)
	cdpSend(t, cdp, "WebAuthn.addCredential", map[string]any{"authenticatorId": id, "credential": res.Credential}, nil)
}

// evalJSON runs script in the page (a function expression, awaited if it returns a promise) with
// arg, and decodes its result into out.
func evalJSON(t *testing.T, page playwright.Page, script string, arg any, out any) {
	t.Helper()
	res, err := page.Evaluate(script, arg)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("evaluate result %s: %v", b, err)
	}
}
