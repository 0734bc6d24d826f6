package e2e

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// TestTheNotificationsCard: on a phone, /passkeys has the notifications card, the service
// worker registers with the root as its scope, and the card offers to turn notifications on.
// Headless Chromium cannot subscribe to a real push service, so a subscription is posted from
// the page as push.js posts one (push is tested from the server's side, docs/peers.md#notifiers):
// the card lists it, Send a test says what it did, the card is axe-clean, and Remove removes it.
func TestTheNotificationsCard(t *testing.T) {
	t.Parallel()
	m := startMaven(t, mavenOptions{})
	owner := newBrowser(t, phone.inDark())
	registerOwner(t, m, owner)
	owner.Goto(m.URL("/passkeys"))
	card := owner.Page.Locator("#push")
	check(t, owner.Expect.Locator(card.Locator("h2")).ToHaveText("Notifications"), "the notifications card")

	var reg struct {
		Scope  string `json:"scope"`
		Script string `json:"script"`
	}
	evalJSON(t, owner.Page, `async () => {
		const r = await Promise.race([navigator.serviceWorker.ready,
			new Promise((_, reject) => setTimeout(() => reject(new Error("no service worker within 10 s")), 10000))]);
		return {scope: r.scope, script: r.active ? r.active.scriptURL : ""};
	}`, nil, &reg)
	if reg.Scope != m.URL("/") || reg.Script != m.URL("/sw.js") {
		t.Fatalf("service worker %+v: want the scope %s and the script %s", reg, m.URL("/"), m.URL("/sw.js"))
	}
	check(t, owner.Expect.Locator(button(card, "Turn on notifications in this browser")).ToBeVisible(), "turning them on is offered")
	check(t, owner.Expect.Locator(card.Locator("[data-push-state]")).ToHaveText("This browser does not get notifications."), "and it says why")

	// A subscription at a push service that refuses connections.
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	check(t, err, "a browser's key")
	secret := make([]byte, 16)
	rand.Read(secret)
	res := postFrom(t, owner, "/push/subscribe", map[string]any{"endpoint": "https://127.0.0.1:9/push/phone",
		"p256dh": base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()), "auth": base64.RawURLEncoding.EncodeToString(secret)})
	if res.Type != "opaqueredirect" {
		t.Fatalf("subscribe: %+v, want the redirect to the card", res)
	}
	owner.Goto(m.URL("/passkeys"))
	check(t, owner.Expect.Locator(card.Locator("[data-push-browser]")).ToHaveCount(1), "the browser is listed")
	check(t, owner.Expect.Locator(card.Locator("[data-this-browser]")).ToBeHidden(), "not as this browser, which holds no subscription")
	check(t, button(card, "Send a test").Click(), "send a test")
	check(t, owner.Expect.Locator(card.Locator("[data-focus]")).ToHaveText("The test reached nothing: each line below says why."), "the card says what the test did")
	check(t, owner.Expect.Locator(card.Locator("[data-focus]")).ToBeFocused(), "with focus on it")
	check(t, owner.Expect.Locator(card.Locator(".deliveries li")).ToContainText("could not reach the push service at 127.0.0.1:9"), "and why")
	checkAxe(t, owner, "phone notifications card, a test that reached nothing")

	check(t, button(card.Locator("[data-push-browser]"), "Remove").Click(), "remove the browser")
	check(t, owner.Expect.Locator(card.Locator(".empty")).ToHaveText("No browser is subscribed yet."), "it is gone")
	check(t, owner.Expect.Locator(button(card, "Turn on notifications in this browser")).ToBeVisible(), "and turning them on is offered again")
}
