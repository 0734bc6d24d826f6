package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/config"
	"maven/app/notify"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// Maven's origin in these tests, and the link of a pending call there.
const (
	origin = "https://maven.example"
	link   = origin + "/approvals/7"
)

// notice is a pending call of delete_task on the tasks server.
var notice = notify.Notice{Tool: "delete_task", Server: "tasks", Client: "Home Assistant", Link: link}

// fixture is a dispatcher over a real database, with a push service on loopback.
type fixture struct {
	t    testing.TB
	db   *bun.DB
	feed *activity.Log
	push *pushReceiver
}

func newFixture(t testing.TB) *fixture {
	bdb := testdb.Open(t)
	return &fixture{t: t, db: bdb, feed: activity.New(db.NewActivityStore(bdb), nil), push: newPushReceiver(t)}
}

// dispatcher is a new dispatcher of cfg over the fixture's database; its requests trust the
// loopback push service's certificate.
func (f *fixture) dispatcher(cfg config.Notify, timeout time.Duration) *notify.Dispatcher {
	f.t.Helper()
	d, err := notify.New(context.Background(), db.NewPushStore(f.db), notify.Options{
		Config: cfg, Origins: []string{"http://localhost:8080", origin}, Transport: f.push.srv.Client().Transport,
		Timeout: timeout, Activity: f.feed,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// subscribe subscribes a new browser at path, as the browser's page would.
func (f *fixture) subscribe(d *notify.Dispatcher, path string) pushBrowser {
	f.t.Helper()
	b, endpoint := f.push.browser(f.t, path)
	p256dh, auth := b.keys()
	if _, err := d.Subscribe(context.Background(), endpoint, p256dh, auth,
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36"); err != nil {
		f.t.Fatal(err)
	}
	return b
}

// feedOf lists the feed's entries of action, oldest first.
func (f *fixture) feedOf(action string) []activity.Entry {
	f.t.Helper()
	page, err := f.feed.Query(context.Background(), activity.Filter{Action: action})
	if err != nil {
		f.t.Fatal(err)
	}
	slices.Reverse(page.Entries)
	return page.Entries
}

func detail(t testing.TB, e activity.Entry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Detail, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWebPushCarriesTheToolAndTheLinkAndNothingThatApproves: what a push service gets is
// encrypted to the browser (RFC 8291) and signed with Maven's VAPID key (RFC 8292), and once
// the browser decrypts it, it is the tool's name, its server and the link, and nothing else:
// no token, no step-up material, no argument (docs/design.md#rule-30).
func TestWebPushCarriesTheToolAndTheLinkAndNothingThatApproves(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(config.Notify{WebPush: config.WebPush{Contact: "mailto:owner@example.com"}}, 0)
	f.subscribe(d, "/push/phone")

	got := d.Notify(context.Background(), notice)
	want := []notify.Delivery{{Notifier: notify.NotifierWebPush, Target: "Chrome on Android (" + strings.TrimPrefix(f.push.srv.URL, "https://") + ")", OK: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("deliveries (-want +got):\n%s", diff)
	}
	req := <-f.push.got
	if req.err != nil {
		t.Fatalf("the push service would refuse it: %v", req.err)
	}
	if req.contentEncoding != "aes128gcm" || req.ttl != "300" || req.urgency != "high" {
		t.Errorf("headers: Content-Encoding %q, TTL %q, Urgency %q", req.contentEncoding, req.ttl, req.urgency)
	}
	if req.vapid.Aud != f.push.srv.URL || req.vapid.Sub != "mailto:owner@example.com" ||
		time.Until(time.Unix(req.vapid.Exp, 0)) > 24*time.Hour {
		t.Errorf("VAPID claims %+v: want aud %s, the contact as sub, and an expiry within a day", req.vapid, f.push.srv.URL)
	}
	var payload map[string]string
	if err := json.Unmarshal(req.payload, &payload); err != nil {
		t.Fatalf("payload %q: %v", req.payload, err)
	}
	wantPayload := map[string]string{"title": "Maven: approval needed", "body": "delete_task on tasks waits for your approval", "url": link}
	if diff := cmp.Diff(wantPayload, payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	// The feed records the delivery, naming the browser and nothing secret.
	entries := f.feedOf(activity.ActionNotified)
	if len(entries) != 1 || entries[0].Tool != "delete_task" {
		t.Fatalf("feed %+v", entries)
	}
	if m := detail(t, entries[0]); m["notifier"] != "webpush" || m["target"] != want[0].Target || m["link"] != link || m["client"] != "Home Assistant" {
		t.Errorf("detail %v", m)
	}
	if strings.Contains(string(entries[0].Detail), "/push/phone") {
		t.Errorf("the feed shows the endpoint's path, the push service's name for the browser: %s", entries[0].Detail)
	}
}

// TestAnEndedSubscriptionIsDropped: a push service that answers 410 (or 404) ended the
// subscription, which is removed, and the delivery says so; one that fails otherwise keeps it.
func TestAnEndedSubscriptionIsDropped(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(config.Notify{}, 0)
	f.subscribe(d, "/push/gone")
	f.subscribe(d, "/push/busy")
	f.subscribe(d, "/push/lost")
	f.push.answer("/push/gone", http.StatusGone)
	f.push.answer("/push/busy", http.StatusServiceUnavailable)
	f.push.answer("/push/lost", http.StatusNotFound)

	got := d.Notify(context.Background(), notice)
	if len(got) != 3 || got[0].OK || got[1].OK || got[2].OK {
		t.Fatalf("deliveries %+v", got)
	}
	for _, i := range []int{0, 2} {
		if !strings.Contains(got[i].Err, "subscription ended") || !strings.Contains(got[i].Err, "removed") {
			t.Errorf("delivery %d: %q", i, got[i].Err)
		}
	}
	if !strings.Contains(got[1].Err, "refused it: 503 Service Unavailable") {
		t.Errorf("delivery 1: %q", got[1].Err)
	}
	left, err := d.Subscriptions(context.Background())
	if err != nil || len(left) != 1 || !strings.HasSuffix(left[0].Endpoint, "/push/busy") {
		t.Fatalf("subscriptions left %+v %v: want only the busy one", left, err)
	}
	if n := len(f.feedOf(activity.ActionNotifyFailed)); n != 3 {
		t.Errorf("%d failed deliveries in the feed, want 3", n)
	}
}

// TestNtfyGetsAViewActionToThePage: ntfy is published to in its documented JSON form
// (docs.ntfy.sh, "Publish as JSON": POST to the server's root, the topic in the body) with a
// click and one view action, both the approval page: never an http action, which could act.
func TestNtfyGetsAViewActionToThePage(t *testing.T) {
	f := newFixture(t)
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","event":"message","topic":"maven-a1b2"}`)
	}))
	t.Cleanup(ntfy.Close)
	// Behind a proxy, below a path: JSON goes to that path's root.
	d := f.dispatcher(config.Notify{Ntfy: ntfy.URL + "/ntfy/maven-a1b2"}, 0)

	deliveries := d.Notify(context.Background(), notice)
	want := []notify.Delivery{{Notifier: notify.NotifierNtfy, Target: strings.TrimPrefix(ntfy.URL, "http://") + "/ntfy", OK: true}}
	if diff := cmp.Diff(want, deliveries); diff != "" {
		t.Fatalf("deliveries (-want +got):\n%s", diff)
	}
	r := <-got
	if r.Method != http.MethodPost || r.URL.Path != "/ntfy/" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s, Content-Type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	var body map[string]any
	if err := json.Unmarshal(<-bodies, &body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{
		"topic": "maven-a1b2", "title": "Maven: approval needed", "message": "delete_task on tasks waits for your approval",
		"click": link, "priority": 4.0,
		"actions": []any{map[string]any{"action": "view", "label": "Open", "url": link, "clear": true}},
	}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if strings.Contains(string(f.feedOf(activity.ActionNotified)[0].Detail), "maven-a1b2") {
		t.Error("the feed shows the topic, which anyone who knows it can read")
	}
}

// haReceiver is Home Assistant's REST API on loopback: it records each call of a service and
// answers with status.
type haReceiver struct {
	srv    *httptest.Server
	calls  chan haCall
	status int
}

type haCall struct {
	path, auth, contentType string
	body                    map[string]any
}

func newHAReceiver(t testing.TB, status int) *haReceiver {
	h := &haReceiver{calls: make(chan haCall, 10), status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := haCall{path: r.URL.Path, auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type")}
		json.NewDecoder(r.Body).Decode(&c.body)
		h.calls <- c
		w.WriteHeader(h.status)
		io.WriteString(w, `[]`)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// secrets is a vault's lookup over values, handing out copies as the vault does.
func secrets(values map[string]string) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		v, ok := values[name]
		return []byte(v), ok
	}
}

// TestHomeAssistantGetsAURIActionToThePage: Home Assistant's notify service is called through
// its REST API with the token from the vault, and the companion app's fields for a link: a tap
// (data.url, data.clickAction) and a URI action both open the approval page. A locked daemon
// sends nothing, and the delivery says why.
func TestHomeAssistantGetsAURIActionToThePage(t *testing.T) {
	f := newFixture(t)
	ha := newHAReceiver(t, http.StatusOK)
	d := f.dispatcher(config.Notify{HomeAssistant: &config.HomeAssistant{URL: ha.srv.URL, Token: "${secret:ha_token}",
		Service: "notify.mobile_app_pixel_8"}}, 0)
	target := "notify.mobile_app_pixel_8 at " + strings.TrimPrefix(ha.srv.URL, "http://")

	// Locked: nothing is sent.
	got := d.Notify(context.Background(), notice)
	if len(got) != 1 || got[0].OK || got[0].Target != target || !strings.Contains(got[0].Err, "Maven is locked") {
		t.Fatalf("while locked: %+v", got)
	}
	d.SetSecrets(secrets(map[string]string{}))
	if got := d.Notify(context.Background(), notice); got[0].OK || !strings.Contains(got[0].Err, `secret "ha_token" is not set: set it on /secrets`) {
		t.Fatalf("without the secret: %+v", got)
	}
	select {
	case c := <-ha.calls:
		t.Fatalf("Home Assistant was called without the token: %+v", c)
	default:
	}

	d.SetSecrets(secrets(map[string]string{"ha_token": "llat-123"}))
	got = d.Notify(context.Background(), notice)
	if diff := cmp.Diff([]notify.Delivery{{Notifier: notify.NotifierHomeAssistant, Target: target, OK: true}}, got); diff != "" {
		t.Fatalf("deliveries (-want +got):\n%s", diff)
	}
	c := <-ha.calls
	if c.path != "/api/services/notify/mobile_app_pixel_8" || c.auth != "Bearer llat-123" || c.contentType != "application/json" {
		t.Errorf("call %s, Authorization %q, Content-Type %q", c.path, c.auth, c.contentType)
	}
	wantBody := map[string]any{
		"title": "Maven: approval needed", "message": "delete_task on tasks waits for your approval",
		"data": map[string]any{"url": link, "clickAction": link,
			"actions": []any{map[string]any{"action": "URI", "title": "Open", "uri": link}}},
	}
	if diff := cmp.Diff(wantBody, c.body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	for _, e := range append(f.feedOf(activity.ActionNotified), f.feedOf(activity.ActionNotifyFailed)...) {
		if strings.Contains(string(e.Detail), "llat-123") {
			t.Errorf("the feed holds the token: %s", e.Detail)
		}
	}

	// A token Home Assistant refuses says what to do.
	ha.status = http.StatusUnauthorized
	if got := d.Notify(context.Background(), notice); got[0].OK || !strings.Contains(got[0].Err, "make a new long-lived access token") {
		t.Errorf("refused token: %+v", got)
	}
}

// TestAHangingNotifierCannotHoldTheNotice: a notifier that never answers is a failed delivery
// once the dispatcher's timeout passes, and the others are delivered all the same.
func TestAHangingNotifierCannotHoldTheNotice(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	hung := make(chan struct{}, 1)
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ntfy.Close)
	t.Cleanup(func() { close(release) })
	d := f.dispatcher(config.Notify{Ntfy: ntfy.URL + "/maven"}, 300*time.Millisecond)
	f.subscribe(d, "/push/phone")

	got := d.Notify(context.Background(), notice)
	if len(got) != 2 || !got[0].OK || got[1].OK || got[1].Notifier != notify.NotifierNtfy || got[1].Err != "no answer within 300ms" {
		t.Fatalf("deliveries %+v", got)
	}
	<-hung
	if req := <-f.push.got; req.err != nil {
		t.Fatalf("push: %v", req.err)
	}
}

// TestWithoutAnyNotifierTheNoticeIsAFailedDelivery: no browser subscribed and nothing else
// configured is one failed delivery that says what to do; with ntfy configured, the missing
// subscriptions are not a failure of their own.
func TestWithoutAnyNotifierTheNoticeIsAFailedDelivery(t *testing.T) {
	f := newFixture(t)
	got := f.dispatcher(config.Notify{}, 0).Notify(context.Background(), notice)
	if len(got) != 1 || got[0].OK || got[0].Notifier != notify.NotifierWebPush || !strings.Contains(got[0].Err, "no browser is subscribed") {
		t.Fatalf("deliveries %+v", got)
	}
	if n := len(f.feedOf(activity.ActionNotifyFailed)); n != 1 {
		t.Errorf("%d failed deliveries recorded, want 1", n)
	}
	ntfy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(ntfy.Close)
	got = f.dispatcher(config.Notify{Ntfy: ntfy.URL + "/maven"}, 0).Notify(context.Background(), notice)
	if len(got) != 1 || !got[0].OK || got[0].Notifier != notify.NotifierNtfy {
		t.Fatalf("with ntfy: %+v", got)
	}
}

// TestALinkAtNoOriginIsNeverSent: a notice whose link is not at one of Maven's origins reaches
// no notifier.
func TestALinkAtNoOriginIsNeverSent(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(config.Notify{}, 0)
	f.subscribe(d, "/push/phone")
	for _, l := range []string{"https://evil.example/approvals/7", "https://owner@maven.example/approvals/7", "/approvals/7", ""} {
		n := notice
		n.Link = l
		if got := d.Notify(context.Background(), n); len(got) != 1 || got[0].OK || !strings.Contains(got[0].Err, "not at one of Maven's addresses") {
			t.Errorf("link %q: %+v", l, got)
		}
	}
	// Both schemes' origins are Maven's.
	n := notice
	n.Link = "http://localhost:8080/approvals/7"
	if got := d.Notify(context.Background(), n); len(got) != 1 || !got[0].OK {
		t.Errorf("at the http origin: %+v", got)
	}
	if req := <-f.push.got; req.err != nil || !strings.Contains(string(req.payload), n.Link) {
		t.Errorf("the one sent: %+v", req)
	}
	select {
	case req := <-f.push.got:
		t.Errorf("a link at no origin was sent: %s", req.payload)
	default:
	}
}

// TestSubscribeRefusesWhatIsNotASubscription: a subscription must be an https endpoint with a
// P-256 key and a 16-byte secret; the same endpoint again replaces its keys; at most
// MaxSubscriptions browsers, and the one too many is refused, changing nothing.
func TestSubscribeRefusesWhatIsNotASubscription(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(config.Notify{}, 0)
	b := newPushBrowser(t)
	p256dh, auth := b.keys()
	ctx := context.Background()
	for _, c := range []struct{ endpoint, p256dh, auth, want string }{
		{"http://push.example/x", p256dh, auth, "not a push service's https URL"},
		{"https:///x", p256dh, auth, "not a push service's https URL"},
		{"https://push.example/" + strings.Repeat("a", 2048), p256dh, auth, "longer than 2048 bytes"},
		{"https://push.example/x", "not base64!", auth, "p256dh key is not base64url"},
		{"https://push.example/x", auth, auth, "not a P-256 public key"},
		{"https://push.example/x", p256dh, p256dh, "auth secret is not 16 bytes"},
	} {
		_, err := d.Subscribe(ctx, c.endpoint, c.p256dh, c.auth, "")
		if !errors.Is(err, notify.ErrBadSubscription) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s: %v, want %q", c.endpoint, err, c.want)
		}
	}
	first, err := d.Subscribe(ctx, "https://push.example/x", p256dh+"==", auth, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1")
	if err != nil || first.Label != "Safari on iPhone" || first.P256dh != p256dh {
		t.Fatalf("subscribe: %+v %v", first, err)
	}
	other := newPushBrowser(t)
	p2, a2 := other.keys()
	again, err := d.Subscribe(ctx, "https://push.example/x", p2, a2, "")
	if err != nil || again.ID != first.ID {
		t.Fatalf("the same endpoint again: %+v %v", again, err)
	}
	for i := 1; i < notify.MaxSubscriptions; i++ {
		if _, err := d.Subscribe(ctx, "https://push.example/"+strings.Repeat("y", i), p256dh, auth, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Subscribe(ctx, "https://push.example/one-too-many", p256dh, auth, ""); !errors.Is(err, notify.ErrTooManySubscriptions) {
		t.Fatalf("one too many: %v", err)
	}
	subs, err := d.Subscriptions(ctx)
	if err != nil || len(subs) != notify.MaxSubscriptions || subs[0].P256dh != p2 {
		t.Fatalf("%d subscriptions, the first's key replaced: %v", len(subs), err)
	}
	if err := d.Unsubscribe(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.Unsubscribe(ctx, first.ID); !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("removed twice: %v", err)
	}
	if n, m := len(f.feedOf(activity.ActionPushSubscribed)), len(f.feedOf(activity.ActionPushUnsubscribed)); n != notify.MaxSubscriptions+1 || m != 1 {
		t.Errorf("feed: %d subscribed, %d removed", n, m)
	}
}

// TestTheVAPIDKeysAreMadeOnceAndKept: the first start makes the key pair, every later start
// reads the same one (subscriptions are bound to it), and a damaged one stops the start.
func TestTheVAPIDKeysAreMadeOnceAndKept(t *testing.T) {
	f := newFixture(t)
	first := f.dispatcher(config.Notify{}, 0).PublicKey()
	if again := f.dispatcher(config.Notify{}, 0).PublicKey(); again != first || len(first) != 87 {
		t.Fatalf("public keys %q and %q", first, again)
	}
	store := db.NewPushStore(f.db)
	if err := store.SetSetting(context.Background(), "webpush_vapid_keys", `{"public": "`+first+`", "private": "AAAA"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := notify.New(context.Background(), store, notify.Options{Activity: f.feed}); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("damaged keys: %v", err)
	}
}

// TestTestNotification: "Send a test" goes through every notifier with the test's words and a
// link to Maven at its https origin (not the first origin, http at localhost, which a phone
// cannot reach), recorded as the owner's.
func TestTestNotification(t *testing.T) {
	f := newFixture(t)
	d := f.dispatcher(config.Notify{}, 0)
	f.subscribe(d, "/push/phone")
	if got := d.Test(context.Background()); len(got) != 1 || !got[0].OK {
		t.Fatalf("deliveries %+v", got)
	}
	req := <-f.push.got
	if req.err != nil || !strings.Contains(string(req.payload), `"title":"Maven: a test"`) || !strings.Contains(string(req.payload), `"url":"https://maven.example/"`) {
		t.Fatalf("payload %s (%v)", req.payload, req.err)
	}
	if e := f.feedOf(activity.ActionNotified); len(e) != 1 || e[0].Actor != "owner" {
		t.Errorf("feed %+v", e)
	}
}

// BenchmarkNotify measures a notice to one subscribed browser on loopback, from Notify to the
// push service's answer: the bench target is a push request sent within 100 ms (median) of a
// pending call's creation.
func BenchmarkNotify(b *testing.B) {
	f := newFixture(b)
	d := f.dispatcher(config.Notify{}, 0)
	f.subscribe(d, "/push/phone")
	for b.Loop() {
		if got := d.Notify(context.Background(), notice); !got[0].OK {
			b.Fatal(got)
		}
		<-f.push.got
	}
}
