package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/app/mcp/mcptest"
)

// unlockSide is one daemon of the unlock comparison and its owner's passkey.
type unlockSide struct {
	d    *daemon
	a    *authtest.Authenticator
	cfg  string
	data string
	// holes, if set, are its servers' black holes, to wait for around each unlock.
	holes *mcptest.BlackHoleSet
}

// unlockSetup is what one side of the unlock comparison runs with: its config, its servers'
// black holes if any, and what is done to it once it booted locked (nil for nothing).
type unlockSetup struct {
	cfg     []byte
	holes   *mcptest.BlackHoleSet
	prepare func(*testing.T, *unlockSide)
}

// benchUnlock times the answer to POST /unlock/finish of two real daemons side by side: one
// with no MCP servers, one with the black-holed servers that all need the secret tok.
func benchUnlock(t *testing.T, bin string, holes *mcptest.BlackHoleSet, rounds int) (zero, holed []time.Duration) {
	return benchUnlockOf(t, bin, [2]unlockSetup{{cfg: []byte(`{}`)}, {cfg: blackHoleConfig(holes.Addrs, true), holes: holes}}, rounds)
}

// benchUnlockOf times the answer to POST /unlock/finish of two real daemons side by side, set
// up as setups say. Each is set up through its setup link with a PRF passkey (which makes the
// vault), given the secret tok, and restarted, so it boots locked. Then, round after round, each
// is locked over IPC, a new browser runs /unlock/begin and the authenticator's answer is posted
// to /unlock/finish: only that request is timed. Outside the timed window a black-holed side is
// let settle, so both sides are measured alike: before, every server locked and every dial of
// the round before closed at the black hole's end; after, every server dialling and every dial
// arrived there.
func benchUnlockOf(t *testing.T, bin string, setups [2]unlockSetup, rounds int) (first, second []time.Duration) {
	sides := [2]*unlockSide{}
	for i, setup := range setups {
		dir := t.TempDir()
		s := &unlockSide{cfg: writeFile(t, dir, "maven.json", withBrowsersFromManyAddresses(t, setup.cfg)), data: filepath.Join(dir, "data"), holes: setup.holes}
		s.d = startDaemon(t, bin, s.data, s.cfg)
		s.a = authtest.New(s.d.Origin())
		newBrowser(t, s.d).register(s.a, s.d.setupToken(t), true)
		s.d.call(t, "secret_set", map[string]any{"name": "tok", "value": []byte("t0k")}, nil)
		s.d.stop(t)
		s.d = startDaemon(t, bin, s.data, s.cfg)
		// A new port is a new origin; the passkey is bound to the RP ID (localhost), not the port.
		s.a.Origin = s.d.Origin()
		if s.holes != nil {
			s.d.waitServers(t, "the servers to wait locked", func(st mcp.ServerStatus) bool { return st.State == mcp.StateLocked })
		}
		if setup.prepare != nil {
			setup.prepare(t, s)
		}
		sides[i] = s
	}

	unlock := func(s *unlockSide) time.Duration {
		s.d.call(t, "lock", nil, nil)
		if s.holes != nil {
			s.d.waitServers(t, "the servers to lock", func(st mcp.ServerStatus) bool { return st.State == mcp.StateLocked })
			waitFor(t, "the dials to close", 60*time.Second, func() bool { return s.holes.Open() == 0 })
		}
		b := newBrowser(t, s.d)
		var begin beginAnswer
		b.postJSON("/unlock/begin", map[string]any{}, &begin)
		cred, err := s.a.Get(begin.Options)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		status, body := b.postJSONStatus("/unlock/finish", map[string]any{"credential": json.RawMessage(cred)})
		took := time.Since(start)
		var ans struct {
			OK bool `json:"ok"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &ans) != nil || !ans.OK {
			t.Fatalf("unlock: %d %s\n%s", status, body, s.d.Log.String())
		}
		if s.holes != nil {
			s.d.waitServers(t, "the servers to dial", func(st mcp.ServerStatus) bool { return st.State != mcp.StateLocked })
			waitFor(t, "the dials to arrive", 60*time.Second, func() bool { return s.holes.Open() >= len(s.holes.Addrs) })
		}
		return took
	}
	unlock(sides[0])
	unlock(sides[1])
	var took [2][]time.Duration
	for r := range rounds {
		for _, i := range order(r) {
			took[i] = append(took[i], unlock(sides[i]))
		}
	}
	for _, s := range sides {
		s.d.stop(t)
		_ = os.RemoveAll(s.data)
	}
	return took[0], took[1]
}

// reportUnlock adds the unlock answer with 0 vs the black-holed servers needing a secret.
func reportUnlock(t *testing.T, e *benchEnv, rep *report) {
	unlock0, holed := benchUnlock(t, e.bin, e.holes, e.n(101))
	rep.versus(fmt.Sprintf("Unlock answer (`POST /unlock/finish`), %d black-holed servers needing a secret", len(e.holes.Addrs)),
		holed, unlock0, "no servers", targetUnlockRatio)
	rep.raw("unlock answer, no servers", unlock0)
	rep.raw(fmt.Sprintf("unlock answer, %d black-holed servers", len(e.holes.Addrs)), holed)
}
