package e2e

import (
	"net/http"
	"testing"
)

// TestSetupLinkRegistersOwner: the setup link the daemon prints on first start opens /setup,
// `Register passkey` creates the owner's passkey with the authenticator, and the browser lands
// on /tools signed in. The link works once.
func TestSetupLinkRegistersOwner(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t)

	authID := registerOwner(t, m, tb)
	cred := onlyCredential(t, cdpSession(t, tb.Page), authID)
	if !cred.IsResidentCredential || cred.RPID != "localhost" {
		t.Errorf("registered credential resident=%v rpId=%q, want a discoverable passkey for localhost", cred.IsResidentCredential, cred.RPID)
	}
	check(t, tb.Expect.Locator(tb.Page.Locator("h1")).ToHaveText("Tools"), "the Tools page")

	// A used link is gone: opening it again offers no registration.
	resp, err := tb.Page.Goto(m.Rebase(m.SetupLink()))
	check(t, err, "open the used setup link")
	if resp.Status() != http.StatusGone {
		t.Errorf("used setup link: HTTP %d, want 410", resp.Status())
	}
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Register passkey")).ToHaveCount(0), "no Register passkey on a used link")
	check(t, tb.Expect.Locator(tb.Page.Locator("main")).ToContainText("already used"), "the used link says so")
}
