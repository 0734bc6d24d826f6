package notify

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"maven/app/activity"
	"maven/app/reveal"
)

// Errors of the subscriptions.
var (
	// ErrNotFound means no subscription has that ID.
	ErrNotFound = errors.New("no such subscription")
	// ErrTooManySubscriptions means MaxSubscriptions browsers are subscribed already.
	ErrTooManySubscriptions = fmt.Errorf("at most %d browsers can be subscribed: remove one first", MaxSubscriptions)
	// ErrBadSubscription wraps what is wrong with a subscription a browser sent.
	ErrBadSubscription = errors.New("not a push subscription")
)

// Limits of a subscription: how many, and the size of an endpoint (a push service's URL, a few
// hundred bytes in practice).
const (
	MaxSubscriptions = 20
	maxEndpointLen   = 2048
)

// Subscription is one browser's push subscription (the Push API's PushSubscription).
type Subscription struct {
	ID       int64
	Endpoint string // the push service's URL for this browser
	// P256dh and Auth are the browser's keys for the payload's encryption (RFC 8291),
	// base64url without padding.
	P256dh, Auth string
	// Label names the browser and its system for the owner, from its User-Agent when it
	// subscribed ("Chrome on Android").
	Label     string
	CreatedAt time.Time
}

// Target names the subscription in a delivery: the browser and its push service, never the
// endpoint's path, which is the push service's name for this browser.
func (s Subscription) Target() string {
	host := "?"
	if u, err := url.Parse(s.Endpoint); err == nil {
		host = u.Host
	}
	return s.Label + " (" + host + ")"
}

// vapidSetting is the settings key of the VAPID key pair.
const vapidSetting = "webpush_vapid_keys"

// vapidKeys is the application server's key pair (RFC 8292), base64url without padding: the
// public key as an uncompressed P-256 point, the private key as its 32-byte scalar.
type vapidKeys struct {
	Public  string `json:"public"`
	Private string `json:"private"`
}

// loadKeys reads the VAPID key pair, or makes and stores one. Subscriptions are bound to the
// public key, so it is made once and kept.
func loadKeys(ctx context.Context, store Store) (vapidKeys, error) {
	raw, err := store.Setting(ctx, vapidSetting)
	if err != nil {
		return vapidKeys{}, fmt.Errorf("read the VAPID keys: %w", err)
	}
	var k vapidKeys
	if raw == "" {
		if k.Private, k.Public, err = webpush.GenerateVAPIDKeys(); err != nil {
			return vapidKeys{}, fmt.Errorf("make the VAPID keys: %w", err)
		}
		b, err := json.Marshal(k)
		if err != nil {
			return vapidKeys{}, err
		}
		if err := store.SetSetting(ctx, vapidSetting, string(b)); err != nil {
			return vapidKeys{}, fmt.Errorf("store the VAPID keys: %w", err)
		}
	} else if err := json.Unmarshal([]byte(raw), &k); err != nil {
		return vapidKeys{}, fmt.Errorf("the stored VAPID keys are corrupt: %w", err)
	}
	priv, err := base64.RawURLEncoding.DecodeString(k.Private)
	if err != nil {
		return vapidKeys{}, fmt.Errorf("the stored VAPID private key is corrupt: %w", err)
	}
	key, err := ecdh.P256().NewPrivateKey(priv)
	if err != nil {
		return vapidKeys{}, fmt.Errorf("the stored VAPID private key is corrupt: %w", err)
	}
	if base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()) != k.Public {
		return vapidKeys{}, errors.New("the stored VAPID public key is not the private key's")
	}
	return k, nil
}

// PublicKey is the VAPID public key a browser subscribes with (applicationServerKey),
// base64url.
func (d *Dispatcher) PublicKey() string { return d.push.keys.Public }

// Subscribe stores a browser's push subscription, as the Push API gives it: its endpoint and
// keys (base64url). userAgent names the browser for the owner. The same endpoint again
// replaces its keys. A subscription that is not one fails with ErrBadSubscription, saying why;
// one too many with ErrTooManySubscriptions.
func (d *Dispatcher) Subscribe(ctx context.Context, endpoint, p256dh, auth, userAgent string) (Subscription, error) {
	s, err := parseSubscription(endpoint, p256dh, auth)
	if err != nil {
		return Subscription{}, err
	}
	s.Label, s.CreatedAt = deviceLabel(userAgent), time.Now()
	if err := d.store.SaveSubscription(ctx, &s, MaxSubscriptions); err != nil {
		return Subscription{}, err
	}
	if err := d.activity.Append(ctx, activity.Event{Actor: "owner", Action: activity.ActionPushSubscribed,
		Detail: map[string]any{"target": s.Target()}}); err != nil {
		d.log.Error("notify: record a subscription", "err", err)
	}
	return s, nil
}

// parseSubscription checks what a browser sent: an https endpoint, a P-256 public key and a
// 16-byte authentication secret (RFC 8291).
func parseSubscription(endpoint, p256dh, auth string) (Subscription, error) {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrBadSubscription, why) }
	u, err := url.Parse(endpoint)
	switch {
	case len(endpoint) > maxEndpointLen:
		return Subscription{}, bad(fmt.Sprintf("the endpoint is longer than %d bytes", maxEndpointLen))
	case err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Opaque != "":
		return Subscription{}, bad("the endpoint is not a push service's https URL")
	}
	key, err := decodeKey(p256dh)
	if err != nil {
		return Subscription{}, bad("the p256dh key is not base64url")
	}
	if _, err := ecdh.P256().NewPublicKey(key); err != nil {
		return Subscription{}, bad("the p256dh key is not a P-256 public key")
	}
	secret, err := decodeKey(auth)
	if err != nil || len(secret) != 16 {
		return Subscription{}, bad("the auth secret is not 16 bytes of base64url")
	}
	enc := base64.RawURLEncoding
	return Subscription{Endpoint: endpoint, P256dh: enc.EncodeToString(key), Auth: enc.EncodeToString(secret)}, nil
}

// decodeKey reads base64url, padded or not, as browsers write a subscription's keys.
func decodeKey(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// Unsubscribe removes the subscription with id; ErrNotFound when there is none.
func (d *Dispatcher) Unsubscribe(ctx context.Context, id int64) error {
	subs, err := d.store.Subscriptions(ctx)
	if err != nil {
		return err
	}
	if err := d.store.DeleteSubscription(ctx, id); err != nil {
		return err
	}
	for _, s := range subs {
		if s.ID == id {
			if err := d.activity.Append(ctx, activity.Event{Actor: "owner", Action: activity.ActionPushUnsubscribed,
				Detail: map[string]any{"target": s.Target()}}); err != nil {
				d.log.Error("notify: record a removed subscription", "err", err)
			}
		}
	}
	return nil
}

// Subscriptions lists the subscribed browsers, oldest first.
func (d *Dispatcher) Subscriptions(ctx context.Context) ([]Subscription, error) {
	return d.store.Subscriptions(ctx)
}

// webPush sends to the push services, with the VAPID key pair parsed and checked once.
type webPush struct {
	keys    vapidKeys
	contact string // the VAPID subject, as webpush-go takes it
	ttl     int    // seconds
	client  *http.Client
}

// contact is the VAPID subject: the configured one, else the https form of the first https
// origin (else of the first origin), as webpush-go takes it: an https URL as it is, a mailto:
// address without its scheme, which webpush-go adds.
func contact(configured string, origins []string) string {
	if configured != "" {
		return strings.TrimPrefix(configured, "mailto:")
	}
	for _, o := range origins {
		if u, err := url.Parse(o); err == nil && u.Scheme == "https" && u.Host != "" {
			return "https://" + u.Host
		}
	}
	if len(origins) > 0 {
		if u, err := url.Parse(origins[0]); err == nil && u.Host != "" {
			return "https://" + u.Host
		}
	}
	return "https://localhost"
}

// pushTo sends msg to one browser. A push service that says the subscription ended (404, 410)
// has it removed.
func (d *Dispatcher) pushTo(ctx context.Context, s Subscription, msg message) error {
	p := d.push
	payload, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	host := hostOf(s.Endpoint)
	res, err := webpush.SendNotificationWithContext(ctx, payload,
		&webpush.Subscription{Endpoint: s.Endpoint, Keys: webpush.Keys{Auth: s.Auth, P256dh: s.P256dh}},
		&webpush.Options{HTTPClient: p.client, Subscriber: p.contact, VAPIDPublicKey: p.keys.Public,
			VAPIDPrivateKey: p.keys.Private, TTL: p.ttl, Urgency: webpush.UrgencyHigh})
	if err != nil {
		return unreachable("the push service at "+host, err)
	}
	defer drain(res.Body)
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		// The subscription ended (RFC 8030, section 7.3): the browser unsubscribed or its
		// permission was withdrawn. It never comes back.
		if err := d.store.DeleteSubscription(context.WithoutCancel(ctx), s.ID); err != nil && !errors.Is(err, ErrNotFound) {
			d.log.Error("notify: remove an ended subscription", "subscription", s.ID, "err", err)
		}
		return fmt.Errorf("the push service says this browser's subscription ended (%d), so it was removed: turn notifications on again in that browser", res.StatusCode)
	}
	why := refusal(res)
	if res.StatusCode == http.StatusForbidden && strings.Contains(why, "BadJwtToken") {
		why += `; Apple's push service wants a contact it can resolve: set notify.web_push.contact to "mailto:you@example.com"`
	}
	return fmt.Errorf("the push service at %s refused it: %s", host, why)
}

// hostOf is the host of a URL, for messages that must not show its path.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "?"
}

// unreachable is the error of a request that got no answer from what: without its URL, whose
// path may name a push subscription or an ntfy topic.
func unreachable(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("no answer from %s in time", what)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("could not reach %s: %s", what, err)
}

// refusal is a refused request's status and the start of its body, shown as one line.
func refusal(res *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
	why := res.Status
	if s := strings.TrimSpace(string(b)); s != "" {
		why += ": " + s
	}
	return cutLine(why, 200)
}

// cutLine shows text from outside Maven on one line, its hidden characters spelled out
// (docs/design.md#rule-25), cut to about limit bytes.
func cutLine(s string, limit int) string { return reveal.CutError(reveal.OneLine(s), limit) }

// drain reads what is left of a body, up to a limit, so the connection can be reused, and
// closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}

// deviceLabel names a browser and its system from its User-Agent, for the owner to tell the
// subscriptions apart ("Safari on iPhone"). It is only shown, never trusted.
func deviceLabel(ua string) string {
	browser := "A browser"
	for _, b := range []struct{ mark, name string }{
		{"Edg/", "Edge"}, {"Firefox/", "Firefox"}, {"FxiOS", "Firefox"}, {"CriOS", "Chrome"},
		{"Chrome/", "Chrome"}, {"Safari/", "Safari"},
	} {
		if strings.Contains(ua, b.mark) {
			browser = b.name
			break
		}
	}
	for _, s := range []struct{ mark, name string }{
		{"iPhone", "iPhone"}, {"iPad", "iPad"}, {"Android", "Android"}, {"Macintosh", "a Mac"},
		{"Windows", "Windows"}, {"CrOS", "ChromeOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, s.mark) {
			return browser + " on " + s.name
		}
	}
	return browser
}
