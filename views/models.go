package views

// Page is what every full page carries for the layout.
type Page struct {
	Title    string
	SignedIn bool
	Nav      string // the current section: "tools", "passkeys" or "secrets"
	// Locked hides the links that would only lead back to /unlock.
	Locked bool
	// CanLock shows the Lock button: a vault exists and is unlocked.
	CanLock bool
	// RecoveryUsed warns that the recovery code has unlocked the vault and should be replaced.
	RecoveryUsed bool
}

// Segment is a run of text, or one hidden character spelled out as its code point.
type Segment struct {
	Text   string
	Hidden bool
	Why    string // what the hidden character is, for its tooltip
}

// Text is text from outside Maven, split so hidden characters show (see app/reveal).
type Text []Segment

// ToolsPage is the /tools page.
type ToolsPage struct {
	Page
	List    ToolList
	Servers ServersCard
}

// ToolList is the searchable, paginated list of allowlist rows; the search box swaps it.
type ToolList struct {
	Query  string
	Counts []StateCount // every state, proposed first, counting the rows that match Query
	Groups []ToolGroup  // this page's rows, grouped by state
	Total  int          // rows that match Query
	Pager  Pager
	Empty  string // what to say when no row matches
	// RefreshURL renders this list again (same query, same page): the list reloads itself from
	// it after an Enable or Disable, so rows move to their new group and the counts follow.
	RefreshURL string
}

// StateCount is how many matching rows are in one state.
type StateCount struct {
	State string
	Label string
	Count int
}

// ToolGroup is the rows of one state on this page.
type ToolGroup struct {
	State string
	Label string
	Count int // rows in this state overall (all pages)
	Rows  []ToolRow
}

// Pager links the pages of a list; an empty URL means there is no such page.
type Pager struct {
	Page, Pages int
	From, To    int // the 1-based positions of the first and last row shown
	PrevURL     string
	NextURL     string
}

// ToolRow is one allowlist row.
type ToolRow struct {
	ID          int64
	Name        string // as stored, for data-tool-name
	NameText    Text
	RemoteName  Text   // the MCP tool's own name, when it differs from Name
	Command     Text   // a local command's argv as a command line
	Where       string // "Local command" or "MCP server …"
	State       string
	StateLabel  string
	Destructive bool
	ReadOnly    bool
	Description Text
	Schema      Text // the input schema, indented
	HasSchema   bool
	Provenance  Text
	Diff        []FieldDiff // what changed: since the owner approved the row, or since their page showed it
	DiffTitle   string      // which of the two
	// ChangedSinceShown marks a row answered to an approval refused because it changed after
	// the owner's page showed it.
	ChangedSinceShown bool
	RenameOf          Text
	Invisible         bool // name, description or schema hold hidden characters
	Mixed             bool // the name mixes writing systems
	// Fingerprint is what an approval of the row binds to (allowlist.Tool.ApprovalDigest), shown
	// as data-fingerprint; EnableVals the htmx values of its Enable button, which carry it.
	Fingerprint string
	EnableVals  string
	CanEnable   bool
	CanDisable  bool
	EnabledAt   string
	UpdatedAt   string
}

// FieldDiff is one field of a redefined tool, as approved and as declared now.
type FieldDiff struct {
	Field string
	Old   Text
	New   Text
	Block bool // show preformatted (schemas)
}

// ServersCard is the "MCP servers" card.
type ServersCard struct {
	Poll    bool // refresh itself every few seconds
	Servers []ServerRow
	// Pending are the stdio command lines that wait for the owner's approval to start.
	Pending []PendingCommand
}

// PendingCommand is a stdio server's command line that starts only once the owner approves it.
type PendingCommand struct {
	ID      int64
	Server  string
	Display string // the exact command line, environment and working directory
	SeenAt  string
}

// ServerRow is one MCP server's status.
type ServerRow struct {
	Name       string
	Transport  string
	Target     string
	State      string
	StateLabel string
	Trouble    bool   // the state is one the owner may want to act on
	LastError  Text   // written by the far end: hidden characters spelled out
	Since      string // relative ("3 minutes ago")
	SinceISO   string
	Tools      int
	Trust      string
	TrustText  string
}

// PasskeysPage is the /passkeys page.
type PasskeysPage struct {
	Page
	List PasskeyList
}

// PasskeyList is the owner's passkeys; rename and remove swap it.
type PasskeyList struct {
	Passkeys  []PasskeyRow
	CanRemove bool // false when only one is left
}

// PasskeyRow is one passkey.
type PasskeyRow struct {
	ID          int64
	Name        string
	Created     string
	CreatedISO  string
	LastUsed    string // "never" when unused since registration
	LastUsedISO string
	CanUnlock   bool
	Unlock      string // "can unlock" or "can sign in, cannot unlock"
	// CanEnroll offers to let the passkey unlock: it supports PRF, the vault has no slot for it,
	// and the vault is open (or not yet created).
	CanEnroll bool
	Current   bool // this session signed in with it
}

// SetupPage is /setup.
type SetupPage struct {
	Page
	Token  string
	Usable bool // the token is an unused, unexpired setup link
}

// LoginPage is /login.
type LoginPage struct {
	Page
	HasPasskeys bool
}

// ErrorPage is a full-page error.
type ErrorPage struct {
	Page
	Status  int
	Message string
}

// WrongHostPage names the addresses Maven answers at, to a browser that asked at another.
type WrongHostPage struct {
	Page
	Host    string   // the address asked for
	Origins []string // the configured origins, each a link
}

// Flash is a short message shown in the page's status area.
type Flash struct {
	Kind    string // "error" or "info"
	Message string
}

// UnlockPage is /unlock, built for a phone.
type UnlockPage struct {
	Page
	HasVault bool
	Locked   bool
	Error    string // why the recovery code did not unlock
	// RecoveryOpen unfolds the recovery code form (after a failed attempt).
	RecoveryOpen bool
}

// SecretsPage is /secrets.
type SecretsPage struct {
	Page
	Card     SecretsCard
	Recovery RecoveryCard
}

// SecretsCard lists the sealed secrets' names and sets new ones; setting swaps it.
type SecretsCard struct {
	HasVault bool
	Names    []string
}

// RecoveryCard offers to replace the recovery code, and shows a new one once.
type RecoveryCard struct {
	HasVault bool
	Used     bool   // the current code has unlocked the vault
	Code     string // a code just made, shown this once; "" otherwise
}
