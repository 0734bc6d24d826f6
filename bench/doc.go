// Package bench measures Maven against the targets of issues 7 and 13, side by side in one run:
// boot-to-ready and the unlock answer with and without black-holed MCP servers, a voice turn
// against a direct MCP call (in-process, and what POST /voice adds over HTTP with a 28 KiB Home
// Assistant body beyond a direct call and a bare round trip to the daemon), the /tools page and
// its search partial over 5,000 rows, the reconcile of 100 servers × 100 tools, the daemon's
// resident memory after discovering 1,000 tools, and what a minute of hostile servers churning
// their tools writes to the database (issue 10). It is all in TestBenchReport, which runs only
// with MAVEN_BENCH=1:
//
//	scripts/bench
//
// bench/README.md holds the table of the last full run and says what each figure measures.
package bench
