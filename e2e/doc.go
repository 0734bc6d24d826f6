// Package e2e holds Maven's end-to-end tests: the real daemon (built from cmd/maven) driven by
// playwright-go in a real Chromium with a virtual WebAuthn authenticator. It has no code outside
// its tests; the harness is in harness*_test.go (the suite, the daemon, the browser, the
// virtual passkeys), helpers_test.go holds what journeys share, and every other test file is
// one user journey.
//
// Run it with scripts/test, or locally once scripts/test has installed the driver:
//
//	go test ./e2e/ -v
//
// The harness finds the driver in PLAYWRIGHT_DRIVER_PATH (default: the repository's
// .cache/playwright-driver, as scripts/test lays it out) and Chromium in MAVEN_CHROMIUM (default
// /usr/bin/chromium, else `chromium` on PATH, else Playwright's own download). Without a driver or
// browser the tests skip, unless MAVEN_REQUIRE_E2E=1, as in CI, which makes them fail.
// Screenshots taken on failure or by tab.Screenshot land in e2e/out/<test name>/ (git-ignored).
package e2e
