package clients

import (
	"errors"
	"time"

	"maven/internal/enum"
)

// Kind is how a client authenticates.
type Kind string

// The kinds of client.
const (
	// KindStatic holds a token `maven client add` printed; its id is "static:NAME".
	KindStatic Kind = "static"
	// KindRegistered registered itself (RFC 7591); its id is one Maven chose.
	KindRegistered Kind = "registered"
	// KindMetadata is named by the https URL of its client ID metadata document, which is its id.
	KindMetadata Kind = "metadata"
)

// kinds is every kind, in the order the docs list them, with the words /clients and `maven
// client list` say of it (docs/style.md#enumerations).
var kinds = enum.Table[Kind, string]{
	{Member: KindStatic, Said: "static token"},
	{Member: KindRegistered, Said: "registered itself"},
	{Member: KindMetadata, Said: "client metadata document"},
}

// Kinds returns every kind of client.
func Kinds() []Kind { return kinds.Members() }

// Words say how a client of kind k authenticates; a kind this daemon does not know reads as
// its name.
func (k Kind) Words() string {
	if w, ok := kinds.Of(k); ok {
		return w
	}
	return string(k)
}

// State is where a client stands.
type State string

// The client states.
const (
	// StatePending: registered, never consented to. It expires PendingLifetime after it
	// registered, and no token is ever issued to it.
	StatePending State = "pending"
	// StateApproved: the owner approved it (a consent behind a step-up, or `maven client add`);
	// its tokens work.
	StateApproved State = "approved"
	// StateRevoked: the owner revoked it; none of its tokens works. A registered client may be
	// consented to again, which is a new approval.
	StateRevoked State = "revoked"
)

// states is every state, in the order /clients groups them, with the words /clients and
// `maven client list` say of it (docs/style.md#enumerations).
var states = enum.Table[State, string]{
	{Member: StateApproved, Said: "approved"},
	{Member: StatePending, Said: "waiting for your consent"},
	{Member: StateRevoked, Said: "revoked"},
}

// States returns every client state.
func States() []State { return states.Members() }

// Words say what state s means; a state this daemon does not know reads as its name.
func (s State) Words() string {
	if w, ok := states.Of(s); ok {
		return w
	}
	return string(s)
}

// Client is one client as the owner sees it.
type Client struct {
	ID    string
	Kind  Kind
	State State
	// Name is what the client calls itself (a registration's or a document's client_name), or
	// the NAME of `maven client add`. It is the client's word, never proof.
	Name string
	// RedirectURIs are where its authorization answers may go (none for a static token).
	RedirectURIs []string
	// GrantTypes it may use: "authorization_code", and "refresh_token" if it asked for it.
	GrantTypes []string
	// AuthMethod is how it authenticates at the token endpoint: "none" (a public client),
	// "client_secret_post" or "client_secret_basic"; "" for a static token.
	AuthMethod string
	// SecretHash is the SHA-256 of its client secret or static token; nil for a public client.
	SecretHash []byte
	// Scope is the scope it registered with, returned as it was: scopes grant nothing here.
	Scope string
	// Policy: every enabled tool, now and later, or only the rows ToolIDs names.
	AllTools bool
	ToolIDs  []int64
	// CreatedAt is when it registered or was added; ApprovedAt when the owner last approved it
	// (zero if never); LastSeen when one of its tokens last worked (zero if never); RevokedAt
	// when it was revoked.
	CreatedAt, ApprovedAt, LastSeen, RevokedAt time.Time
	// Calls counts the tool calls its agents made.
	Calls int64
}

// Grant is what a verified client token speaks for (the seam app/agents builds on).
type Grant struct {
	ClientID string    // the client's id: a registered client's, a document's URL, "static:NAME"
	Name     string    // the client's name as the owner sees it
	AllTools bool      // every enabled row, now and later
	ToolIDs  []int64   // else only these allowlist rows
	Expires  time.Time // when the token stops working; zero for a static token
}

// grantOf is the grant of c's policy.
func grantOf(c Client) Grant {
	return Grant{ClientID: c.ID, Name: c.Name, AllTools: c.AllTools, ToolIDs: c.ToolIDs}
}

// Errors of the package.
var (
	// ErrInvalidToken is every refusal of an agent's token: unknown, expired, revoked, for
	// another resource, or of a client that is not approved. Which one is for the log only.
	ErrInvalidToken = errors.New("invalid token")
	// ErrNotFound means no approved client has that id (or name).
	ErrNotFound = errors.New("client not found")
	// ErrExists means a static client of that name is already approved.
	ErrExists = errors.New("a client of that name exists")
	// ErrInvalid means a name, a tool set or a client's metadata that cannot be used.
	ErrInvalid = errors.New("invalid client")
	// ErrTooMany means the registrations never consented to are at their cap.
	ErrTooMany = errors.New("too many clients wait for consent")
	// ErrNoRequest means no authorization request of this browser session has that id: used
	// already, expired, or begun in another session.
	ErrNoRequest = errors.New("no such authorization request")
	// ErrAmbiguous means a name that more than one client has.
	ErrAmbiguous = errors.New("more than one client has that name")
)
