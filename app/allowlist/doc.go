// Package allowlist is the act allowlist: every tool Maven may run, a local command or an MCP
// server's tool, is one row here, and nothing runs unless its row is enabled.
//
// It owns the rows and their audit trail. Every write to a row, from discovery's reconcile, the
// config's tools, the CLI or the web app, goes through Service (Service.Update and the Tx it
// hands out), which writes the row and its event in one transaction, so the rules hold in one
// place:
//   - a row's identity is (scope, cmd), its local name unique, and no row is ever deleted
//     (docs/design.md#rule-1);
//   - only the allowed state changes happen, only the owner enables, with an auth.StepUp that
//     names the row and the digest the owner's page showed (CheckShown), and a proposal never
//     renames an enabled row (docs/design.md#rule-2, docs/design.md#rule-21);
//   - every change appends one event, repeats of one redefinition counted against it
//     (docs/design.md#rule-3), and destructive is only ever raised (docs/design.md#rule-4);
//   - a row is read again before it runs, answered from memory while no update has committed
//     since (Service.Runnable, docs/design.md#rule-5);
//   - a server removed from the config has its rows withdrawn (docs/design.md#rule-10).
//
// It also owns how names are heard: Flatten reads local names and what is said alike
// (docs/design.md#rule-11), and Matcher maps an utterance to an enabled row by the longest
// spoken name (docs/design.md#rule-17). Store is the storage it needs; db implements it.
package allowlist
