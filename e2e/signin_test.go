package e2e

import (
	"testing"
)

// TestSignInFreshContext: after the owner registered in one browser, a fresh browser context
// (no cookie) holding the same passkey is sent to /login and signs in with `Sign in with
// passkey`, landing on /tools.
func TestSignInFreshContext(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	first := newBrowser(t)
	firstAuth := registerOwner(t, m, first)

	fresh := newBrowser(t)
	fresh.Goto(m.URL("/tools"))
	check(t, fresh.Expect.Page(fresh.Page).ToHaveURL(m.URL("/login")), "a fresh context is sent to /login")
	freshAuth := copyPasskeys(t, first.Page, firstAuth, fresh.Page, passkey())
	before := signCount(t, fresh, freshAuth)

	check(t, pageButton(fresh.Page, "Sign in with passkey").Click(), "click Sign in with passkey")
	check(t, fresh.Expect.Page(fresh.Page).ToHaveURL(toolsURL), "signed in on /tools")
	check(t, fresh.Expect.Locator(pageButton(fresh.Page, "Sign out")).ToBeVisible(), "Sign out offered")
	if after := signCount(t, fresh, freshAuth); after != before+1 {
		t.Errorf("sign count %d → %d: want exactly one assertion for the sign-in", before, after)
	}

	// The first browser's session is its own: signing in elsewhere did not end it.
	first.Goto(m.URL("/tools"))
	check(t, first.Expect.Page(first.Page).ToHaveURL(toolsURL), "the first browser is still signed in")
}
