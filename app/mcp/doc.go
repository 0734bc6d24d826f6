// Package mcp connects Maven to MCP servers (go-sdk, both protocol eras): a Manager with one
// supervisor per configured server, which dials, lists, refreshes and calls its tools, and the
// ToolReconciler that turns each complete listing into allowlist rows.
//
// It owns the sessions, what the owner is told about each server, and how a listing becomes
// rows; it reads rows itself, but every write goes through an allowlist.Tx. It enforces:
//   - discovery only proposes, and a tool Maven cannot store faithfully is refused, not cut
//     (docs/design.md#rule-6);
//   - Fingerprint is the one place a fingerprint is computed, over the JCS canonical form
//     (docs/design.md#rule-7);
//   - every listing is compared with every row of its server, a pre-fingerprint row adopts
//     silently, and only a complete listing from a connected server within its churn budget
//     withdraws anything (docs/design.md#rule-8, docs/design.md#rule-9, docs/design.md#rule-10);
//   - local names flatten and get a stable suffix on a collision (docs/design.md#rule-11);
//   - list changes refresh at most once a RefreshGap, never dropped, and a cache hint never
//     spares a listing (docs/design.md#rule-12);
//   - the first dial happens on the supervisor's own goroutine, with backoff and a timeout on
//     every dial, listing and call; a reload changes only the servers whose entry changed
//     (docs/design.md#rule-13);
//   - each server's state, trust level and why it stopped, secrets masked
//     (docs/design.md#rule-14);
//   - Positional.Bind binds only what it can defend (docs/design.md#rule-15);
//   - a server's question goes only to the voice turn whose call it interrupts, else it is
//     declined (docs/design.md#rule-18);
//   - a server that needs a secret is not dialled while the vault is locked, and a lock ends its
//     session (docs/design.md#rule-19, docs/design.md#rule-22);
//   - a stdio server starts only once the owner approved its exact command line, whose digest
//     StdioCommand computes (docs/design.md#rule-25).
package mcp
