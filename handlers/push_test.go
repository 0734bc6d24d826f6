package handlers_test

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"maven/app/auth/authtest"
)

// pushService is a push service on loopback that takes every notification; it counts them.
func pushService(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var got atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// subscription is a browser's push subscription to endpoint, as push.js posts it.
func subscription(t *testing.T, endpoint string) url.Values {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	enc := base64.RawURLEncoding
	return url.Values{"endpoint": {endpoint}, "p256dh": {enc.EncodeToString(key.PublicKey().Bytes())}, "auth": {enc.EncodeToString(auth)}}
}

// TestTheNotificationsCard: the owner's browser subscribes to Web Push from the card on
// /approvals, where the notices lead, sends a test that reaches it, and removes it; nobody else can subscribe a browser,
// a stranger's page cannot either (cross-origin protection), and what is not a subscription
// changes nothing.
func TestTheNotificationsCard(t *testing.T) {
	f := newFixture(t)
	push, got := pushService(t)
	f.pushTransport = push.Client().Transport
	f.boot()
	owner := f.signUp(authtest.New(testOrigin))
	ctx := context.Background()

	page := owner.get("/approvals").Body.String()
	if !strings.Contains(page, `id="push"`) || !strings.Contains(page, `data-vapid-key="`+f.notify.PublicKey()+`"`) ||
		!strings.Contains(page, "No browser is subscribed yet.") {
		t.Fatalf("/approvals has no notifications card:\n%s", page)
	}
	sub := subscription(t, push.URL+"/push/phone")

	// Nobody else: a signed-out browser, and the owner's session from another site.
	if r := f.browser().htmx(http.MethodPost, "/push/subscribe", sub); r.Code == http.StatusOK {
		t.Errorf("a signed-out browser subscribed: %d", r.Code)
	}
	owner.siteHeader, owner.origin = "cross-site", "https://evil.example"
	if r := owner.htmx(http.MethodPost, "/push/subscribe", sub); r.Code != http.StatusForbidden {
		t.Errorf("a cross-origin subscribe: %d", r.Code)
	}
	owner.siteHeader, owner.origin = "same-origin", testOrigin
	bad := subscription(t, "http://push.example/not-https")
	if r := owner.htmx(http.MethodPost, "/push/subscribe", bad); r.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body.String(), "push subscription Maven cannot use") {
		t.Errorf("what is not a subscription: %d %s", r.Code, r.Body.String())
	}
	if subs, err := f.notify.Subscriptions(ctx); err != nil || len(subs) != 0 {
		t.Fatalf("subscriptions after the refusals: %+v %v", subs, err)
	}

	r := owner.do(http.MethodPost, "/push/subscribe", strings.NewReader(sub.Encode()), http.Header{
		"Hx-Request": {"true"}, "Content-Type": {"application/x-www-form-urlencoded"},
		"User-Agent": {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"},
	})
	sum := sha256.Sum256([]byte(sub.Get("endpoint")))
	if body := r.Body.String(); r.Code != http.StatusOK || !strings.Contains(body, "Notifications are on in Safari on iPhone.") ||
		!strings.Contains(body, `data-endpoint-hash="`+hex.EncodeToString(sum[:8])+`"`) || strings.Contains(body, "/push/phone") {
		t.Fatalf("subscribe: %d\n%s", r.Code, body)
	}

	r = owner.htmx(http.MethodPost, "/push/test", url.Values{})
	if body := r.Body.String(); r.Code != http.StatusOK || !strings.Contains(body, "A test went to 1 of 1.") ||
		!strings.Contains(body, "<strong>Web Push</strong> · Safari on iPhone") || got.Load() != 1 {
		t.Fatalf("test: %d, %d notifications\n%s", r.Code, got.Load(), body)
	}
	if feed := owner.get("/activity").Body.String(); !strings.Contains(feed, "Notified") || !strings.Contains(feed, "Web Push") {
		t.Errorf("the feed does not show the test's delivery:\n%s", feed)
	}

	subs, err := f.notify.Subscriptions(ctx)
	if err != nil || len(subs) != 1 {
		t.Fatalf("subscriptions %+v %v", subs, err)
	}
	id := url.Values{"id": {fmt.Sprint(subs[0].ID)}}
	if r := owner.htmx(http.MethodPost, "/push/unsubscribe", id); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "No browser is subscribed yet.") {
		t.Fatalf("remove: %d %s", r.Code, r.Body.String())
	}
	if r := owner.htmx(http.MethodPost, "/push/unsubscribe", id); r.Code != http.StatusNotFound {
		t.Errorf("removed twice: %d", r.Code)
	}
	// Without htmx, a form's answer is the page holding the card.
	r = owner.do(http.MethodPost, "/push/test", strings.NewReader(""), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/approvals#push" {
		t.Errorf("a plain form: %d %v", r.Code, r.Header())
	}
}

// TestTheServiceWorkerAndTheManifest: the service worker is served at the root, where its
// scope covers every page, as JavaScript under the same Content-Security-Policy as every
// page; the manifest is a web app manifest whose icons are served at the sizes it says, and
// every page links it and the home-screen icon iOS uses.
func TestTheServiceWorkerAndTheManifest(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	sw := b.get("/sw.js")
	if h := sw.Header(); sw.Code != http.StatusOK || h.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		h.Get("Content-Security-Policy") != wantCSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("/sw.js: %d %v", sw.Code, h)
	}
	if body := sw.Body.String(); !strings.Contains(body, "showNotification") || !strings.Contains(body, "notificationclick") {
		t.Errorf("/sw.js is not the service worker:\n%s", body)
	}

	m := b.get("/manifest.webmanifest")
	if m.Code != http.StatusOK || m.Header().Get("Content-Type") != "application/manifest+json" || m.Header().Get("Content-Security-Policy") != wantCSP {
		t.Fatalf("/manifest.webmanifest: %d %v", m.Code, m.Header())
	}
	var manifest struct {
		Name, StartURL, Scope, Display string
		Icons                          []struct{ Src, Sizes, Type string }
	}
	if err := json.Unmarshal(bytes.ReplaceAll(m.Body.Bytes(), []byte("_url"), []byte("url")), &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Name != "Maven" || manifest.StartURL != "/approvals" || manifest.Scope != "/" || manifest.Display != "standalone" || len(manifest.Icons) < 2 {
		t.Fatalf("manifest %+v", manifest)
	}
	pngs := 0
	for _, icon := range manifest.Icons {
		r := b.get(icon.Src)
		if r.Code != http.StatusOK || r.Header().Get("Content-Type") != icon.Type {
			t.Errorf("icon %s: %d %q, want %s", icon.Src, r.Code, r.Header().Get("Content-Type"), icon.Type)
			continue
		}
		if icon.Type != "image/png" {
			continue
		}
		pngs++
		img, err := png.DecodeConfig(r.Body)
		if err != nil || fmt.Sprintf("%dx%d", img.Width, img.Height) != icon.Sizes {
			t.Errorf("icon %s is %dx%d (%v), the manifest says %s", icon.Src, img.Width, img.Height, err, icon.Sizes)
		}
	}
	if pngs < 2 {
		t.Errorf("%d PNG icons: Chrome wants 192 and 512 px ones", pngs)
	}

	page := b.get("/login").Body.String()
	if !strings.Contains(page, `<link rel="manifest" href="/manifest.webmanifest">`) {
		t.Error("pages do not link the manifest")
	}
	i := strings.Index(page, `<link rel="apple-touch-icon" href="`)
	if i < 0 {
		t.Fatal("pages do not link the apple-touch-icon")
	}
	href := page[i+len(`<link rel="apple-touch-icon" href="`):]
	href = strings.ReplaceAll(href[:strings.IndexByte(href, '"')], "&amp;", "&")
	r := b.get(href)
	if img, err := png.DecodeConfig(r.Body); err != nil || img.Width != 180 || img.Height != 180 {
		t.Errorf("the apple-touch-icon %s: %dx%d %v, want 180x180", href, img.Width, img.Height, err)
	}
}
