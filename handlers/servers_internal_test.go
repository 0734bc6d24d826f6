package handlers

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"maven/app/mcp"
	"maven/app/vault"
	"maven/db"
	"maven/internal/testkit/testdb"
	"maven/views"
)

// TestLockedActionSaysWhatTheServerWaitsFor: a locked server's card names what is sealed, a
// secret or an OAuth sign-in, and sends the owner where that is given.
func TestLockedActionSaysWhatTheServerWaitsFor(t *testing.T) {
	tests := []struct {
		name        string
		st          mcp.ServerStatus
		vaultLocked bool
		want        []string // words the text must say
		wantNot     []string // words it must not
		url         string
	}{
		{"secret, locked", mcp.ServerStatus{UsesSecrets: true}, true, []string{"secret", "unlock"}, []string{"sign-in"}, "/unlock"},
		{"sign-in, locked", mcp.ServerStatus{SignInSealed: true}, true, []string{"sign-in", "unlock"}, []string{"secret"}, "/unlock"},
		{"both, locked", mcp.ServerStatus{UsesSecrets: true, SignInSealed: true}, true, []string{"secret", "sign-in", "unlock"}, nil, "/unlock"},
		{"secret not set", mcp.ServerStatus{UsesSecrets: true}, false, []string{"secret", "not set"}, []string{"sign-in"}, "/secrets"},
		{"sign-in, just unlocked", mcp.ServerStatus{SignInSealed: true}, false, []string{"sign-in"}, []string{"secret"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, url, _ := lockedAction(tt.st, tt.vaultLocked)
			lower := strings.ToLower(action)
			for _, w := range tt.want {
				if !strings.Contains(lower, w) {
					t.Errorf("%q does not say %q", action, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(lower, w) {
					t.Errorf("%q says %q", action, w)
				}
			}
			if url != tt.url {
				t.Errorf("link %q, want %q", url, tt.url)
			}
		})
	}
}

// TestServerRowNamesWhatItsLastErrorIs: a server in trouble shows its last error as one; a
// server that refused Maven and waits for a sign-in shows what it answered, not as an error;
// every state is shown in its words, open when the owner may want to act.
func TestServerRowNamesWhatItsLastErrorIs(t *testing.T) {
	tmpl, err := views.Parse(func(name string) string { return name })
	if err != nil {
		t.Fatal(err)
	}
	// A daemon without a vault: the card offers no Sign in, and says what the server answered.
	gate, err := vault.NewGate(t.Context(), vault.New(db.NewVaultStore(testdb.Open(t)), "localhost", time.Now), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{vault: gate}
	for _, c := range []struct {
		state     mcp.State
		label     string
		tone      string
		open      bool
		wantShown bool
	}{
		{mcp.StateFailed, "Last error", "trouble", true, true},
		{mcp.StateBackoff, "Last error", "trouble", true, true},
		{mcp.StateNeedsAuth, "Last answer", "calm", true, true},
		{mcp.StateConnected, "Last error", "ok", false, false},
		{mcp.StateConnecting, "Last error", "calm", false, false},
		{mcp.StateAwaitingApproval, "Last error", "calm", true, false},
	} {
		t.Run(string(c.state), func(t *testing.T) {
			row := s.serverRow(mcp.ServerStatus{Name: "far", State: c.state, LastError: "401 Unauthorized"})
			if row.StateLabel != c.state.Words() || row.Tone != c.tone || row.Open != c.open || row.LastErrorLabel != c.label {
				t.Fatalf("row %+v: want the words %q, tone %s, open %v, label %q", row, c.state.Words(), c.tone, c.open, c.label)
			}
			var buf strings.Builder
			if err := tmpl.Partial(&buf, views.PartialServers, views.ServersCard{Servers: []views.ServerRow{row}}); err != nil {
				t.Fatal(err)
			}
			shown := strings.Contains(buf.String(), "<dt>"+c.label+"</dt>")
			if shown != c.wantShown || strings.Contains(buf.String(), "401") != c.wantShown {
				t.Fatalf("the card shows %q: %v, want %v:\n%s", c.label, shown, c.wantShown, buf.String())
			}
		})
	}
}
