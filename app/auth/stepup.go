package auth

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
)

// Action names what a step-up was performed for; a proof for one action cannot be spent on
// another.
type Action string

// Actions that need a fresh step-up (docs/design.md#rule-21).
const (
	ActionEnableTool    Action = "enable_tool"
	ActionAddPasskey    Action = "add_passkey"
	ActionRemovePasskey Action = "remove_passkey"
	// ActionSetSecret seals one secret's value; its item's digest is the secret's name, since a
	// secret has no id.
	ActionSetSecret Action = "set_secret"
	// ActionDeleteSecret deletes one sealed secret; its item's digest is the secret's name, as
	// the page showed it, since a secret has no id (the servers that use it stop).
	ActionDeleteSecret Action = "delete_secret"
	ActionAddServer    Action = "add_server"
	// ActionRotateRecovery replaces the vault's recovery code; the old one stops working.
	ActionRotateRecovery Action = "rotate_recovery"
	// ActionSetPhrases saves an enabled MCP tool's voice phrases (docs/design.md#rule-15b).
	ActionSetPhrases Action = "set_phrases"
	// ActionSetLimits saves an enabled MCP tool's argument limits and whether calls within them
	// run without asking (docs/design.md#rule-33). Its item's digest is limits.Digest: the
	// fingerprint the page showed and the limits' canonical JSON.
	ActionSetLimits Action = "set_limits"
	// ActionSignIn signs Maven in to an OAuth-protected MCP server: it grants Maven access.
	// Its item's digest names the server, its authorization server and the scopes, as the
	// servers card showed them (a server has no id).
	ActionSignIn Action = "sign_in_server"
	// ActionApproveCall runs one pending call (docs/design.md#rule-30): its target is the call's
	// id and its digest the call's binding, H(id ‖ fingerprint ‖ canonical arguments ‖ expiry)
	// (pending.Binding), as its page showed it.
	ActionApproveCall Action = "approve_call"
	// ActionSetConfirm sets how a destructive row's voice calls are confirmed, by a spoken yes or
	// on the phone (docs/design.md#rule-32): its digest names the setting and the row's
	// fingerprint as the page showed them ("phone sha256:…").
	ActionSetConfirm Action = "set_confirm"
	// ActionConsentClient lets an agents' client connect (docs/design.md#rule-29): its item's
	// digest names the authorization request, the client id, the redirect URI and the tools
	// the owner ticked, as the consent page showed them (clients.ConsentDigest).
	ActionConsentClient Action = "consent_client"
	// ActionClientTools changes the tools a client's agents see; its item's digest names the
	// client and the new set (clients.ToolsDigest).
	ActionClientTools Action = "client_tools"
)

// knownAction reports whether a step-up can be asked for a.
func knownAction(a Action) bool {
	switch a {
	case ActionEnableTool, ActionAddPasskey, ActionRemovePasskey, ActionSetSecret, ActionDeleteSecret, ActionAddServer, ActionRotateRecovery, ActionSetPhrases, ActionSetLimits, ActionSignIn,
		ActionApproveCall, ActionSetConfirm, ActionConsentClient, ActionClientTools:
		return true
	}
	return false
}

// shownActions are the actions on a thing whose shape the far end can change under the owner's
// eyes (a tool row, enabled, given phrases, limits or its confirmation; what a server asks a
// sign-in for; a pending call; what a client asks for and is given): each item must name the
// fingerprint the owner's page showed.
func shownAction(a Action) bool {
	switch a {
	case ActionEnableTool, ActionSetPhrases, ActionSetLimits, ActionSignIn, ActionApproveCall, ActionSetConfirm, ActionConsentClient, ActionClientTools:
		return true
	}
	return false
}

// Limits of an Approval.
const (
	// MaxItems bounds a batch: the owner selects at most a page of rows (50) at once.
	MaxItems     = 100
	maxDigestLen = 128
)

// Item is one thing a step-up approves: a target (a tool row, a passkey, a command line; 0 for
// an action on nothing in particular) and the fingerprint or digest of the shape the owner's
// page showed of it ("" when nothing shown can change under the owner).
type Item struct {
	Target int64  `json:"id"`
	Digest string `json:"fingerprint,omitempty"`
}

// Approval is exactly what one step-up approves (docs/design.md#rule-21): one action and every item
// it applies to. A batch the owner selected is one Approval with several items; the step-up's
// challenge is bound to all of them, and the proof it yields names each item and its digest.
type Approval struct {
	Action Action `json:"action"`
	Items  []Item `json:"items"`
}

// One is the Approval of action on one target as the page showed it (digest, or "").
func One(action Action, target int64, digest string) Approval {
	return Approval{Action: action, Items: []Item{{Target: target, Digest: digest}}}
}

// Validate reports an Approval that no step-up can be asked for: an unknown action, no item or
// more than MaxItems, a negative or repeated target, an overlong digest, or an item of an action
// on a row that names no fingerprint. The error wraps ErrUnknownAction.
func (a Approval) Validate() error {
	if !knownAction(a.Action) {
		return fmt.Errorf("%w: %q", ErrUnknownAction, a.Action)
	}
	if len(a.Items) == 0 || len(a.Items) > MaxItems {
		return fmt.Errorf("%w: %s names %d items, want 1 to %d", ErrUnknownAction, a.Action, len(a.Items), MaxItems)
	}
	seen := make(map[int64]bool, len(a.Items))
	for _, it := range a.Items {
		switch {
		case it.Target < 0 || seen[it.Target]:
			return fmt.Errorf("%w: %s names target %d twice or below 0", ErrUnknownAction, a.Action, it.Target)
		case len(it.Digest) > maxDigestLen:
			return fmt.Errorf("%w: %s names an overlong fingerprint", ErrUnknownAction, a.Action)
		case shownAction(a.Action) && it.Digest == "":
			return fmt.Errorf("%w: %s on %d names no fingerprint", ErrUnknownAction, a.Action, it.Target)
		}
		seen[it.Target] = true
	}
	return nil
}

// canonical is the Approval with its items in target order: the same approval whatever order a
// page listed them in. Its JSON is what the challenge is bound to.
func (a Approval) canonical() Approval {
	items := slices.Clone(a.Items)
	slices.SortFunc(items, func(x, y Item) int { return cmp.Compare(x.Target, y.Target) })
	return Approval{Action: a.Action, Items: items}
}

// digest is SHA-256 of the canonical approval's JSON.
func (a Approval) digest() [sha256.Size]byte {
	b, err := json.Marshal(a.canonical())
	if err != nil {
		panic("auth: marshal approval: " + err.Error()) // strings and integers always marshal
	}
	return sha256.Sum256(b)
}

// Same reports whether a and b approve the same action on the same items, shown the same.
func (a Approval) Same(b Approval) bool { return a.digest() == b.digest() }

// StepUp is proof that the owner just performed a user-verified passkey assertion approving
// one Approval. Its fields are unexported so that only this package can mint one: no code path
// elsewhere can enable a tool without it. The zero value proves nothing.
type StepUp struct {
	approval Approval
	owner    string
}

// Shown returns the digest the owner was shown of target when approving action, and whether
// the proof approves action on target at all. A consumer whose target has a shape compares the
// digest with the shape it is about to approve, and refuses on a difference.
func (p StepUp) Shown(action Action, target int64) (digest string, ok bool) {
	if p.owner == "" || p.approval.Action != action {
		return "", false
	}
	for _, it := range p.approval.Items {
		if it.Target == target {
			return it.Digest, true
		}
	}
	return "", false
}

// Approves reports whether the proof approves action on item: the same target, shown with the
// same digest.
func (p StepUp) Approves(action Action, item Item) bool {
	d, ok := p.Shown(action, item.Target)
	return ok && d == item.Digest
}

// Approval returns what the proof approves: every item, for a consumer that acts on a batch.
func (p StepUp) Approval() Approval {
	return Approval{Action: p.approval.Action, Items: slices.Clone(p.approval.Items)}
}

// Owner names who performed the step-up, for the audit trail.
func (p StepUp) Owner() string { return p.owner }
