package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

var unlockURL = regexp.MustCompile(`/unlock$`)

// lockState reads /healthz: "locked" or "unlocked".
func lockState(t *testing.T, m *mavenProc) string {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var h struct {
		Status string `json:"status"`
		Locked bool   `json:"locked"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "ok" {
		t.Fatalf("healthz %q: %v", body, err)
	}
	if h.Locked {
		return "locked"
	}
	return "unlocked"
}

func wantLockState(t *testing.T, m *mavenProc, want, when string) {
	t.Helper()
	if got := lockState(t, m); got != want {
		t.Fatalf("%s: the daemon is %s, want %s", when, got, want)
	}
}

// forgePRF rewrites the body maven.js posts to /unlock/finish: the PRF output becomes random
// bytes. The authenticator's signature stays valid, because PRF outputs are client extension
// outputs it does not sign.
func forgePRF(t *testing.T, route playwright.Route) {
	body, err := route.Request().PostData()
	if err != nil {
		t.Errorf("read the unlock post: %v", err)
		route.Continue()
		return
	}
	var post map[string]any
	if err := json.Unmarshal([]byte(body), &post); err != nil {
		t.Errorf("decode the unlock post: %v", err)
		route.Continue()
		return
	}
	cred, _ := post["credential"].(map[string]any)
	ext, _ := cred["clientExtensionResults"].(map[string]any)
	prf, _ := ext["prf"].(map[string]any)
	results, _ := prf["results"].(map[string]any)
	if results == nil || results["first"] == nil {
		t.Errorf("the unlock post carries no PRF output to forge: %s", body)
		route.Continue()
		return
	}
	forged := make([]byte, 32)
	rand.Read(forged)
	results["first"] = base64.RawURLEncoding.EncodeToString(forged)
	out, _ := json.Marshal(post)
	if err := route.Continue(playwright.RouteContinueOptions{PostData: out}); err != nil {
		t.Errorf("continue the forged post: %v", err)
	}
}

// TestUnlockFromPhone is the owner's unlock journey on a 390 px phone: registering a PRF
// passkey makes the vault and shows its recovery code once; after a restart the daemon is
// locked and every page leads to /unlock; a forged PRF output with a valid assertion does not
// unlock; `Unlock with passkey` does, and signs in; `Lock` locks; a passkey without PRF is told
// plainly that it cannot unlock, and the recovery code does.
func TestUnlockFromPhone(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	tb := newBrowser(t, phone)

	// Register with PRF: the vault is made, and its recovery code shown once.
	addAuthenticator(t, tb.Page, passkey())
	tb.Goto(m.Rebase(m.SetupLink()))
	check(t, pageButton(tb.Page, "Register passkey").Click(), "click Register passkey")
	codeEl := tb.Page.Locator("#recovery-code [data-recovery-code]")
	check(t, registered(tb, codeEl), "the recovery code is shown")
	code, err := codeEl.TextContent()
	check(t, err, "read the recovery code")
	if !regexp.MustCompile(`^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$`).MatchString(code) {
		t.Fatalf("recovery code %q", code)
	}
	tb.Screenshot("recovery-code")
	check(t, pageButton(tb.Page, "I have saved it").Click(), "acknowledge the recovery code")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(toolsURL), "on /tools after setup")
	wantLockState(t, m, "unlocked", "after setup")
	if strings.Contains(m.Log(), code) {
		t.Fatal("the recovery code reached the daemon's log")
	}

	// Restart: locked, and the pages lead to /unlock.
	m.Restart()
	wantLockState(t, m, "locked", "after restart")
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(unlockURL), "/tools leads to /unlock while locked")
	unlockButton := pageButton(tb.Page, "Unlock with passkey")
	check(t, tb.Expect.Locator(unlockButton).ToBeVisible(), "Unlock with passkey offered")
	tb.Screenshot("unlock-phone")
	var width int
	evalJSON(t, tb.Page, `() => document.documentElement.scrollWidth`, nil, &width)
	if width > phone.width {
		t.Errorf("/unlock is %d px wide on a %d px phone", width, phone.width)
	}

	// A forged PRF output with a valid assertion does not unlock, and does not sign in.
	check(t, tb.Page.Route("**/unlock/finish", func(r playwright.Route) { forgePRF(t, r) }), "intercept /unlock/finish")
	check(t, unlockButton.Click(), "click Unlock with passkey (forged)")
	check(t, tb.Expect.Locator(tb.Page.Locator(".unlock-page .feedback[data-kind=error]")).ToContainText("did not unlock"), "the forged unlock fails, said beside the button")
	check(t, tb.Page.Unroute("**/unlock/finish"), "stop intercepting")
	wantLockState(t, m, "locked", "after a forged PRF output")
	tb.Goto(m.URL("/tools"))
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(unlockURL), "still on /unlock after the forgery")

	// The genuine gesture unlocks and signs in.
	check(t, unlockButton.Click(), "click Unlock with passkey")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(toolsURL), "signed in on /tools after unlocking")
	wantLockState(t, m, "unlocked", "after Unlock with passkey")

	// Lock locks, and signs out.
	check(t, pageButton(tb.Page, "Lock").Click(), "click Lock")
	check(t, tb.Expect.Page(tb.Page).ToHaveURL(unlockURL), "on /unlock after Lock")
	wantLockState(t, m, "locked", "after Lock")

	// A passkey without PRF, registered through a fresh setup link while locked, signs in but
	// is told plainly that it cannot unlock; the recovery code unlocks.
	var link struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(m.CLI("setup-link", "--json")), &link); err != nil || link.URL == "" {
		t.Fatalf("setup-link --json: %v", err)
	}
	other := newBrowser(t, phone)
	noPRF := passkey()
	noPRF.HasPRF = false
	addAuthenticator(t, other.Page, noPRF)
	other.Goto(m.Rebase(link.URL))
	check(t, pageButton(other.Page, "Register passkey").Click(), "register the passkey without PRF")
	check(t, other.Expect.Page(other.Page).ToHaveURL(unlockURL), "locked: registration leads to /unlock")
	check(t, pageButton(other.Page, "Unlock with passkey").Click(), "unlock with the passkey without PRF")
	check(t, other.Expect.Locator(other.Page.Locator("#no-prf")).ToBeVisible(), "the no-PRF message shows")
	check(t, other.Expect.Locator(other.Page.Locator("#no-prf")).ToContainText("can sign you in, but it cannot"), "it says so plainly")
	wantLockState(t, m, "locked", "after a passkey without PRF")
	other.Screenshot("no-prf")
	check(t, other.Page.Locator("#recovery-code").Fill(strings.ToLower(code)), "type the recovery code")
	check(t, pageButton(other.Page, "Unlock with recovery code").Click(), "unlock with the recovery code")
	// Signed in by the passkey, the owner is led to replace the used code.
	check(t, other.Expect.Page(other.Page).ToHaveURL(regexp.MustCompile(`/secrets#recovery$`)), "to /secrets after the recovery code")
	check(t, other.Expect.Locator(other.Page.Locator("#recovery .warning")).ToContainText("has been used"), "the used code is flagged")
	wantLockState(t, m, "unlocked", "after the recovery code")
	other.Screenshot("after-recovery")
	if strings.Contains(m.Log(), code) {
		t.Fatal("the recovery code reached the daemon's log")
	}
}
