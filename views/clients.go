package views

// The pages of the agents' clients (docs/design.md#rule-29).
const (
	// PageConsent is /oauth/authorize: a client asks to connect, and the owner answers.
	PageConsent = "consent"
	// PageClients is /clients: every client, its tools, and Revoke.
	PageClients = "clients"
	// PartialClientList is /clients' list, which its actions swap.
	PartialClientList = "clients/_list"
)

// What the consent page asks of the owner before the request itself.
const (
	NeedUnlock = "unlock"  // Maven is locked: unlocking signs in too
	NeedSignIn = "sign-in" // no owner is signed in
)

// ConsentPage is a client's authorization request as the owner sees it: who asks, where its
// answer goes, and the tools it would see.
type ConsentPage struct {
	Page
	// Need is NeedUnlock or NeedSignIn while the owner must do that first; Next is this
	// request's URL, where the browser comes back afterwards.
	Need   string
	Next   string
	Client ConsentClient
	// Request names the request in the form; Tools are the enabled rows, each ticked.
	Request string
	Tools   []ConsentTool
}

// ConsentClient is what the consent page says of a client. Everything it sent is Text, its
// hidden characters shown (docs/design.md#rule-25).
type ConsentClient struct {
	Name Text
	ID   Text
	// How is how it authenticates, in words; Document is its metadata document's URL, for a
	// client named by one.
	How      string
	Document bool
	// RedirectHost is where the answer goes, RedirectURI in full; Resource what the token will
	// open.
	RedirectHost Text
	RedirectURI  Text
	Resource     string
	// Approved says the owner approved this client before (Revoked: and then revoked it).
	Approved, Revoked bool
}

// ConsentTool is one enabled row a client could see.
type ConsentTool struct {
	ID          int64
	Name        Text
	Where       string // "local command" or the MCP server's name
	Destructive bool
}

// ClientsPage is /clients.
type ClientsPage struct {
	Page
	List ClientList
}

// ClientList is every client, newest first, and the enabled rows a client's tools are chosen
// from.
type ClientList struct {
	Clients []ClientRow
	Tools   []ConsentTool
	Message string // what the last action did
}

// ClientRow is one client on /clients.
type ClientRow struct {
	ID         string // data-client
	Name       Text
	Label      string // the name as it is, for the buttons' accessible names
	IDText     Text
	How        string // how it authenticates, in words
	State      string // its state, and StateWords in words
	StateWords string
	Redirects  []Text
	// AllTools, or the names of its tools (ToolIDs ticks them in its form).
	AllTools                    bool
	ToolNames                   []Text
	ToolIDs                     map[int64]bool
	Approved, LastSeen, Created Time
	Calls                       int64
	// Revocable and Editable: it is approved.
	Revocable bool
}
