// Package auth holds the owner, their passkeys, one-time setup links, the WebAuthn ceremonies of
// registration, sign-in and step-up, and the step-up grants those ceremonies leave behind. It
// knows browser sessions only as opaque ids chosen by the web layer; cookies and HTTP stay there.
package auth

import (
	"testing"
	"time"
)

// Action names what a step-up was performed for; a proof for one action cannot be spent on
// another.
type Action string

// Actions that need a fresh step-up (DESIGN.md rule 21).
const (
	ActionEnableTool    Action = "enable_tool"
	ActionAddPasskey    Action = "add_passkey"
	ActionRemovePasskey Action = "remove_passkey"
	ActionSetSecret     Action = "set_secret"
	ActionAddServer     Action = "add_server"
	// ActionRotateRecovery replaces the vault's recovery code; the old one stops working.
	ActionRotateRecovery Action = "rotate_recovery"
	// ActionSetPhrases saves an enabled MCP tool's voice phrases (DESIGN.md rule 15b).
	ActionSetPhrases Action = "set_phrases"
)

// StepUp is proof that the owner just performed a user-verified passkey assertion for one
// action on one target. Its fields are unexported so that only this package can mint one: no
// code path elsewhere can enable a tool without it. The zero value proves nothing.
type StepUp struct {
	action Action
	target int64
	owner  string
	at     time.Time
}

// Permits reports whether the proof covers action on target.
func (p StepUp) Permits(action Action, target int64) bool {
	return p.action != "" && p.action == action && p.target == target && p.owner != ""
}

// Owner names who performed the step-up, for the audit trail.
func (p StepUp) Owner() string { return p.owner }

// At is when the assertion was verified.
func (p StepUp) At() time.Time { return p.at }

// mint is the only way the daemon itself obtains a proof: Service.Redeem calls it for a grant
// that a verified, user-verified assertion created.
func mint(action Action, target int64, owner string, at time.Time) StepUp {
	return StepUp{action: action, target: target, owner: owner, at: at}
}

// ForTest mints a proof for tests of other packages. It panics outside a test binary, so the
// daemon itself can only obtain proofs from a verified assertion.
func ForTest(tb testing.TB, action Action, target int64) StepUp {
	tb.Helper()
	if !testing.Testing() {
		panic("auth.ForTest called outside a test binary")
	}
	return StepUp{action: action, target: target, owner: "owner", at: time.Now()}
}
