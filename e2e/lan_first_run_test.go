package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestFirstRunAtAnAddressWherePasskeysCannotWork: a first start as on a headless home server.
// Opened at the machine's IP address while the only origin is localhost, the setup link is
// refused with why (localhost is that machine only) and how to fix it (the SSH tunnel, naming
// the address used; or a name with HTTPS), never "This browser does not support passkeys". A
// page reached at a host Maven answers but an origin it is not configured for (http where the
// origin is https) says so before Register passkey is pressed; and the start-up log warns and
// names the origin to open.
func TestFirstRunAtAnAddressWherePasskeysCannotWork(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	cfg, err := json.Marshal(map[string]any{"rp_id": "localhost", "origins": []string{"https://localhost:" + port}})
	if err != nil {
		t.Fatal(err)
	}
	m := startMaven(t, mavenOptions{Config: string(cfg), Listen: "0.0.0.0:" + port})
	tb := newBrowser(t)
	link := m.SetupLink()

	// At the machine's address: refused, with the reason and the fixes.
	res, err := tb.Page.Goto("http://127.0.0.1:"+port+"/setup?token=x", playwright.PageGotoOptions{Timeout: playwright.Float(float64(actionTimeout.Milliseconds()))})
	check(t, err, "open the setup page at the machine's address")
	if res.Status() != http.StatusMisdirectedRequest {
		t.Fatalf("setup at 127.0.0.1: %d, want 421", res.Status())
	}
	page := tb.Page.Locator("#wrong-host")
	check(t, tb.Expect.Locator(page).ToContainText("127.0.0.1:"+port), "it names the address used")
	check(t, tb.Expect.Locator(page.Locator("code.command")).ToHaveText("ssh -L "+port+":localhost:"+port+" you@127.0.0.1"), "the tunnel command, for this address")
	check(t, tb.Expect.Locator(page).ToContainText("Give Maven a name and HTTPS"), "the other fix")
	check(t, tb.Expect.Locator(page).ToContainText("A headless home server"), "the README section")
	check(t, tb.Expect.Locator(pageButton(tb.Page, "Register passkey")).ToHaveCount(0), "nothing to press there")
	tb.Screenshot("wrong-address")

	// At a host Maven answers, over http where its origin is https: the page says why before
	// anything is pressed.
	addAuthenticator(t, tb.Page, passkey())
	u, err := url.Parse(link)
	check(t, err, "parse the setup link")
	tb.Goto("http://localhost:" + port + "/setup?" + u.RawQuery)
	box := tb.Page.Locator("#origin-check")
	check(t, tb.Expect.Locator(box).ToBeVisible(), "the origin check is shown")
	check(t, tb.Expect.Locator(box.Locator(`[data-why="origin"]`)).ToContainText("This page is at http://localhost:"+port+", but Maven is configured for https://localhost:"+port), "it says why")
	check(t, tb.Expect.Locator(box.Locator(`[data-why="insecure"]`)).ToBeHidden(), "and only that reason")
	tb.Screenshot("origin-mismatch")
	checkAxe(t, tb, "setup with the origin check shown")

	// The start-up log warned, and named the origin to open.
	log := m.Log()
	for _, want := range []string{"only origins are on localhost", "ssh -L " + port + ":localhost:" + port, `url=https://localhost:` + port + `/`, "config read"} {
		if !strings.Contains(log, want) {
			t.Errorf("the start-up log lacks %q", want)
		}
	}
}
