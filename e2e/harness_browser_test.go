package e2e

// The harness: the one shared headless Chromium and a fresh context (a tab) per test.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

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
	dark          bool // prefers-color-scheme: dark
	noScript      bool // JavaScript off: what works without htmx and maven.js
}

// inDark is the same device with the system set to dark mode.
func (d device) inDark() device {
	d.dark, d.name = true, d.name+"-dark"
	return d
}

// withoutScript is the same device with JavaScript turned off.
func (d device) withoutScript() device {
	d.noScript, d.name = true, d.name+"-noscript"
	return d
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
		ColorScheme:       colorScheme(d.dark),
		JavaScriptEnabled: playwright.Bool(!d.noScript),
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

func colorScheme(dark bool) *playwright.ColorScheme {
	if dark {
		return playwright.ColorSchemeDark
	}
	return playwright.ColorSchemeLight
}

// shareSession signs other in as tb: the same session cookies on another device.
func (tb *tab) shareSession(other *tab, baseURL string) {
	tb.t.Helper()
	cookies, err := tb.Context.Cookies(baseURL)
	check(tb.t, err, "read cookies")
	for _, c := range cookies {
		check(tb.t, other.Context.AddCookies([]playwright.OptionalCookie{{
			Name: c.Name, Value: c.Value, URL: playwright.String(baseURL),
		}}), "copy a session cookie")
	}
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
