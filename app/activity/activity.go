// Package activity is the owner's view of what Maven did: every voice turn (those that matched
// nothing included) with its utterance, outcome, bound arguments and reply, confirms and
// cancels, enables and disables, command-line approvals, locks and unlocks, MCP servers' state
// changes, and security events (passkeys, secrets, the recovery code, setup links), newest
// first, in pages. Changes of an allowlist row reach it from the row's audit
// trail (allowlist events); everything else — voice turns above all — is appended here. It is
// read by `maven events` and /activity.
package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Entry is one event of the feed; its JSON is the `events` IPC result's element
// (docs/design.md#ipc).
type Entry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`  // "voice", "owner", "cli", "config", "discovery", "system", …
	Action string    `json:"action"` // "voice_turn", "enabled", "locked", "server_state", …
	// ToolID is the row the event concerns, 0 for none; Tool its name at the time.
	ToolID int64  `json:"tool_id,omitempty"`
	Tool   string `json:"tool"`
	// Outcome is a voice turn's outcome ("ran", "no_match", …), "" for other events.
	Outcome string          `json:"outcome"`
	Detail  json.RawMessage `json:"detail"`
}

// The actions this package writes itself; row events keep their allowlist action names, and a
// voice turn is "voice_turn".
const (
	ActionVoiceTurn = "voice_turn"
	// ActionAgentCall is an agent's call of a tool, run or refused (app/agents); its detail
	// names the client.
	ActionAgentCall   = "agent_call"
	ActionLocked      = "locked"
	ActionUnlocked    = "unlocked"
	ActionServerState = "server_state"
	// A sign-in to an OAuth-protected MCP server: done, failed, its refresh token refused, and
	// its sealed credentials forgotten once the config no longer names the server.
	ActionSignedIn        = "oauth_signed_in"
	ActionSignInFailed    = "oauth_sign_in_failed"
	ActionTokenRevoked    = "oauth_token_revoked"
	ActionSignInForgotten = "oauth_forgotten"
	// Security events: the owner's passkeys, secrets and recovery code, and setup links. Their
	// detail names what changed, never a secret's value, a token or a code.
	ActionPasskeyAdded    = "passkey_added"
	ActionPasskeyRenamed  = "passkey_renamed"
	ActionPasskeyRemoved  = "passkey_removed"
	ActionSecretSet       = "secret_set"
	ActionSecretDeleted   = "secret_deleted"
	ActionRecoveryRotated = "recovery_code_rotated"
	ActionSetupLinkIssued = "setup_link_issued"
	// Notifications of calls waiting for approval (docs/design.md#rule-30): one entry per
	// delivery, done or failed, and the browsers subscribed to Web Push and removed. Their
	// detail names the notifier and its target, never a secret.
	ActionNotified         = "notified"
	ActionNotifyFailed     = "notify_failed"
	ActionPushSubscribed   = "push_subscribed"
	ActionPushUnsubscribed = "push_unsubscribed"
	// ActionApproval is an event of a pending call (app/pending, docs/design.md#rule-30): its
	// outcome is the event (created, approved, denied, expired, voided, ran, interrupted), its
	// detail names the client.
	ActionApproval = "approval"
)

// Kind is one of the feed's kinds of entry, the switch of /activity.
type Kind string

// The kinds: voice turns; agents' calls; pending calls and the notices of them; what the
// servers did (their states, command lines approved, OAuth sign-ins); and every other change,
// the owner's and the allowlist's (rows proposed, enabled and disabled, phrases, locks,
// passkeys, secrets, setup links).
const (
	KindVoice     Kind = "voice"
	KindAgents    Kind = "agents"
	KindApprovals Kind = "approvals"
	KindChanges   Kind = "changes"
	KindServers   Kind = "servers"
)

// Kinds are the kinds, in the order the switch offers them.
func Kinds() []Kind { return []Kind{KindVoice, KindAgents, KindApprovals, KindChanges, KindServers} }

// serverActions are the actions of KindServers, approvalActions those of KindApprovals.
var (
	serverActions   = []string{ActionServerState, "command_approved", ActionSignedIn, ActionSignInFailed, ActionTokenRevoked, ActionSignInForgotten}
	approvalActions = []string{ActionApproval, ActionNotified, ActionNotifyFailed}
)

// Actions returns the actions k selects, or with except true those it leaves out: KindChanges
// is everything that is neither a voice turn, an agent's call, a pending call's nor a server's.
func (k Kind) Actions() (actions []string, except bool) {
	switch k {
	case KindVoice:
		return []string{ActionVoiceTurn}, false
	case KindAgents:
		return []string{ActionAgentCall}, false
	case KindApprovals:
		return slices.Clone(approvalActions), false
	case KindServers:
		return slices.Clone(serverActions), false
	case KindChanges:
		return slices.Concat([]string{ActionVoiceTurn, ActionAgentCall}, approvalActions, serverActions), true
	}
	return nil, false
}

// Filter selects a page of the feed. Zero fields select everything.
type Filter struct {
	// Since and Until bound the time: Since <= at < Until. Day sets both to one local day.
	Since, Until time.Time
	Outcome      string // a voice outcome, such as "no_match"
	Tool         string // a row's name
	Action       string // such as "voice_turn" or "enabled"
	Kind         Kind   // one kind of entry
	// Before continues a listing: only the entries after the one with this id in the feed's
	// order (Page.Next of the page before).
	Before int64
	// Limit is the most entries a page holds: DefaultLimit when 0, at most MaxLimit.
	Limit int
}

// Page limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Day returns the filter's copy bounded to the calendar day of t in t's location.
func (f Filter) Day(t time.Time) Filter {
	y, m, d := t.Date()
	f.Since = time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	f.Until = f.Since.AddDate(0, 0, 1)
	return f
}

// Page is one page of the feed, newest first: by time, then by id, so that entries an upgrade
// copied into the feed in blocks read in the order they happened.
type Page struct {
	Entries []Entry
	// Next is the Filter.Before that lists the following (older) page; 0 when this is the last.
	Next int64
}

// Store keeps the feed. db implements it with bun on SQLite.
type Store interface {
	// AppendActivity adds entries, in order and in one transaction, and sets their IDs.
	AppendActivity(ctx context.Context, entries []*Entry) error
	// ListActivity returns at most f.Limit entries matching f, newest first: latest at, then
	// highest id. f.Before names the entry the listing continues after.
	ListActivity(ctx context.Context, f Filter) ([]Entry, error)
}

// ErrBadFilter means a filter that cannot select anything sensible (a negative limit, an
// Until before Since).
var ErrBadFilter = errors.New("bad activity filter")

// Log appends to and reads the feed. It is safe for concurrent use if its Store is.
type Log struct {
	store Store
	now   func() time.Time
}

// New returns a Log; now is time.Now when nil.
func New(store Store, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{store: store, now: now}
}

// Event is an entry to append: Detail is encoded as the entry's JSON detail, empty values left
// out; a zero At is the time of appending.
type Event struct {
	At                     time.Time
	Actor, Action, Outcome string
	ToolID                 int64  // the row the event concerns, 0 for none
	Tool                   string // that row's name
	Detail                 map[string]any
}

// Append records events in one transaction, in order.
func (l *Log) Append(ctx context.Context, events ...Event) error {
	entries := make([]*Entry, len(events))
	for i, ev := range events {
		for k, v := range ev.Detail {
			if v == "" || v == nil {
				delete(ev.Detail, k)
			}
		}
		if ev.Detail == nil {
			ev.Detail = map[string]any{}
		}
		raw, err := json.Marshal(ev.Detail)
		if err != nil {
			return fmt.Errorf("encode %s detail: %w", ev.Action, err)
		}
		if ev.At.IsZero() {
			ev.At = l.now()
		}
		entries[i] = &Entry{At: ev.At.UTC(), Actor: ev.Actor, Action: ev.Action, ToolID: ev.ToolID, Tool: ev.Tool,
			Outcome: ev.Outcome, Detail: raw}
	}
	if err := l.store.AppendActivity(ctx, entries); err != nil {
		return fmt.Errorf("append to the activity feed: %w", err)
	}
	return nil
}

// Query returns one page of the feed, newest first.
func (l *Log) Query(ctx context.Context, f Filter) (Page, error) {
	switch {
	case f.Limit < 0 || f.Before < 0:
		return Page{}, fmt.Errorf("%w: limit and before cannot be negative", ErrBadFilter)
	case !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since):
		return Page{}, fmt.Errorf("%w: until is before since", ErrBadFilter)
	case f.Kind != "" && !slices.Contains(Kinds(), f.Kind):
		return Page{}, fmt.Errorf("%w: no kind %q", ErrBadFilter, f.Kind)
	case f.Limit == 0:
		f.Limit = DefaultLimit
	case f.Limit > MaxLimit:
		f.Limit = MaxLimit
	}
	want := f.Limit
	f.Limit++ // one more tells whether an older page exists
	entries, err := l.store.ListActivity(ctx, f)
	if err != nil {
		return Page{}, fmt.Errorf("list activity: %w", err)
	}
	p := Page{Entries: entries}
	if len(entries) > want {
		p.Entries = entries[:want]
		p.Next = p.Entries[want-1].ID
	}
	return p, nil
}
