package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"maven/app/notify"
	"maven/views"
)

// Notifications tells the owner of calls waiting for approval and keeps the browsers
// subscribed to Web Push (*notify.Dispatcher).
type Notifications interface {
	// PublicKey is the VAPID key browsers subscribe with.
	PublicKey() string
	// Subscribe fails with notify.ErrBadSubscription for what is not a subscription and
	// notify.ErrTooManySubscriptions past the limit.
	Subscribe(ctx context.Context, endpoint, p256dh, auth, userAgent string) (notify.Subscription, error)
	// Unsubscribe fails with notify.ErrNotFound when no subscription has id.
	Unsubscribe(ctx context.Context, id int64) error
	Subscriptions(ctx context.Context) ([]notify.Subscription, error)
	// Test sends a test notification through every notifier.
	Test(ctx context.Context) []notify.Delivery
}

// pushCardPage is where the notifications card is, for the browsers that post its forms
// without htmx.
const pushCardPage = "/approvals#push"

// maxPushForm bounds a subscription's form: an endpoint of at most 2 KiB and two keys.
const maxPushForm = 8 << 10

// pushCard is the notifications card, saying message.
func (s *server) pushCard(ctx context.Context, message string) (views.PushCard, error) {
	subs, err := s.notify.Subscriptions(ctx)
	if err != nil {
		return views.PushCard{}, err
	}
	card := views.PushCard{PublicKey: s.notify.PublicKey(), Message: message}
	for _, sub := range subs {
		sum := sha256.Sum256([]byte(sub.Endpoint))
		service := "?"
		if u, err := url.Parse(sub.Endpoint); err == nil {
			service = u.Host
		}
		card.Browsers = append(card.Browsers, views.PushBrowser{ID: sub.ID, Label: sub.Label, Service: service,
			Since: timeOf(sub.CreatedAt), EndpointHash: hex.EncodeToString(sum[:8])})
	}
	return card, nil
}

// pushSubscribePost stores this browser's push subscription (push.js posts what the Push API
// gave it: endpoint, p256dh, auth) and answers with the card.
func (s *server) pushSubscribePost(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxPushForm); err != nil {
		return err
	}
	f := r.PostForm
	sub, err := s.notify.Subscribe(r.Context(), f.Get("endpoint"), f.Get("p256dh"), f.Get("auth"), r.UserAgent())
	if err != nil {
		return err
	}
	return s.pushChanged(w, r, "Notifications are on in "+sub.Label+". Send a test to see one.", nil)
}

// pushUnsubscribePost removes the subscription the form names (field "id").
func (s *server) pushUnsubscribePost(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxPushForm); err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PostForm.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		return errBadRequest
	}
	if err := s.notify.Unsubscribe(r.Context(), id); err != nil {
		return err
	}
	return s.pushChanged(w, r, "That browser gets no more notifications.", nil)
}

// pushTestPost sends a test notification through every notifier, and answers with the card
// saying what each did.
func (s *server) pushTestPost(w http.ResponseWriter, r *http.Request) error {
	if err := readForm(w, r, maxPushForm); err != nil {
		return err
	}
	deliveries := s.notify.Test(r.Context())
	sent := 0
	var out []views.Delivery
	for _, d := range deliveries {
		if d.OK {
			sent++
		}
		out = append(out, views.Delivery{Through: d.Notifier.Words(), Target: text(d.Target), OK: d.OK, Err: text(d.Err)})
	}
	msg := fmt.Sprintf("A test went to %d of %d.", sent, len(deliveries))
	if sent == 0 {
		msg = "The test reached nothing: each line below says why."
	}
	return s.pushChanged(w, r, msg, out)
}

// pushChanged answers an action on the card: the card, saying message, for htmx; the page
// holding it otherwise.
func (s *server) pushChanged(w http.ResponseWriter, r *http.Request, message string, deliveries []views.Delivery) error {
	return s.swapOrRedirect(w, r, pushCardPage, views.PartialPush, func() (any, error) {
		card, err := s.pushCard(r.Context(), message)
		card.Deliveries = deliveries
		return card, err
	})
}

// notifyProblem maps the errors of the subscriptions (notify's).
func notifyProblem(err error) (problem, bool) {
	info := slog.LevelInfo
	switch {
	case errors.Is(err, notify.ErrBadSubscription):
		return problem{http.StatusUnprocessableEntity, "This browser sent a push subscription Maven cannot use, so nothing changed. Try again, or use another browser.", info}, true
	case errors.Is(err, notify.ErrTooManySubscriptions):
		return problem{http.StatusConflict, fmt.Sprintf("At most %d browsers can get notifications. Remove one first.", notify.MaxSubscriptions), info}, true
	case errors.Is(err, notify.ErrNotFound):
		return problem{http.StatusNotFound, "That browser is not subscribed any more.", info}, true
	}
	return problem{}, false
}

// The service worker and the web app manifest are served at the root: a service worker's scope
// is at most its script's directory, and it must cover every page (docs/design.md#http).
const (
	serviceWorkerPath = "/sw.js"
	manifestPath      = "/manifest.webmanifest"
)
