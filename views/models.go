package views

import "strings"

// Page is what every full page carries for the layout.
type Page struct {
	Title    string
	SignedIn bool
	Nav      string // the current section: "tools", "approvals", "passkeys", "secrets" or "activity"
	// Locked hides the links that would only lead back to /unlock.
	Locked bool
	// CanLock shows the Lock button: a vault exists and is unlocked.
	CanLock bool
	// RecoveryUsed warns that the recovery code has unlocked the vault and should be replaced.
	RecoveryUsed bool
}

// Reach says how to reach Maven at an address where passkeys work: the configured origins, and
// for origins on localhost the SSH tunnel that brings one to another computer.
type Reach struct {
	Origins     []string
	OriginsJSON string // the same, for pages.js to compare with the page's own origin
	Origin      string // the first configured origin
	LocalOnly   bool   // every origin is on localhost: only this machine, or a tunnel, reaches it
	Tunnel      string // "ssh -L 8080:localhost:8080 you@HOST"
	// TunnelHost is HOST in Tunnel, as the browser named this machine: only a host name or an
	// IP address, never anything else the Host header held ("" when not known).
	TunnelHost string
	// TunnelPort is the port of localhost the browser asked at when the origins are on
	// localhost at other ports: a tunnel whose two ends differ. TunnelOrigin is the origin that
	// port would need. "" otherwise.
	TunnelPort   string
	TunnelOrigin string
}

// Segment is a run of text, or one hidden character spelled out as its code point.
type Segment struct {
	Text   string
	Hidden bool
	Why    string // what the hidden character is, for its tooltip
}

// Text is text from outside Maven, split so hidden characters show (see app/reveal).
type Text []Segment

// Time is a moment as every page shows it: one format, to the minute, in the daemon's zone, with
// the machine-readable instant for <time datetime>.
type Time struct {
	Text string // "2 Jan 2006, 15:04"; "" for no time
	ISO  string // RFC 3339, UTC
}

// ToolsPage is the /tools page.
type ToolsPage struct {
	Page
	List    ToolList
	Servers ServersCard
	Config  *ConfigNotes // nil: nothing to say about the config
}

// ConfigNotes is what /tools says about the config file: a reload that refused it, and what
// the config that runs holds that Maven runs despite.
type ConfigNotes struct {
	Path     string         // the config file
	Refused  *ConfigRefusal // nil unless the last reload refused the file
	Problems []ConfigProblem
}

// ConfigRefusal is a config a reload refused whole, the running one staying.
type ConfigRefusal struct {
	At     Time
	Errors []ConfigProblem
}

// ConfigProblem is one error or warning about a key of the config.
type ConfigProblem struct {
	Key     Text // "" when it concerns the whole file
	Message Text
	Error   bool // that part of the config is not in effect; else a warning
}

// ToolList is the searchable, filtered, paginated list of allowlist rows, grouped by server;
// the search box, the filters and the pager swap it.
type ToolList struct {
	Query   string
	State   string      // the state filter ("" for every state)
	Filters Filters     // "All", then each state, counting the rows that match Query
	Groups  []ToolGroup // this page's rows, by server
	Total   int         // rows in this view (Query and State)
	Pager   Pager
	Empty   string // what to say when no row is in this view
	// Start, when the allowlist is empty, says where tools come from: the config file.
	Start *ConfigInfo
	// RefreshURL renders this list again (same query, filter and page).
	RefreshURL string
	// Seen is the whole allowlist's count per state this list was rendered from; the servers
	// card's poll sends it back, and learns so whether the list is out of date.
	Seen string
	// Selectable: some row on this page can be enabled, so the batch bar is shown.
	Selectable bool
	// Result is what a batch approval did, shown beside its button.
	Result *BatchResult
	// Chosen is how many rows the view chose by id (the tools of one discovery), 0 for none;
	// AllURL is the same view of every row.
	Chosen int
	AllURL string
}

// Filters are the state filter's links; OOB renders them for an out-of-band swap, when an
// action on a row changed the counts.
type Filters struct {
	Items []StateFilter
	OOB   bool
}

// StateFilter is one link of the state filter: a state (or "" for all) and its count.
type StateFilter struct {
	State   string
	Label   string
	Count   int
	URL     string
	Current bool
}

// ToolGroup is the rows of one server (or the local commands) on this page.
type ToolGroup struct {
	Title string // "MCP server “tasks”" or "Local commands"
	Rows  []ToolRow
}

// Pager links the pages of a list; an empty URL means there is no such page.
type Pager struct {
	Page, Pages int
	From, To    int // the 1-based positions of the first and last row shown
	PrevURL     string
	NextURL     string
}

// ConfigInfo says which config file Maven read, for a page that has nothing to show yet.
type ConfigInfo struct {
	Path   string // the file, as given or the default
	Loaded bool   // it exists and was read; false: the embedded defaults run, and this is where a file would be read
	// Servers is how many MCP servers it configures: they propose their tools once connected.
	Servers int
}

// BatchResult is what one approval of several rows did: which were enabled, and which were
// refused and why (each refused row is also shown with what changed).
type BatchResult struct {
	Enabled []string // names
	Refused []Refusal
	// Moved links to where the enabled rows went, when the page's view no longer shows them.
	Moved string
}

// Refusal is one item of a batch that was not enabled.
type Refusal struct {
	Name   string
	Reason string
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
	// ChangedSinceShown, on a row answered to an approval refused because it changed after the
	// owner's page showed it, says what was not done.
	ChangedSinceShown string
	RenameOf          Text
	Invisible         bool // name, description or schema hold hidden characters
	Mixed             bool // the name mixes writing systems
	// Fingerprint is what an approval of the row binds to (allowlist.Tool.ApprovalDigest), shown
	// as data-fingerprint; EnableVals the htmx values of its Enable button, which carry it.
	Fingerprint string
	EnableVals  string
	CanEnable   bool
	CanDisable  bool
	// DisableLabel is "Reject" for a proposal (it disables it) and "Disable" for an enabled row.
	DisableLabel string
	EnabledAt    Time
	// Status is what the owner's last action on this row did, shown beside its buttons.
	Status string
	Voice  Voice
	// Limits are the owner's limits on its arguments, and their form.
	Limits Limits
}

// Voice is what a row says about reaching it by voice (docs/design.md#rule-15 and
// docs/design.md#rule-15b).
type Voice struct {
	// HowToSay: "Say: ‘add 3 and 4’", "Say: ‘echo ⟨message⟩’", or "voice cannot fill its
	// arguments: add a phrase"; empty for a row voice does not reach.
	HowToSay Text
	// Void says that the saved phrases were for a shape the tool no longer has.
	Void string
	// Phrasable rows (enabled MCP tools) have the phrases box: Phrases is its text, the saved
	// phrases one a line, or what the owner sent when it was refused; Rows its height.
	Phrasable bool
	Phrases   string
	Rows      int
	// Slots are the properties a phrase can fill, as "{name}", for the box's hint.
	Slots []Text
	// Unsaved is what the owner sent to a row that no longer takes phrases: kept on the page.
	Unsaved Text
	// LineErrors are the lines that could not be used; Status what the last save did, and
	// Refused whether it was refused.
	LineErrors []LineError
	Status     string
	Refused    bool
	// Confirm is how an enabled destructive row's voice calls are confirmed, and the form that
	// changes it; nil for any other row.
	Confirm *ConfirmChoice
}

// ConfirmChoice is the Confirm setting of a row (docs/design.md#rule-32): by a spoken yes, or
// on the owner's phone; changed behind a step-up.
type ConfirmChoice struct {
	Options []Option
	// Status says what the last save did.
	Status string
}

// LineError is one phrase that cannot be used: its line in the box, its text and why.
type LineError struct {
	Line    int
	Text    Text
	Message Text
}

// MovedRow stands where a row was after an action moved it out of the filtered view: it says
// what happened and where the row is now.
type MovedRow struct {
	ID      int64
	Name    string
	Message string // "Enabled."
	Where   string // the state it is in now, in words
	URL     string // a view that shows it
}

// RowChange answers an action on one row: the row again (Row), or, when it left the page's
// view, a note where it was (Moved); and the state filters with their new counts.
type RowChange struct {
	Row     *ToolRow
	Moved   *MovedRow
	Filters Filters
}

// FieldDiff is one field of a redefined tool, as approved and as declared now.
type FieldDiff struct {
	Field string
	Old   Text
	New   Text
	Block bool // show preformatted (schemas)
}

// ServersCard is the "MCP servers" card, which refreshes itself every two seconds.
type ServersCard struct {
	Servers []ServerRow
	Summary []string // "5 connected", "1 awaiting your approval", in the servers' order
	Waiting int      // command lines that wait for the owner's approval
	// News, in the card's poll only, tells the tool list on the page that the allowlist changed
	// since it was rendered (an out-of-band swap).
	News *ToolsNews
}

// ToolsNews is the notice that the allowlist changed since the list on the page was rendered.
type ToolsNews struct {
	Message string // "14 new tools to review"
	Seen    string // the list's counts the notice compared with (tools-seen), so a page swaps it only while it shows that list
}

// PendingCommand is a stdio server's command line that starts only once the owner approves it.
type PendingCommand struct {
	ID      int64
	Server  string
	Display string // the exact command line, environment and working directory
	Seen    Time
	// Changed: the server ran an approved command line before, and Lines show this one against
	// it.
	Changed bool
	Lines   []DiffLine
}

// DiffLine is one line of a command line compared with the approved one.
type DiffLine struct {
	Kind string // "same", "was" or "now"
	Text string
}

// ServerRow is one MCP server's status.
type ServerRow struct {
	Name       string
	Transport  string
	Target     string
	State      string
	StateLabel string
	// Tone is how the state is shown: "ok" (connected), "calm" (nothing is wrong, or the owner
	// has something to do), "trouble" (it failed).
	Tone string
	// Open shows the details unfolded: the owner may want to act.
	Open bool
	// Action says what the owner can do about the state, with a link when it leads elsewhere.
	Action      string
	ActionURL   string
	ActionLabel string
	// LastError is written by the far end: hidden characters spelled out. Only in trouble, or
	// what a server that refused Maven answered; LastErrorLabel names it so.
	LastError      Text
	LastErrorLabel string
	Since          Time
	Tools          int
	Trust          string
	TrustText      string
	TrustShort     string
	Pending        *PendingCommand // the command line it waits for the owner to approve
	SignIn         *SignIn         // what it asks the owner to sign in for, with the Sign in button

	// LastStderr is what a stdio server that exited last wrote on stderr, a line each.
	LastStderr []Text
}

// SignIn is what a server that wants the owner to sign in asks for: the step-up of its Sign in
// button approves exactly this (Fingerprint).
type SignIn struct {
	ID             string // the element id of its description, unique on the page
	AuthServer     string // the authorization server's issuer URL
	AuthServerHost string // its host, which names it to the owner
	// SignInPage is the host the browser signs in at, when that is not AuthServerHost.
	SignInPage  string
	Scopes      []string
	Fingerprint string
}

// PasskeysPage is the /passkeys page: the passkeys.
type PasskeysPage struct {
	Page
	List PasskeyList
}

// PasskeyList is the owner's passkeys; rename and remove swap it.
type PasskeyList struct {
	Passkeys  []PasskeyRow
	CanRemove bool // false when only one is left
	// Message says what the action that rendered the list did ("" for none); the page focuses it.
	Message string
}

// PasskeyRow is one passkey.
type PasskeyRow struct {
	ID        int64
	Name      string
	Created   Time
	LastUsed  Time // zero Text when never used since registration
	CanUnlock bool
	Unlock    string // "can unlock" or "can sign in, cannot unlock"
	// CanEnroll offers to let the passkey unlock: it supports PRF, the vault has no slot for it,
	// and the vault is open (or not yet created).
	CanEnroll bool
	Current   bool // this session signed in with it
}

// SetupPage is /setup.
type SetupPage struct {
	Page
	Reach  Reach
	Token  string
	Usable bool // the token is an unused, unexpired setup link
	// Passkeys the owner already has: the link adds one more to the same owner.
	Passkeys int
}

// LoginPage is /login.
type LoginPage struct {
	Page
	Reach       Reach
	HasPasskeys bool
	// Why says why the browser was sent here ("passkey-removed", "recovered"); "" for none.
	Why string
}

// ErrorPage is a full-page error.
type ErrorPage struct {
	Page
	Status  int
	Message string
}

// WrongHostPage names the addresses Maven answers at, to a browser that asked at another, and
// how to get there from where the owner is.
type WrongHostPage struct {
	Page
	Host string // the address asked for
	// Path is the path and query asked for: the links to the origins keep it (a setup link's
	// token with it).
	Path  string
	Reach Reach
}

// Flash is a short message shown in the page's status area.
type Flash struct {
	Kind    string // "error" or "info"
	Message string
}

// UnlockPage is /unlock, built for a phone.
type UnlockPage struct {
	Page
	Reach    Reach
	HasVault bool
	Locked   bool
	Error    string // why the recovery code did not unlock
	// RecoveryOpen unfolds the recovery code form (after a failed attempt).
	RecoveryOpen bool
	// ExplainPRF says which passkeys can unlock: a registered passkey lacks PRF (or none is
	// registered), so it matters here.
	ExplainPRF bool
}

// SecretsPage is /secrets.
type SecretsPage struct {
	Page
	Card     SecretsCard
	Recovery RecoveryCard
}

// SecretsCard lists every secret that is sealed or that the config refers to, and sets new
// ones; setting and deleting swap it.
type SecretsCard struct {
	HasVault bool
	Secrets  []SecretItem
	Missing  int // secrets servers refer to that are not set
	// Message says what the action that rendered the card did ("" for none); the page focuses it.
	Message string
}

// SecretItem is one secret, by name: never its value.
type SecretItem struct {
	Name    string
	Sealed  bool     // the vault holds it
	Missing bool     // servers refer to it and it is not set
	Servers []string // the configured servers that use it
}

// RecoveryCard offers to replace the recovery code, and shows a new one once.
type RecoveryCard struct {
	HasVault bool
	Used     bool   // the current code has unlocked the vault
	Code     string // a code just made, shown this once; "" otherwise
}

// Groups are the code's groups of characters: the page lets it wrap only between them.
func (c RecoveryCard) Groups() []string { return strings.Split(c.Code, "-") }
