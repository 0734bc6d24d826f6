// Package pending keeps the calls that wait for the owner's approval on the phone
// (docs/design.md#rule-30 to docs/design.md#rule-32): an agent's call that needs the owner, or a
// voice turn to a row set to confirm on the phone.
//
// It enforces:
//   - a pending call is bound to its client, the row's id and fingerprint, the canonical (JCS)
//     arguments, the properties sent absent, and its expiry; approving it is a step-up naming
//     Binding, H(id ‖ fingerprint ‖ arguments ‖ expiry), so no other call, and no other shape of
//     this one, can be approved with it. Denying needs no step-up;
//   - a client holds at most MaxPerClient pending calls, and an identical call joins the one
//     pending: no caller grows the table without bound;
//   - an approved call runs once, through the one run path, after the row is read again: one
//     transition, pending → running, written before the run, decides which approval runs it,
//     and a crash leaves it running, marked interrupted at the next start (Recover), never run
//     again by itself;
//   - its result goes to the caller still waiting (Await), else is kept until expiry for the
//     caller's identical call (Submit's Kept), which runs nothing;
//   - expiry denies; a redefinition, a disable or a withdrawal voids the calls of that row; a
//     lock voids nothing, but nothing runs while locked;
//   - nothing a caller sends approves: the only way to ApproveCall is a StepUp, which only
//     app/auth mints, from the owner's passkey.
//
// Every event of a call is recorded in the activity feed with its client's name; the notices
// go through app/notify. Store is the storage it needs; db implements it.
package pending
