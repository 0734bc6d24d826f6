// Package auth is the owner's identity: the owner, their passkeys, one-time setup links, the
// WebAuthn ceremonies of registration, sign-in, unlock and step-up (go-webauthn), the step-up
// grants those ceremonies leave behind, and browser markers. It knows browser sessions only as
// opaque ids chosen by the web layer; cookies and HTTP stay in handlers.
//
// It owns what proves the owner, and enforces:
//   - passkeys only, with user verification read from each ceremony; a setup link lasts 15
//     minutes, is used once and voids every earlier one; the last passkey is never removed; each
//     change is an event of the activity feed, never with a token (docs/design.md#rule-20);
//   - a ceremony is begun for a configured origin, consumed by its first finish, and expires;
//     the backup flags and the signature counter are checked (docs/security.md#req-2 to
//     docs/security.md#req-9);
//   - a step-up names exactly what it approves (Approval): its challenge is bound to the
//     approval's digest, and the grant it leaves is spent once, within the step-up window, and
//     forgotten on sign-out and lock. StepUp, the proof an action needs, is made only by
//     Service.Redeem, so no other package can make one (docs/design.md#rule-21);
//   - ceremonies anyone may begin are bounded apart from the owner's, so no anonymous request
//     evicts the owner's; a browser marker gives a browser that proved the owner budgets of its
//     own; and Epoch changes at every start and passkey change, which ends the sessions
//     (docs/design.md#rule-23);
//   - an unlock asks each passkey's PRF with an input of its own (docs/security.md#req-27).
//
// Store is the storage it needs; db implements it.
package auth
