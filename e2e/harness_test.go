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
	"os"
	"sync"
	"testing"
	"time"

	"maven/internal/testenv"

	"github.com/playwright-community/playwright-go"
)

const (
	startTimeout     = 30 * time.Second // from exec to a 200 from /healthz
	stopTimeout      = 15 * time.Second // from SIGTERM to exit
	setupLinkTimeout = 10 * time.Second
	actionTimeout    = 10 * time.Second // Playwright actions, navigations and assertions
	// from exec of a Node client to its first request of the browser: Node started, the SDK
	// imported, discovery and registration done (CI saw more than 10 s on two loaded cores)
	nodeStartTimeout = 60 * time.Second
	// from Register passkey to where registration leads: the vault is created then, its recovery
	// slot sealed with argon2id (64 MiB, t=3), which CI once took 11.7 s for on loaded cores
	registerTimeout = 40 * time.Second
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
	testenv.Missing(t, testenv.RequireE2E, "run scripts/test once to install it", "e2e setup: "+err.Error())
}
