package e2e

// The accessibility check: axe-core (pinned in package.json, installed by `npm ci` in
// scripts/test) run inside the page under test.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var axeSource struct {
	once sync.Once
	js   string
	err  error
}

// loadAxe reads axe-core's script from the repository's node_modules.
func loadAxe(t *testing.T) string {
	t.Helper()
	axeSource.once.Do(func() {
		b, err := os.ReadFile(filepath.Join("..", "node_modules", "axe-core", "axe.min.js"))
		axeSource.js, axeSource.err = string(b), err
	})
	requireE2E(t, axeSource.err)
	return axeSource.js
}

// axeViolation is one rule axe found broken, with where.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// runAxe runs axe-core on the tab's page as it is now (injected through the DevTools protocol,
// which the page's Content-Security-Policy does not govern) and returns its serious and
// critical violations.
func runAxe(t *testing.T, tb *tab) []axeViolation {
	t.Helper()
	if _, err := tb.Page.Evaluate(loadAxe(t)); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	var found []axeViolation
	evalJSON(t, tb.Page, `async () => {
		const r = await axe.run(document, {resultTypes: ["violations"]});
		return r.violations
			.filter((v) => v.impact === "serious" || v.impact === "critical")
			.map((v) => ({id: v.id, impact: v.impact, help: v.help,
				targets: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}));
	}`, nil, &found)
	return found
}

// checkAxe fails the test on any serious or critical violation on the tab's page, naming each,
// and logs that the page passed.
func checkAxe(t *testing.T, tb *tab, what string) {
	t.Helper()
	found := runAxe(t, tb)
	if len(found) == 0 {
		t.Logf("axe: %s (%s): no serious or critical violation", what, tb.Page.URL())
		return
	}
	var b strings.Builder
	for _, v := range found {
		fmt.Fprintf(&b, "\n  %s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, " | "))
	}
	tb.Screenshot("axe-" + strings.ReplaceAll(what, " ", "-"))
	t.Errorf("axe: %s (%s):%s", what, tb.Page.URL(), b.String())
}
