package allowlist

import (
	"encoding/json"
	"errors"
	"time"
)

// State is where a row stands in its life cycle (docs/design.md#rule-2).
type State string

// The row states.
const (
	StateProposed  State = "proposed"
	StateEnabled   State = "enabled"
	StateDisabled  State = "disabled"
	StateWithdrawn State = "withdrawn"
)

// Runnable is what decides whether a row may still run as a caller read it: its state, and the
// fingerprint and command it runs with.
type Runnable struct {
	State       State
	Fingerprint string
	Cmd         []string
}

// States returns every row state in the order the owner is shown them: what needs their
// attention first. Counts, gauges and page groups all follow it.
func States() []State {
	return []State{StateProposed, StateEnabled, StateDisabled, StateWithdrawn}
}

// ScopeLocal is the scope of a local command; MCP rows use "mcp:<server>".
const ScopeLocal = "local"

// MCPScope returns the scope of the rows of one MCP server.
func MCPScope(server string) string { return "mcp:" + server }

// Where a row came from. Only rows from the config are withdrawn when the config drops them.
const (
	SourceConfig    = "config"
	SourceCLI       = "cli"
	SourceDiscovery = "discovery"
)

// Tool is one allowlist row.
type Tool struct {
	ID          int64
	Name        string   // local spoken/display name
	Cmd         []string // argv; ["mcp", server, tool] for an MCP tool
	Scope       string   // "local" or "mcp:<server>"
	State       State
	Destructive bool
	ReadOnly    bool // what the far end claims (readOnlyHint); a hint, never proof
	Description string
	InputSchema json.RawMessage
	// Fingerprint is "" for a row that predates fingerprints (NULL in the database).
	Fingerprint string
	// Declared is the canonical JSON of the declared shape, "" for local commands.
	Declared string
	// PreviousDeclared is the shape the owner last approved, kept after a redefinition so the
	// change can be shown field by field; "" when there is none.
	PreviousDeclared string
	// ChangedFields names the fields that differ between PreviousDeclared and Declared.
	ChangedFields []string
	// RenameOf names a tool that vanished in the refresh this one appeared in with the same
	// input schema: a possible rename, shown to the owner, never inherited trust.
	RenameOf string
	// Source says where the row came from (SourceConfig, SourceCLI, SourceDiscovery).
	Source     string
	Provenance string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	EnabledAt  *time.Time
	EnabledBy  string
	// Confirm is how the row's voice calls are confirmed when it is destructive
	// (docs/design.md#rule-32); "" reads as ConfirmVoice.
	Confirm Confirm
}

// IsMCP reports whether the row refers to an MCP tool.
func (t Tool) IsMCP() bool { return len(t.Cmd) == 3 && t.Cmd[0] == "mcp" }

// Server returns the MCP server name of an MCP row, "" otherwise.
func (t Tool) Server() string {
	if !t.IsMCP() {
		return ""
	}
	return t.Cmd[1]
}

// RemoteName returns the MCP tool name as the server knows it, "" for local rows.
func (t Tool) RemoteName() string {
	if !t.IsMCP() {
		return ""
	}
	return t.Cmd[2]
}

// Event is one entry of the append-only audit trail.
type Event struct {
	ID     int64
	ToolID int64
	At     time.Time
	Actor  string
	Action string
	Detail json.RawMessage
	// Repeats counts the times the same change happened again right after this event, each
	// counted instead of recorded as an event of its own (see Redeclaration.CoalesceSince);
	// LastRepeat is when it last did, and LastRepeatDetail what Detail would have said then.
	// The event itself is never rewritten.
	Repeats          int
	LastRepeat       time.Time
	LastRepeatDetail json.RawMessage
}

// Errors returned by the allowlist.
var (
	ErrNotFound          = errors.New("tool not found")
	ErrIllegalTransition = errors.New("illegal state transition")
	ErrInvalid           = errors.New("invalid tool")
)
