package handlers

import (
	"strings"
	"testing"

	"maven/app/mcp"
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
