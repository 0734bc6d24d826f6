// Package bench measures Maven against its targets, each a ratio to a floor measured side by
// side in the same run (issue 23): boot-to-ready and the unlock answer with and without
// black-holed MCP servers, a voice turn against a direct MCP call (in-process, and what POST
// /voice adds over HTTP with a 28 KiB Home Assistant body beyond a direct call and a bare round
// trip to the daemon), the /tools page and its search partial over 50,000 rows against 5,000,
// the reconcile of 100 servers × 100 tools against the same rows inserted bare, the daemon's
// resident memory after discovering 100 servers × 100 tools, what a minute of hostile servers
// churning their tools writes to the database, how soon a 2026-07-28 server's list change
// reaches a row, the agents' figures through /mcp (a call and tools/list, each also beside a
// bare go-sdk relay of the same work, mcptest.Relay; a list change; 100 sessions; boot and
// unlock with clients), and the pending calls' push, answer and page. It is all in
// TestBenchReport, which runs only with MAVEN_BENCH=1:
//
//	scripts/bench
//
// bench/README.md holds the table of the last full run and says what each figure measures.
package bench
