package e2e

import (
	"encoding/json"
	"testing"
)

// TestRemovingAPasskeySaysSo: the owner's phone registers a second passkey through a fresh setup
// link; on the laptop, Remove on the phone's passkey (its accessible name says which) asks for
// the laptop's passkey, and the list then says what was removed, with focus on that message.
func TestRemovingAPasskeySaysSo(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	laptop := newBrowser(t)
	registerOwner(t, m, laptop)

	var link struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(m.CLI("setup-link", "--json")), &link); err != nil || link.URL == "" {
		t.Fatalf("setup-link --json: %v", err)
	}
	phone := newBrowser(t, phone)
	addAuthenticator(t, phone.Page, passkey())
	phone.Goto(m.Rebase(link.URL))
	check(t, pageButton(phone.Page, "Register passkey").Click(), "register the phone's passkey")
	check(t, registered(phone, phone.Page.Locator(`nav[aria-label="Main"]`)), "the phone is signed in")

	// A new passkey ended the laptop's session: it signs in again.
	laptop.Goto(m.URL("/login"))
	check(t, pageButton(laptop.Page, "Sign in with passkey").Click(), "sign in again on the laptop")
	check(t, laptop.Expect.Page(laptop.Page).ToHaveURL(toolsURL), "signed in")
	laptop.Goto(m.URL("/passkeys"))
	remove := button(laptop.Page.Locator("#passkey-2"), "Remove")
	check(t, laptop.Expect.Locator(remove).ToHaveAccessibleName("Remove Passkey 2"), "Remove names the passkey")
	check(t, remove.Click(), "remove the phone's passkey")
	done := laptop.Page.Locator("#passkey-list [data-focus]")
	check(t, laptop.Expect.Locator(done).ToHaveText("“Passkey 2” is removed: it can no longer sign in or unlock."), "the list says what was removed")
	check(t, laptop.Expect.Locator(done).ToBeFocused(), "and focus is on it")
	check(t, laptop.Expect.Locator(laptop.Page.Locator("#passkey-2")).ToHaveCount(0), "the passkey is gone")
}
