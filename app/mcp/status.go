package mcp

import (
	"strings"
	"time"

	"maven/app/oauth"
	"maven/internal/enum"
)

// State is where a server's connection stands (docs/design.md#rule-14).
type State string

// The connection states.
const (
	StateLocked State = "locked" // needs a secret that is not available; never dialled
	// StateAwaitingApproval is a stdio server whose command line the owner has not approved
	// yet (docs/design.md#rule-25): never started until they do, and nothing is wrong with it.
	StateAwaitingApproval State = "awaiting-approval"
	// StateNeedsAuth is a remote server that refused Maven (HTTP 401, or 403 for more scope)
	// and waits for the owner to sign in to it; it is not dialled until they do.
	StateNeedsAuth  State = "needs-auth"
	StateConnecting State = "connecting" // dialling and initializing
	StateConnected  State = "connected"  // a live session
	StateBackoff    State = "backoff"    // waiting to redial after a failure
	StateFailed     State = "failed"     // a configuration that cannot work; retried slowly
	StateDisabled   State = "disabled"   // "disabled": true in the config; never dialled
)

// stateWords is what is said of a state.
type stateWords struct {
	// words are what the servers card and `maven status` say of it.
	words string
	// needsOwner: the owner has something to do (approve it, sign in to it, unlock Maven or set
	// a secret), and nothing is wrong with it.
	needsOwner bool
	// trouble: it failed, and is shown with its last error.
	trouble bool
}

// states is every state, in the order of counts and gauges, with what is said of it beside it.
// A state is added here, or TestEveryStateHasItsWords fails (docs/style.md#enumerations).
var states = enum.Table[State, stateWords]{
	{Member: StateLocked, Said: stateWords{words: "locked", needsOwner: true}},
	{Member: StateAwaitingApproval, Said: stateWords{words: "awaiting your approval", needsOwner: true}},
	{Member: StateNeedsAuth, Said: stateWords{words: "needs you to sign in", needsOwner: true}},
	{Member: StateConnecting, Said: stateWords{words: "connecting"}},
	{Member: StateConnected, Said: stateWords{words: "connected"}},
	{Member: StateBackoff, Said: stateWords{words: "waiting to retry", trouble: true}},
	{Member: StateFailed, Said: stateWords{words: "failed", trouble: true}},
	{Member: StateDisabled, Said: stateWords{words: "disabled"}},
}

// States returns every server state in one order, for counts and gauges.
func States() []State { return states.Members() }

// said is what is said of s; a state this daemon does not know (a newer daemon's, read from
// its status) reads as its name, and neither needs the owner nor is trouble.
func (s State) said() stateWords {
	if said, ok := states.Of(s); ok {
		return said
	}
	return stateWords{words: strings.ReplaceAll(string(s), "-", " ")}
}

// Words are what the owner is told of the state: "waiting to retry".
func (s State) Words() string { return s.said().words }

// NeedsOwner reports whether the server waits for the owner to do something (approve its
// command line, sign in to it, unlock Maven, set a secret) while nothing is wrong with it.
func (s State) NeedsOwner() bool { return s.said().needsOwner }

// Trouble reports whether the state is a failure, which the owner is shown with its last error.
func (s State) Trouble() bool { return s.said().trouble }

// Recorded is the state as the activity feed records it: a redial's backoff is part of
// connecting, so a server that is down adds an entry when it goes down and when it comes back,
// not one per retry.
func (s State) Recorded() State {
	if s == StateBackoff {
		return StateConnecting
	}
	return s
}

// ServerStatus is what the owner is shown about one server (docs/design.md#rule-14).
type ServerStatus struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"` // "stdio", "http" or "sse"
	Target    string    `json:"target"`    // command line or URL, secrets never expanded
	State     State     `json:"state"`
	Trust     string    `json:"trust"` // TrustLocalProcess, TrustLoopback, …
	TrustText string    `json:"trust_text"`
	LastError string    `json:"last_error"`
	Since     time.Time `json:"since"` // when State was entered
	Tools     int       `json:"tools"` // tools in the last complete list
	// AuthServer and AuthScopes are what a server in StateNeedsAuth asks the owner to sign in
	// for: the authorization server and the scopes Maven would request (space-separated).
	AuthServer string `json:"auth_server,omitempty"`
	AuthScopes string `json:"auth_scopes,omitempty"`
	// AuthEndpoint is where the owner's browser goes to sign in: the authorization server's
	// authorization endpoint, which its metadata may put on another host.
	AuthEndpoint string `json:"auth_endpoint,omitempty"`
	// UsesSecrets and SignInSealed say what a locked server waits for: secrets its config
	// refers to, an OAuth sign-in sealed in the vault, or both.
	UsesSecrets  bool `json:"uses_secrets,omitempty"`
	SignInSealed bool `json:"sign_in_sealed,omitempty"`

	// LastStderr is, after a stdio server's process exited by itself, the last lines it wrote
	// on stderr (newline-separated, at most 5, each cut to 200 bytes, secret values masked);
	// "" otherwise.
	LastStderr string `json:"last_stderr,omitempty"`
}

// SignInDigest is what a step-up to sign in to this server names (oauth.Digest of the server,
// and of the authorization server and scopes its card shows).
func (st ServerStatus) SignInDigest() string {
	return oauth.Digest(st.Name, st.AuthServer, st.AuthScopes)
}
