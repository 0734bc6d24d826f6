package handlers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
)

// countingServer is a scripted MCP server over streamable HTTP that counts every request and
// remembers the Authorization headers it saw.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	auth     []string
}

func newCountingServer(t *testing.T, tools ...mcptest.ToolSpec) *countingServer {
	t.Helper()
	s := mcptest.NewScripted(tools...)
	t.Cleanup(s.Close)
	c := &countingServer{}
	h := s.HTTPHandler()
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		c.mu.Lock()
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Server.Close)
	return c
}

func (c *countingServer) authorizations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Compact(slices.Clone(c.auth))
}

// eventually polls cond every 10ms for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (vf *vaultFixture) serverState(name string) mcp.State {
	for _, s := range vf.mgr.Status() {
		if s.Name == name {
			return s.State
		}
	}
	return ""
}

func TestSecretServersAreDialledOnlyAfterUnlock(t *testing.T) {
	remote := newCountingServer(t, mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks", ReadOnly: true, Text: "none"})
	vf := newVaultFixture(t, fmt.Sprintf(`{"tasks": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${secret:tok}"}}}`, remote.URL+"/mcp"))
	if st := vf.serverState("tasks"); st != mcp.StateLocked {
		t.Fatalf("before any vault: %s", st)
	}

	// The vault is made and open, but the secret is not set yet: still not dialled.
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	time.Sleep(150 * time.Millisecond)
	if n := remote.requests.Load(); n != 0 || vf.serverState("tasks") != mcp.StateLocked {
		t.Fatalf("without its secret: %d requests, state %s", n, vf.serverState("tasks"))
	}

	// Setting the secret on the page lets the server connect, with the secret in its header.
	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "tok"))
	if r := b.htmx(http.MethodPost, "/secrets", url.Values{"name": {"tok"}, "value": {"tk-123"}}); r.Code != http.StatusOK {
		t.Fatalf("set secret: %d", r.Code)
	}
	eventually(t, "the server to connect", func() bool { return vf.serverState("tasks") == mcp.StateConnected })
	if got := remote.authorizations(); len(got) != 1 || got[0] != "Bearer tk-123" {
		t.Fatalf("Authorization headers seen: %q", got)
	}
	var row allowlist.Tool
	eventually(t, "the tool to be proposed", func() bool {
		rows, _ := vf.tools.List(t.Context(), allowlist.Filter{})
		for _, r := range rows {
			if r.Scope == "mcp:tasks" {
				row = r
				return true
			}
		}
		return false
	})
	if _, err := vf.tools.EnableTool(t.Context(), row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}

	// Restart: locked, so the server is never dialled, and nothing is withdrawn or disabled.
	vf.boot()
	remote.requests.Store(0)
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := remote.requests.Load(); n != 0 {
			t.Fatalf("a secret-needing server got %d requests while locked", n)
		}
		if st := vf.serverState("tasks"); st != mcp.StateLocked {
			t.Fatalf("state while locked: %s", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, _ := vf.tools.Get(t.Context(), row.ID); got.State != allowlist.StateEnabled {
		t.Fatalf("the enabled row is %s after a locked restart", got.State)
	}

	// Unlock: the server connects, and the row is as the owner left it.
	if rec, ans := vf.browser().unlockWith(a, nil); !ans.OK {
		t.Fatalf("unlock: %s", rec.Body.String())
	}
	eventually(t, "the server to connect after unlock", func() bool { return vf.serverState("tasks") == mcp.StateConnected })
	if remote.requests.Load() == 0 {
		t.Fatal("connected without a request")
	}
	if got, _ := vf.tools.Get(t.Context(), row.ID); got.State != allowlist.StateEnabled {
		t.Fatalf("the enabled row is %s after unlock", got.State)
	}

	// Lock: the session ends at once and the server shows locked again.
	vf.gate.Lock()
	if st := vf.serverState("tasks"); st != mcp.StateLocked {
		t.Fatalf("after lock: %s", st)
	}
	if _, err := vf.mgr.CallTool(t.Context(), "tasks", "list_tasks", nil); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("a call after lock: %v", err)
	}
}

// TestUnlockAnswerDoesNotWaitForBlackHoledServers measures the unlock answer of a daemon with ten
// black-holed servers that all need a secret against one with no servers, side by side in one run,
// and reports the ratio of the medians. The unlock only arms the wakes of the supervisors
// (docs/design.md#rule-13), so the ratio stays near 1; a dial on the unlock's path would add the
// dial timeout.
//
//	go test ./handlers -run TestUnlockAnswerDoesNotWaitForBlackHoledServers -v
func TestUnlockAnswerDoesNotWaitForBlackHoledServers(t *testing.T) {
	const rounds = 41
	var servers []string
	for i, addr := range mcptest.BlackHoles(t, 10) {
		servers = append(servers, fmt.Sprintf(`"hole%d": {"type": "http", "url": "http://%s/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}}`, i, addr))
	}
	none := newVaultFixture(t, "")
	holes := newVaultFixture(t, "{"+strings.Join(servers, ", ")+"}")
	var auths [2]*authtest.Authenticator
	for i, vf := range []*vaultFixture{none, holes} {
		auths[i] = authtest.New(testOrigin)
		vf.setUp(auths[i])
		if err := vf.gate.SetSecret(t.Context(), "tok", []byte("t")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the supervisors to dial the black holes", func() bool {
		for _, s := range holes.mgr.Status() {
			if s.State != mcp.StateConnecting {
				return false
			}
		}
		return true
	})

	allIn := func(st mcp.State) func() bool {
		return func() bool {
			for _, s := range holes.mgr.Status() {
				if s.State != st {
					return false
				}
			}
			return true
		}
	}
	took := [2][]time.Duration{}
	for range rounds {
		for i, vf := range []*vaultFixture{none, holes} {
			vf.gate.Lock()
			// Let the supervisors settle outside the measured window, so the two sides are
			// measured alike.
			if vf == holes {
				eventually(t, "the servers to lock", allIn(mcp.StateLocked))
			}
			b := vf.browser()
			var begin beginAnswer
			mustOK(t, "unlock begin", b.postJSON("/unlock/begin", map[string]any{}, &begin))
			cred, err := auths[i].Get(begin.Options)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rec := b.postJSON("/unlock/finish", map[string]any{"credential": jsonRaw(cred)}, nil)
			took[i] = append(took[i], time.Since(start))
			mustOK(t, "unlock finish", rec)
			if vf == holes {
				eventually(t, "the servers to dial", allIn(mcp.StateConnecting))
			}
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	m0, m10 := median(took[0]), median(took[1])
	ratio := float64(m10) / float64(m0)
	t.Logf("unlock answer, median of %d: no servers %v, 10 black-holed servers %v: ratio %.2f", rounds, m0, m10, ratio)
	// Generous: a dial on the unlock's path would cost the 30 s dial timeout, not a few ms.
	if ratio > 3 && m10-m0 > 20*time.Millisecond {
		t.Fatalf("the unlock answer is %.1f× slower with black-holed servers", ratio)
	}
}
