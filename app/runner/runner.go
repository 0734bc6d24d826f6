// Package runner runs an enabled allowlist row: an MCP row goes to the MCP manager and is never run
// as a binary, anything else is a local argv run directly (never through a shell) with a timeout,
// an empty stdin, a minimal environment and bounded output (docs/design.md#rule-5 and
// docs/design.md#rule-16).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
)

// Defaults for Options.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxOutput = 64 << 10
)

// waitDelay bounds how long Exec waits for the output pipes after the command exited or was
// killed: a child that escaped the process group and still holds them cannot hang Exec.
const waitDelay = 2 * time.Second

// Errors returned by Exec; each is wrapped with context, so test with errors.Is.
var (
	// ErrNotEnabled refuses a row whose state is not enabled, as given or as stored now. The
	// caller should never ask, but the check here is the last line of defence.
	ErrNotEnabled = errors.New("tool is not enabled")
	// ErrChanged refuses a row that is still enabled but no longer the one the caller read:
	// its server redefined it and the owner enabled the new shape since (another fingerprint),
	// or it is gone.
	ErrChanged = errors.New("tool changed since it was read")
	// ErrNoMCP means an MCP row was asked for but the Executor has no MCPCaller.
	ErrNoMCP = errors.New("no MCP manager configured")
	// ErrLocalArgs refuses arguments for a local command: they take none (docs/design.md#rule-16).
	ErrLocalArgs = errors.New("local commands take no arguments")
	// ErrBadCmd refuses a row whose cmd is empty or a malformed ["mcp", server, tool].
	ErrBadCmd = errors.New("malformed tool command")
	// ErrTimeout means the run outlived Options.Timeout and was killed.
	ErrTimeout = errors.New("tool timed out")
)

// Result is what a run produced.
type Result struct {
	// Output is the combined stdout and stderr of a local command, or the text of an MCP
	// result; at most Options.MaxOutput bytes plus a marker line when Truncated.
	Output string
	// ExitCode is the local command's exit status (-1 if it died by a signal); 0 for MCP.
	ExitCode int
	// Truncated reports that Output was cut at Options.MaxOutput.
	Truncated bool
	// IsError is true for a non-zero exit or an MCP error result.
	IsError bool
	// Content is an MCP result's content blocks as an agent is given them, and Structured its
	// structured content (JSON), both bounded (mcp.MaxContentBytes, docs/design.md#rule-28);
	// nil for a local command, whose answer is Output alone. Voice reads Output only.
	Content    []sdk.Content
	Structured json.RawMessage
}

// Rows reads the allowlist as it is now; allowlist.Service implements it.
type Rows interface {
	// Runnable returns the state, fingerprint and command of the row with that id as stored
	// now, or allowlist.ErrNotFound.
	Runnable(ctx context.Context, id int64) (allowlist.Runnable, error)
}

// MCPCaller calls a tool on a configured MCP server; the MCP manager implements it.
type MCPCaller interface {
	// CallTool calls tool on server with args (never nil). A tool that ran and reported
	// failure is a Result with IsError set and a nil error. The error is non-nil only when the
	// call could not be made or completed: unknown, locked or disconnected server, transport
	// or protocol failure, or ctx done (then it wraps ctx.Err()).
	CallTool(ctx context.Context, server, tool string, args map[string]any) (Result, error)
}

// Limits checks a call's arguments against the owner's limits on its row (*limits.Service,
// docs/design.md#rule-33).
type Limits interface {
	// Check returns an error wrapping limits.ErrOutside when args are outside the limits in
	// force on row.
	Check(ctx context.Context, row allowlist.Tool, args map[string]any) error
}

// Options tune an Executor; zero values take the defaults.
type Options struct {
	// Limits, when set, are checked once more before an MCP call is sent: every front end
	// checks them first, with its own words, and this is the last line of defence, as the
	// re-read of the row is. The daemon always sets it.
	Limits Limits
	// Timeout bounds every run, local or MCP (default DefaultTimeout). An MCP call's clock
	// stops while its server waits for the owner's answer to a question (see Pause).
	Timeout time.Duration
	// MaxOutput is the most output bytes kept (default DefaultMaxOutput).
	MaxOutput int
	// Getenv reads the daemon's environment for PATH, HOME and LANG (default os.Getenv).
	Getenv func(string) string
}

// Executor runs allowlist rows. It is safe for concurrent use.
type Executor struct {
	rows      Rows
	mcp       MCPCaller
	limits    Limits
	timeout   time.Duration
	maxOutput int
	getenv    func(string) string
	waitDelay time.Duration
}

// New returns an Executor that reads each row again from rows before it runs it and sends MCP
// rows to mcp, which may be nil if no MCP server is configured.
func New(rows Rows, mcp MCPCaller, opts Options) *Executor {
	e := &Executor{
		rows:      rows,
		mcp:       mcp,
		limits:    opts.Limits,
		timeout:   opts.Timeout,
		maxOutput: opts.MaxOutput,
		getenv:    opts.Getenv,
		waitDelay: waitDelay,
	}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	if e.maxOutput <= 0 {
		e.maxOutput = DefaultMaxOutput
	}
	if e.getenv == nil {
		e.getenv = os.Getenv
	}
	return e
}

// Exec runs row with args, as the allowlist has it at this moment: it reads the row again by
// its id, in the same step that runs it, and runs it only if it is still enabled
// (ErrNotEnabled) and still the row the caller read, same fingerprint and command
// (ErrChanged). A row disabled or redefined an instant after a caller (a cached matcher entry,
// a pending confirm) read it never runs. An MCP call outside the owner's limits on its row is
// refused unsent (Options.Limits). It sends an MCP row to the MCPCaller and runs anything
// else as a local argv. A non-zero exit or an MCP error result is not a Go error: it is
// reported in Result.IsError. On ErrTimeout, or when ctx is done, the Result holds whatever
// output arrived before the kill.
func (e *Executor) Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (Result, error) {
	if err := e.stillRunnable(ctx, row); err != nil {
		return Result{}, err
	}
	if len(row.Cmd) == 0 || row.Cmd[0] == "" {
		return Result{}, fmt.Errorf("tool %q (id %d): empty command: %w", row.Name, row.ID, ErrBadCmd)
	}
	// Routing looks only at cmd[0]: a malformed mcp row must fail here, never fall through to
	// being run as a binary.
	if row.Cmd[0] == "mcp" {
		return e.execMCP(ctx, row, args)
	}
	if len(args) > 0 {
		return Result{}, fmt.Errorf("tool %q (id %d): %w", row.Name, row.ID, ErrLocalArgs)
	}
	return e.execLocal(ctx, row)
}

// stillRunnable reads the row again and fails unless, as stored now, it may still run as the
// caller read it: enabled, with the same fingerprint and command.
func (e *Executor) stillRunnable(ctx context.Context, read allowlist.Tool) error {
	if read.State != allowlist.StateEnabled {
		return fmt.Errorf("tool %q (id %d) is %q: %w", read.Name, read.ID, read.State, ErrNotEnabled)
	}
	now, err := e.rows.Runnable(ctx, read.ID)
	switch {
	case errors.Is(err, allowlist.ErrNotFound):
		return fmt.Errorf("tool %q (id %d) is gone: %w", read.Name, read.ID, ErrChanged)
	case err != nil:
		return fmt.Errorf("tool %q (id %d): read it again: %w", read.Name, read.ID, err)
	case now.State != allowlist.StateEnabled:
		return fmt.Errorf("tool %q (id %d) is %q now: %w", read.Name, read.ID, now.State, ErrNotEnabled)
	case now.Fingerprint != read.Fingerprint || !slices.Equal(now.Cmd, read.Cmd):
		return fmt.Errorf("tool %q (id %d) was redefined since it was read: %w", read.Name, read.ID, ErrChanged)
	}
	return nil
}

func (e *Executor) execMCP(ctx context.Context, row allowlist.Tool, args map[string]any) (Result, error) {
	if len(row.Cmd) != 3 || row.Cmd[1] == "" || row.Cmd[2] == "" {
		return Result{}, fmt.Errorf("tool %q (id %d): cmd %q is not [\"mcp\", server, tool]: %w",
			row.Name, row.ID, row.Cmd, ErrBadCmd)
	}
	server, tool := row.Cmd[1], row.Cmd[2]
	if e.mcp == nil {
		return Result{}, fmt.Errorf("tool %q: mcp %s/%s: %w", row.Name, server, tool, ErrNoMCP)
	}
	if args == nil {
		args = map[string]any{}
	}
	if e.limits != nil {
		if err := e.limits.Check(ctx, row, args); err != nil {
			return Result{}, fmt.Errorf("tool %q: mcp %s/%s: %w", row.Name, server, tool, err)
		}
	}
	// The clock stops while the server waits for the owner's answer to a question (Pause).
	tctx, cancel := WithTimeout(ctx, e.timeout)
	defer cancel()
	res, err := e.mcp.CallTool(tctx, server, tool, args)
	if err != nil {
		if ctx.Err() == nil && TimedOut(tctx) {
			return Result{}, fmt.Errorf("tool %q: mcp %s/%s: %w after %s (%w)", row.Name, server, tool, ErrTimeout, e.timeout, err)
		}
		return Result{}, fmt.Errorf("tool %q: mcp %s/%s: %w", row.Name, server, tool, err)
	}
	// The far end chooses how much it sends; the voice reply gets the same bound as a local run.
	if len(res.Output) > e.maxOutput {
		w := newBoundedWriter(e.maxOutput)
		w.Write([]byte(res.Output))
		res.Output, res.Truncated = w.String()
	}
	return res, nil
}

func (e *Executor) execLocal(ctx context.Context, row allowlist.Tool) (Result, error) {
	tctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()

	// Argv goes straight to execve: no shell ever sees it, so ; | $() and the like are plain
	// bytes. A bare name is looked up in the daemon's PATH.
	cmd := exec.CommandContext(tctx, row.Cmd[0], row.Cmd[1:]...)
	cmd.Env = Environ(e.getenv, nil)
	// A nil Stdin is /dev/null: the command cannot read from the daemon.
	cmd.Stdin = nil
	out := newBoundedWriter(e.maxOutput)
	// One writer for both streams: os/exec then uses a single pipe, so the order is kept.
	cmd.Stdout = out
	cmd.Stderr = out
	// A timeout kills whatever it spawned, not just the leader.
	InOwnProcessGroup(cmd)
	cmd.WaitDelay = e.waitDelay

	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("tool %q: start %q: %w", row.Name, row.Cmd[0], err)
	}
	err := cmd.Wait()
	output, truncated := out.String()
	res := Result{Output: output, Truncated: truncated, ExitCode: cmd.ProcessState.ExitCode()}
	res.IsError = res.ExitCode != 0

	if err != nil && tctx.Err() != nil {
		res.IsError = true
		if ctx.Err() != nil {
			return res, fmt.Errorf("tool %q: %q stopped: %w", row.Name, row.Cmd[0], ctx.Err())
		}
		return res, fmt.Errorf("tool %q: %q killed after %s: %w", row.Name, row.Cmd[0], e.timeout, ErrTimeout)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.As(err, &exitErr):
		// A non-zero exit is the command's answer, not a failure to run it.
		return res, nil
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited cleanly but left a child holding the pipes; what arrived is the answer.
		return res, nil
	default:
		res.IsError = true
		return res, fmt.Errorf("tool %q: wait for %q: %w", row.Name, row.Cmd[0], err)
	}
}
