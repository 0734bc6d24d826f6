package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"maven/app/activity"
	"maven/app/config"
	"maven/app/reveal"
	"maven/internal/enum"
)

// Notice is what the owner is told of one pending call. It carries the tool's name and the
// link to its approval page, never a capability: the page needs the owner's session, and
// Approve is a passkey step-up (docs/design.md#rule-30).
type Notice struct {
	Tool   string // the row's local name, as the owner sees it on /tools
	Server string // the MCP server (empty for a local command)
	Client string // the agent's client name, or "voice"; recorded, not sent
	// Link is the absolute URL of /approvals/ID at the owner's first https origin (else the
	// first origin). A link at no configured origin is never sent.
	Link string
}

// Delivery is what one notifier did with one notice.
type Delivery struct {
	Notifier Notifier
	Target   string // which subscription or server, shown to the owner (never a secret)
	OK       bool
	Err      string // why not, in words the owner can act on
}

// Notifier is one way of telling the owner; the values are recorded in the activity feed.
type Notifier string

// The notifiers.
const (
	NotifierWebPush       Notifier = "webpush"
	NotifierNtfy          Notifier = "ntfy"
	NotifierHomeAssistant Notifier = "home_assistant"
)

// notifiers is every notifier, in the order a notice's deliveries list them, with its name for
// the owner; TestEveryNotifierHasItsWords fails on one without (docs/style.md#enumerations).
var notifiers = enum.Table[Notifier, string]{
	{Member: NotifierWebPush, Said: "Web Push"},
	{Member: NotifierNtfy, Said: "ntfy"},
	{Member: NotifierHomeAssistant, Said: "Home Assistant"},
}

// Notifiers returns every notifier, in the order a notice's deliveries list them.
func Notifiers() []Notifier { return notifiers.Members() }

// Words is the notifier's name for the owner ("Web Push"), or its value for one that is not a
// notifier (read from an older feed).
func (n Notifier) Words() string {
	if words, ok := notifiers.Of(n); ok {
		return words
	}
	return string(n)
}

// Defaults of Options.
const (
	DefaultTimeout = 5 * time.Second
	DefaultTTL     = 5 * time.Minute
)

// Store keeps the VAPID keys (as a setting) and the browsers' push subscriptions. db
// implements it.
type Store interface {
	// Setting returns "" when the key was never set.
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
	// SaveSubscription stores s, replacing the subscription with the same endpoint (keeping its
	// ID), and sets s.ID. It fails with ErrTooManySubscriptions when s is new and limit
	// subscriptions are stored already.
	SaveSubscription(ctx context.Context, s *Subscription, limit int) error
	// Subscriptions returns every subscription, oldest first.
	Subscriptions(ctx context.Context) ([]Subscription, error)
	// DeleteSubscription removes the subscription with id; it fails with ErrNotFound when there
	// is none.
	DeleteSubscription(ctx context.Context, id int64) error
}

// Activity records what was delivered; *activity.Log implements it.
type Activity interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Options configure a Dispatcher.
type Options struct {
	// Config is the notify block: ntfy and Home Assistant, Web Push's contact.
	Config config.Notify
	// Origins are Maven's browser origins: a notice's link must be at one of them, and Web
	// Push's contact is the first https one unless the config names one.
	Origins []string
	// Transport carries the requests to push services and ntfy (http.DefaultTransport).
	Transport http.RoundTripper
	// CredentialTransport carries the requests that hold a credential, Home Assistant's token
	// (Transport): the daemon's is emptied by a lock.
	CredentialTransport http.RoundTripper
	// Timeout bounds one notice, every notifier at once (DefaultTimeout).
	Timeout time.Duration
	// TTL is how long a push service keeps a notification for a device that is offline
	// (DefaultTTL, the default approval_ttl: past it the approval has expired).
	TTL time.Duration
	// Activity records each delivery; required.
	Activity Activity
	Logger   *slog.Logger // nil discards
}

// Dispatcher sends notices through every notifier configured and keeps the Web Push
// subscriptions. It is safe for concurrent use.
type Dispatcher struct {
	store    Store
	activity Activity
	log      *slog.Logger
	timeout  time.Duration
	origins  []string
	push     *webPush
	ntfy     *ntfy          // nil when not configured
	ha       *homeAssistant // nil when not configured

	mu      sync.Mutex
	secrets func(name string) ([]byte, bool) // nil while locked
}

// New returns the dispatcher over store, loading the VAPID keys, or making and storing them
// at the first start.
func New(ctx context.Context, store Store, opts Options) (*Dispatcher, error) {
	if opts.Activity == nil {
		return nil, errors.New("notify: New needs an Activity")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.CredentialTransport == nil {
		opts.CredentialTransport = opts.Transport
	}
	keys, err := loadKeys(ctx, store)
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{store: store, activity: opts.Activity, log: opts.Logger, timeout: opts.Timeout,
		origins: opts.Origins}
	d.push = &webPush{keys: keys, contact: contact(opts.Config.WebPush.Contact, opts.Origins),
		ttl: int(opts.TTL / time.Second), client: noRedirects(opts.Transport)}
	if opts.Config.Ntfy != "" {
		if d.ntfy, err = newNtfy(opts.Config.Ntfy, noRedirects(opts.Transport)); err != nil {
			return nil, err
		}
	}
	if h := opts.Config.HomeAssistant; h != nil {
		if d.ha, err = newHomeAssistant(*h, noRedirects(opts.CredentialTransport)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// noRedirects is a client that follows no redirect: a notifier that answers with one has not
// delivered, and a token is never sent on.
func noRedirects(t http.RoundTripper) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// SetSecrets gives the dispatcher the open vault's lookup, or nil when it locks
// (vault.Gate.OnUnlock and OnLock). It never blocks.
func (d *Dispatcher) SetSecrets(lookup func(name string) ([]byte, bool)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.secrets = lookup
}

func (d *Dispatcher) lookup() func(name string) ([]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.secrets
}

// message is a notification as every notifier sends it: the payload of Web Push, the fields of
// ntfy's and Home Assistant's.
type message struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
}

// Notify tells the owner of n through every notifier configured, all at once, and returns
// what each did: one delivery per subscribed browser, then ntfy's, then Home Assistant's. With
// no browser subscribed, Web Push is a failed delivery only when no other notifier is
// configured. It returns within the dispatcher's timeout (and the feed's write); a notifier that
// has not answered by then is a failed delivery. Each delivery is recorded in the activity feed.
func (d *Dispatcher) Notify(ctx context.Context, n Notice) []Delivery {
	title := "Maven: approval needed"
	body := reveal.OneLine(n.Tool) + " waits for your approval"
	if n.Server != "" {
		body = reveal.OneLine(n.Tool) + " on " + reveal.OneLine(n.Server) + " waits for your approval"
	}
	deliveries := d.send(ctx, message{Title: title, Body: body, URL: n.Link})
	d.record(ctx, "system", n, deliveries)
	return deliveries
}

// Test sends a test notification through every notifier, as Notify does, linking to Maven's
// home page (Link("/")); the owner asked for it ("Send a test").
func (d *Dispatcher) Test(ctx context.Context) []Delivery {
	link := d.Link("/")
	msg := message{Title: "Maven: a test", Body: "Notifications from Maven reach this device.", URL: link}
	deliveries := d.send(ctx, msg)
	d.record(ctx, "owner", Notice{Link: link}, deliveries)
	return deliveries
}

// Link is the absolute URL of path (such as "/approvals/7") where a notice sends the owner: at
// Maven's first https origin, else its first origin, since a phone reaches Maven over https.
func (d *Dispatcher) Link(path string) string {
	for _, o := range d.origins {
		if strings.HasPrefix(o, "https://") {
			return o + path
		}
	}
	if len(d.origins) == 0 {
		return path
	}
	return d.origins[0] + path
}

// target is one place a message goes.
type target struct {
	notifier Notifier
	name     string
	send     func(ctx context.Context, msg message) error
}

// send delivers msg to every target at once, within the timeout, which bounds reading the
// subscriptions too.
func (d *Dispatcher) send(ctx context.Context, msg message) []Delivery {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	targets, failed := d.targets(ctx)
	if len(targets) == 0 && len(failed) == 0 {
		return []Delivery{{Notifier: NotifierWebPush,
			Err: "no browser is subscribed and no other notifier is configured: turn notifications on in a browser, or configure ntfy or Home Assistant"}}
	}
	if msg.URL == "" || !d.atOrigin(msg.URL) {
		d.log.Error("notify: a notice's link is not at one of Maven's origins; nothing sent", "link", msg.URL)
		out := failed
		for _, t := range targets {
			out = append(out, Delivery{Notifier: t.notifier, Target: t.name, Err: "not sent: the link is not at one of Maven's addresses"})
		}
		return out
	}
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(targets))
	for i, t := range targets {
		go func() { results <- result{i, t.send(ctx, msg)} }()
	}
	out := make([]Delivery, len(targets))
	answered := make([]bool, len(targets))
wait:
	for range targets {
		select {
		case r := <-results:
			out[r.i], answered[r.i] = Delivery{Notifier: targets[r.i].notifier, Target: targets[r.i].name, OK: r.err == nil}, true
			if r.err != nil {
				out[r.i].Err = r.err.Error()
			}
		case <-ctx.Done():
			// The rest are cancelled by the deferred cancel, and their results dropped.
			break wait
		}
	}
	for i, t := range targets {
		if !answered[i] {
			out[i] = Delivery{Notifier: t.notifier, Target: t.name, Err: fmt.Sprintf("no answer within %s", d.timeout)}
		}
	}
	return append(failed, out...)
}

// targets are where a message goes now: every subscribed browser, ntfy, Home Assistant.
// failed holds the deliveries that cannot even be tried.
func (d *Dispatcher) targets(ctx context.Context) (targets []target, failed []Delivery) {
	subs, err := d.store.Subscriptions(ctx)
	if err != nil {
		d.log.Error("notify: read the push subscriptions", "err", err)
		failed = append(failed, Delivery{Notifier: NotifierWebPush, Err: "Maven could not read the browsers' subscriptions; see its log"})
	}
	for _, s := range subs {
		targets = append(targets, target{NotifierWebPush, s.Target(), func(ctx context.Context, msg message) error {
			return d.pushTo(ctx, s, msg)
		}})
	}
	if d.ntfy != nil {
		targets = append(targets, target{NotifierNtfy, d.ntfy.target, d.ntfy.send})
	}
	if d.ha != nil {
		targets = append(targets, target{NotifierHomeAssistant, d.ha.target, func(ctx context.Context, msg message) error {
			return d.ha.send(ctx, msg, d.lookup())
		}})
	}
	return targets, failed
}

// atOrigin reports whether link is an absolute URL at one of Maven's origins.
func (d *Dispatcher) atOrigin(link string) bool {
	u, err := url.Parse(link)
	if err != nil || u.User != nil {
		return false
	}
	return slices.ContainsFunc(d.origins, func(o string) bool { return strings.EqualFold(u.Scheme+"://"+u.Host, o) })
}

// record appends each delivery to the activity feed: whom it was sent to and why it failed,
// never a secret. It outlives the caller's cancellation, briefly.
func (d *Dispatcher) record(ctx context.Context, actor string, n Notice, deliveries []Delivery) {
	events := make([]activity.Event, 0, len(deliveries))
	for _, dv := range deliveries {
		ev := activity.Event{Actor: actor, Action: activity.ActionNotified, Tool: n.Tool, Detail: map[string]any{
			"notifier": dv.Notifier, "target": dv.Target, "server": n.Server, "client": n.Client, "link": n.Link,
		}}
		if !dv.OK {
			ev.Action = activity.ActionNotifyFailed
			ev.Detail["error"] = dv.Err
		}
		events = append(events, ev)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := d.activity.Append(ctx, events...); err != nil {
		d.log.Error("notify: record the deliveries", "err", err)
	}
}
