package pending

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"maven/app/allowlist"
	"maven/app/notify"
)

// Client is who asked for a call: an agents' client, or voice.
type Client struct {
	ID   string // the client's id; "voice" for a voice turn
	Name string // its name as the owner sees it
}

// Voice is the client of the pending calls voice turns make (docs/design.md#rule-32).
var Voice = Client{ID: "voice", Name: "voice"}

// Request is a call that needs the owner: what a caller checked (the row enabled and shown as
// the caller listed it, the arguments fitting its approved schema) and why it needs the owner.
type Request struct {
	Client Client
	Row    allowlist.Tool
	Args   map[string]any
	// Absent are the properties of the row's approved schema the call leaves out: the page
	// says they will be sent absent.
	Absent []string
	// Why says why the call needs the owner ("it can change things").
	Why string
}

// Call is one pending call and what became of it.
type Call struct {
	ID     int64
	Client Client
	ToolID int64
	Tool   string   // the row's local name when the call was made
	Cmd    []string // the row's command then: ["mcp", server, tool] for an MCP row
	// Fingerprint is the row's approval digest when the call was made (allowlist.Tool's
	// ApprovalDigest): the call runs only while the row shows the same.
	Fingerprint string
	Args        json.RawMessage // the canonical (JCS) arguments
	Absent      []string
	Why         string
	Created     time.Time
	Expires     time.Time
	State       State
	// Reason says why a call was voided, denied or interrupted, or why its run failed.
	Reason string
	// DecidedBy and DecidedAt say who approved or denied it, and when; FinishedAt when it
	// reached a final state.
	DecidedBy  string
	DecidedAt  time.Time
	FinishedAt time.Time
	// Result is what the run gave; nil before it ran.
	Result *Result
	// Collected reports that the result went to the caller, so an identical call asks again.
	Collected bool
	// Deliveries are what each notifier did with the call's notice (docs/design.md#rule-30);
	// nil until they are known.
	Deliveries []notify.Delivery
}

// Server is the call's MCP server, "" for a local command.
func (c Call) Server() string {
	if len(c.Cmd) == 3 && c.Cmd[0] == "mcp" {
		return c.Cmd[1]
	}
	return ""
}

// Arguments are the call's arguments decoded, as the run is given them.
func (c Call) Arguments() (map[string]any, error) {
	args := map[string]any{}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return nil, fmt.Errorf("pending call %d: its arguments: %w", c.ID, err)
	}
	return args, nil
}

// Delivered reports whether some notifier told the owner of the call; false also while the
// deliveries are not known.
func (c Call) Delivered() bool {
	for _, d := range c.Deliveries {
		if d.OK {
			return true
		}
	}
	return false
}

// Result is what a call's run gave, as the runner reported it. Content and Structured are the
// MCP result's content blocks and structured content as JSON (a CallToolResult's fields), for
// the agent that asks again; they are dropped once the call expired.
type Result struct {
	Output     string          `json:"output"`
	IsError    bool            `json:"is_error,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
}

// Binding is what Approve's step-up names of a call: H(id ‖ fingerprint ‖ canonical arguments
// ‖ expiry), "sha256:" and hex (docs/design.md#rule-30). An approval shown another call, the
// same call before a redefinition, or other arguments names another binding.
func Binding(c Call) string {
	h := sha256.New()
	h.Write([]byte("maven pending call\x00"))
	h.Write([]byte(strconv.FormatInt(c.ID, 10)))
	h.Write([]byte{0})
	h.Write([]byte(c.Fingerprint))
	h.Write([]byte{0})
	h.Write(c.Args)
	h.Write([]byte{0})
	h.Write([]byte(c.Expires.UTC().Format(time.RFC3339Nano)))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Submitted says what Submit did with a request.
type Submitted int

// What Submit does.
const (
	// Created: a new pending call, and the owner is being told.
	Created Submitted = iota + 1
	// Joined: an identical call was pending already (or running); this request waits on it.
	Joined
	// Kept: an identical call ran and its result was not collected yet: here it is, and the
	// tool does not run again.
	Kept
)

// Errors of the service.
var (
	// ErrNotFound means no pending call has that id.
	ErrNotFound = errors.New("no such pending call")
	// ErrTooMany refuses a new call from a client that holds MaxPerClient pending calls.
	ErrTooMany = errors.New("too many calls wait for approval")
	// ErrNotPending refuses approving or denying a call that no longer waits: it ran, was
	// denied, expired or voided, or another approval is running it. Wrapped in *NotPendingError.
	ErrNotPending = errors.New("the call no longer waits for approval")
	// ErrLocked refuses an approval while the daemon is locked: nothing runs until unlock, and
	// the call keeps waiting.
	ErrLocked = errors.New("the daemon is locked")
	// ErrConflict is the store's answer to a transition from a state the call is no longer in.
	ErrConflict = errors.New("the pending call changed meanwhile")
)

// NotPendingError is ErrNotPending with the call as it is now.
type NotPendingError struct{ Call Call }

func (e *NotPendingError) Error() string {
	return fmt.Sprintf("pending call %d: %s", e.Call.ID, e.Call.State.Words())
}

func (e *NotPendingError) Unwrap() error { return ErrNotPending }

// Store keeps the pending calls; db implements it.
type Store interface {
	// Submit, in one transaction, returns the result of an identical call (same client, row,
	// fingerprint and arguments) that ran, is not collected and has not expired, marking it
	// collected (Kept); else an identical call still pending or running (Joined); else, unless
	// the client holds max calls pending, inserts c and sets its ID (Created). A client at its
	// limit gets ErrTooMany. Calls past their expiry at now count for nothing.
	Submit(ctx context.Context, c *Call, now time.Time, max int) (Call, Submitted, error)
	// Get returns ErrNotFound if no call has that id.
	Get(ctx context.Context, id int64) (Call, error)
	// Transition moves the call from one of from to t.State, writing what t sets, in one
	// statement: ErrConflict if it is in none of from (another approval, an expiry or a void
	// won), ErrNotFound if there is none. It returns the call as it is after.
	Transition(ctx context.Context, id int64, from []State, t Change) (Call, error)
	// Collect marks a ran call's result collected; false if it was collected already (or the
	// call did not run). Its content stays until the call expires.
	Collect(ctx context.Context, id int64) (bool, error)
	// SetDeliveries records what the notifiers did with the call's notice.
	SetDeliveries(ctx context.Context, id int64, d []notify.Delivery) error
	// Open returns the calls pending or running, oldest first.
	Open(ctx context.Context) ([]Call, error)
	// OpenFirst returns the first limit of them, and how many there are.
	OpenFirst(ctx context.Context, limit int) ([]Call, int, error)
	// Recent returns at most limit calls in a final state, the latest finished first.
	Recent(ctx context.Context, limit int) ([]Call, error)
	// Sweep drops the content kept for agents of the calls expired at now, and deletes the
	// final calls beyond the keep newest.
	Sweep(ctx context.Context, now time.Time, keep int) error
}

// Change is a transition of a call: its new state and what else it sets (zero fields are left
// as they are).
type Change struct {
	State     State
	Reason    string
	DecidedBy string
	DecidedAt time.Time
	Finished  time.Time
	Result    *Result
	// OpenAt, when set, makes the transition only of a call whose expiry is after it: an
	// approval at the last instant does not outrun the expiry. DueAt, when set, makes it only
	// of a call whose expiry is at or before it: an expiry does not outrun an approval.
	OpenAt, DueAt time.Time
}
