// Package limits holds the owner's limits on an enabled MCP row's arguments
// (docs/design.md#rule-33): per property of the tool's approved input schema, a fixed value,
// allowed values, a numeric range, a string length or a pattern, and the choice to run the calls
// within them without asking.
//
// It owns the limits (Limit, Set), their check against the schema they narrow (Validate: a limit
// the schema contradicts is refused with the reason), the form they are written in (Draft), the
// narrowed schema agents are shown (Narrow), the check of a call's arguments (Checker, whose
// Violation names the property and the limit) and the saved limits (Service). It enforces:
//   - limits are saved only with an auth.StepUp for set_limits on that row naming Digest: the
//     fingerprint the owner's page showed and the limits' canonical (JCS) JSON, so the passkey
//     approves exactly these limits on exactly that shape (Service.Save);
//   - they are part of the row's approval: a redefinition voids them, and the run-without-asking
//     choice with them (Saved.InForce; db voids the saved row when the fingerprint changes);
//   - every front end checks a call against them before it is sent (Service.Check; the runner
//     checks again), and a pattern is Go's RE2, linear in its input, never a backtracking engine.
//
// Store is the storage it needs; db implements it.
package limits
