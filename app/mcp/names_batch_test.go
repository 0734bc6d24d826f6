package mcp_test

import (
	"testing"

	"maven/app/mcp"
)

// TestLocalNamesInOneList: the tools of one list are named together; two that flatten alike,
// or whose name another server's row holds, still get names of their own, the same names they
// get one at a time.
func TestLocalNamesInOneList(t *testing.T) {
	f := newFixture(t)
	f.reconcile(t, "other", tool("x", "d", `{}`, true))
	// "s" + "list-tasks" flattens like "s" + "list_tasks" and "s" + "LIST TASKS".
	f.reconcile(t, "s", tool("list_tasks", "d", `{}`, true), tool("list-tasks", "d", `{}`, true),
		tool("LIST TASKS", "d", `{}`, true), tool("plain", "d", `{}`, true))
	names := map[string]bool{}
	for _, tl := range []string{"list_tasks", "list-tasks", "LIST TASKS", "plain"} {
		n := f.row(t, "s", tl).Name
		if names[n] {
			t.Fatalf("two tools share the name %q", n)
		}
		names[n] = true
	}
	if got := f.row(t, "s", "LIST TASKS").Name; got != "s_list_tasks" {
		t.Errorf("the first in name order keeps the plain name, got %q", got)
	}
	if got := f.row(t, "s", "list-tasks").Name; got != "s_list_tasks_"+mcp.NameSuffix("s", "list-tasks") {
		t.Errorf("list-tasks is %q", got)
	}
	if got := f.row(t, "s", "plain").Name; got != "s_plain" {
		t.Errorf("plain is %q", got)
	}
}
