// Package testenv is what tests need of the machine beyond Go: the npm MCP servers pinned in
// package.json, a browser. A test whose need is missing is skipped where a developer has not
// installed it, and fails where the environment demands everything (CI), so that a skipped
// suite is never a silent hole.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The variables that turn a missing need into a failure: "1" demands it.
const (
	RequirePeers = "MAVEN_REQUIRE_PEERS" // the npm peers (`npm ci`) and Node
	RequireE2E   = "MAVEN_REQUIRE_E2E"   // the browser and its driver
)

// Missing ends t because something it needs is not installed, as msg says: it fails when the
// variable require is "1", and otherwise skips, adding how to install it.
func Missing(t testing.TB, require, how, msg string) {
	t.Helper()
	if os.Getenv(require) == "1" {
		t.Fatalf("%s (%s=1)", msg, require)
	}
	t.Skipf("%s; %s, or set %s=1 to fail instead of skipping", msg, how, require)
}

// npmHow is how the npm peers are installed.
const npmHow = "run `npm ci` at the module root (scripts/test does)"

// MissingPeer is Missing for the npm peers.
func MissingPeer(t testing.TB, format string, args ...any) {
	t.Helper()
	Missing(t, RequirePeers, npmHow, fmt.Sprintf(format, args...))
}

// NPMPeer returns node and the bin script node_modules/.bin/<bin> of an npm package pinned in
// package.json, or ends t as MissingPeer does.
func NPMPeer(t testing.TB, bin string) (node, script string) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		MissingPeer(t, "module root: %v", err)
	}
	script = filepath.Join(root, "node_modules", ".bin", bin)
	if _, err := os.Stat(script); err != nil {
		MissingPeer(t, "npm peer %s is not installed: %v", bin, err)
	}
	if node, err = exec.LookPath("node"); err != nil {
		MissingPeer(t, "node is not on PATH")
	}
	return node, script
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
