// Package bench measures Maven against the targets of issue 7, side by side in one run:
// boot-to-ready and the unlock answer with and without black-holed MCP servers, a voice turn
// against a direct MCP call, the /tools page and its search partial over 5,000 rows, the
// reconcile of 100 servers × 100 tools, the daemon's resident memory after discovering 1,000
// tools, and what a minute of hostile servers churning their tools writes to the database
// (issue 10). It is all in TestBenchReport, which runs only with MAVEN_BENCH=1:
//
//	scripts/bench
package bench
