// Package notify tells the owner that a call waits for their approval, through every notifier
// configured: Web Push to the browsers that subscribed on Maven's pages (VAPID, RFC 8291 and
// RFC 8292 through webpush-go), an ntfy topic, and Home Assistant's notify service through its
// REST API. It owns the VAPID keys, made at first start and kept in the database, and the
// browsers' push subscriptions.
//
// It enforces, for docs/design.md#rule-30:
//   - a notification carries the tool's name, its server and the link to its approval page,
//     never a capability: no token, no step-up material, no argument; the link is at one of
//     Maven's origins, where the page needs the owner's session and Approve a step-up. ntfy gets
//     a view action and Home Assistant a URI action to that page, never an action that acts;
//   - a notice never waits on a notifier longer than the dispatcher's timeout: every target is
//     sent to at once, and one that has not answered in time is a failed delivery;
//   - every delivery, done or failed, says what happened in words the owner can act on, and is
//     recorded in the activity feed without any secret; a push service that says a subscription
//     ended (404, 410) drops it;
//   - the Home Assistant token comes from the vault, so a locked daemon cannot send it: that is
//     a failed delivery saying so.
//
// Store is the storage it needs; db implements it.
package notify
