package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/app/oauth/oauthtest"
	"maven/internal/daemontest"
	"maven/internal/testenv"
)

// TestLockLeavesNoKeyOrSecretInMemory is docs/design.md#rule-22 against the real binary: with two
// servers using a secret (a header of an http server, the environment of a stdio server) and
// one signed in with OAuth, `maven lock` must leave neither the data key, nor the secret's
// value, nor the OAuth access or refresh token, nor the secret of the client Maven registered
// dynamically, in the daemon's memory; not even while a sign-in is in progress, which holds
// that client's secret until its callback comes. The test reads
// /proc/PID/mem the way another process would (CI runs as root, which may read any process); a
// first scan before the lock proves the scan finds them.
func TestLockLeavesNoKeyOrSecretInMemory(t *testing.T) {
	node, memoryServer := testenv.NPMPeer(t, "mcp-server-memory")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	secret := "mvn-" + rand.Text() + rand.Text()
	remote := newLockedMCP(t, "Bearer "+secret)
	signed := oauthtest.New(t, mcptest.NewScripted(mcptest.ToolSpec{Name: "list_notes", ReadOnly: true, Text: "none"}).HTTPHandler(),
		oauthtest.Options{ScopesSupported: []string{"notes", "offline_access"}})
	cfg := filepath.Join(dir, "maven.json")
	conf := fmt.Sprintf(`{"mcpServers": {
		"tasks": {"type": "http", "url": "http://%s/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}},
		"memory": {"command": %q, "args": [%q], "env": {"MEMORY_TOKEN": "${secret:tok}"}},
		"notes": {"type": "http", "url": %q}}}`,
		remote.addr, node, memoryServer, signed.URL)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d, code := startWithSecret(t, data, cfg, "tok", secret)
	dek := recoveryDEK(t, data, code)
	owner, a := signInAsOwner(t, d, "notes")
	servers := []string{"tasks", "memory", "notes"}
	waitFor(t, 20*time.Second, func() bool { return serversIn(t, data, "connected", servers...) })
	access, refresh := signed.Tokens()
	if len(access) != 1 || len(refresh) != 1 {
		t.Fatalf("tokens issued: %d access, %d refresh; want one of each", len(access), len(refresh))
	}
	clients := signed.ClientSecrets()
	if len(clients) != 1 {
		t.Fatalf("%d clients registered; want one", len(clients))
	}

	pid := d.cmd.Process.Pid
	patterns := map[string][]byte{
		"secret":                   []byte(secret),
		"secret-base64":            []byte(base64.StdEncoding.EncodeToString([]byte(secret))),
		"data key":                 dek,
		"recovery code":            []byte(code),
		"recovery code, canonical": []byte(strings.ReplaceAll(code, "-", "")),
		"oauth access token":       []byte(access[0]),
		"oauth refresh token":      []byte(refresh[0]),
		"oauth client secret":      []byte(clients[0]),
	}
	before, _ := waitForScan(t, pid, patterns, 5*time.Second, func(c map[string]int) bool {
		return c["secret"] > 0 && c["data key"] > 0 && c["oauth access token"] > 0 && c["oauth refresh token"] > 0 && c["oauth client secret"] > 0
	})
	t.Logf("unlocked, two servers using the secret, one signed in: found %v", before)
	for _, p := range []string{"secret", "data key", "oauth access token", "oauth refresh token", "oauth client secret"} {
		if before[p] == 0 {
			t.Fatalf("the scan does not find the %s while unlocked (%v): it proves nothing", p, before)
		}
	}

	// The authorization server forgets the tokens, and a reload that gives the server a header
	// redials it: it needs a sign-in again, and one begins (with the registered client, opened
	// from the vault) and waits for its callback.
	signed.Revoke()
	if err := os.WriteFile(cfg, []byte(strings.Replace(conf, `"url": "`+signed.URL+`"`, `"url": "`+signed.URL+`", "headers": {"X-Client": "maven"}`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := maven(t, data, "reload"); err != nil {
		t.Fatalf("reload: %v %s", err, out)
	}
	waitFor(t, 20*time.Second, func() bool { return serversIn(t, data, "needs-auth", "notes") })
	waitFor(t, 20*time.Second, func() bool {
		_, shown, err := owner.SignInShown(context.Background(), "notes")
		return err == nil && shown
	})
	errAway := errors.New("the owner is away at the authorization server")
	if err := owner.SignIn(context.Background(), a, "notes", func(context.Context, string) (*url.URL, error) { return nil, errAway }); !errors.Is(err, errAway) {
		t.Fatalf("begin a second sign-in: %v", err)
	}

	if out, err := maven(t, data, "lock"); err != nil || !strings.Contains(out, "locked") {
		t.Fatalf("lock: %v %s", err, out)
	}
	// The server that waits for a sign-in goes on waiting; the others wait for an unlock.
	waitFor(t, 10*time.Second, func() bool { return serversIn(t, data, "locked", "tasks", "memory") })
	after, hits := waitForScan(t, pid, patterns, 40*time.Second, func(c map[string]int) bool { return len(c) == 0 })
	t.Logf("after maven lock: found %v", after)
	for _, h := range hits {
		t.Errorf("after lock: %s at %#x (%s)", h.Pattern, h.Addr, h.Region)
	}
}

// serversIn reports whether every one of names is in state.
func serversIn(t *testing.T, data, state string, names ...string) bool {
	s := mcpServers(t, data)
	for _, n := range names {
		if s[n].State != state {
			return false
		}
	}
	return true
}

// signInAsOwner registers a passkey through a setup link and signs in to server from its card
// with it, at an authorization server that approves at once; it returns the owner's browser
// and passkey.
func signInAsOwner(t *testing.T, d *daemonProc, server string) (*daemontest.Browser, *authtest.Authenticator) {
	t.Helper()
	link := newSetupLink(t, d.data)
	ctx := context.Background()
	a := authtest.New(d.proc.Origin())
	b := daemontest.NewBrowser(d.proc)
	if _, err := b.Register(ctx, link.URL, a, "Phone"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		_, shown, err := b.SignInShown(ctx, server)
		return err == nil && shown
	})
	if err := b.SignIn(ctx, a, server, oauthtest.Authorize); err != nil {
		t.Fatal(err)
	}
	return b, a
}
