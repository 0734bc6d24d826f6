package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/reveal"
	"maven/app/runner"
)

// LockedWords are every call's answer while the daemon is locked.
const LockedWords = "Maven is locked; unlock it on your phone."

// busyWords answer a call over its client's rate.
const busyWords = "Too many calls at once; wait a moment and try again. Nothing was done."

// recordTimeout bounds writing one call's entry to the activity feed.
const recordTimeout = 5 * time.Second

// handler is the tool handler of entry e on c's servers: it carries the row's id and the shape
// the agent was shown.
func (s *Service) handler(c *client, e *entry) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return s.call(ctx, c, e, req), nil
	}
}

// call is one agent's call of a listed row (docs/design.md#rule-28): over the client's rate,
// or while locked, it is refused; the row is read again (from memory while nothing committed
// since the read that listed it, shownRows.still) and must still be enabled in the shape
// the agent was shown, with the same limits, and among its client's tools; the arguments must
// fit the approved input schema, then the owner's limits (docs/design.md#rule-33, never sent
// outside them); then Classify decides: a call that may run at once runs through the one run
// path (which reads the row again in its own step), any other becomes a pending call (askOwner).
// Every call but one over the rate is recorded in the activity feed with its client's name.
func (s *Service) call(ctx context.Context, c *client, e *entry, req *sdk.CallToolRequest) *sdk.CallToolResult {
	raw := req.Params.Arguments
	if !c.calls.Allow() {
		s.log.Debug("agents: a call over its client's rate", "client", c.id, "tool", e.row.Name)
		return refusal(busyWords)
	}
	policy, revoked := c.current()
	rec := callRecord{client: c.id, clientName: policy.Name, row: e.row, args: raw}
	switch {
	case s.d.Lock.Locked():
		return s.refuse(ctx, rec, OutcomeLocked, "", LockedWords)
	case revoked || !policy.allows(e.row.ID):
		return s.refuse(ctx, rec, OutcomeChanged, "no longer among its client's tools", changedWords(e.row))
	}
	row := e.row
	if !s.shown.still(e) {
		var refused *sdk.CallToolResult
		if row, refused = s.readAgain(ctx, rec, e); refused != nil {
			return refused
		}
	}
	rec.row = row
	args, err := e.arguments(raw)
	if err != nil {
		why := argumentsWords(err)
		return s.refuse(ctx, rec, OutcomeBadArguments, why, fmt.Sprintf("The arguments do not fit %s: %s. Nothing was done.", row.Name, why))
	}
	if !row.IsMCP() && len(args) > 0 {
		return s.refuse(ctx, rec, OutcomeBadArguments, "a local command takes no arguments",
			fmt.Sprintf("%s is a local command and takes no arguments. Nothing was done.", row.Name))
	}
	if e.limits != nil {
		if err := e.limits.Check(args); err != nil {
			return s.refuse(ctx, rec, OutcomeOutsideLimits, err.Error(), outsideWords(row, err))
		}
	}
	class := Classify(row, args, s.d.Allow.AllowTools(row.Server()), e.limits != nil && e.limits.Set.RunUnasked)
	if class.NeedsOwner() {
		return s.askOwner(ctx, c, rec, e, row, args, class, req)
	}
	res, err := s.d.Runner.Exec(ctx, row, args)
	if err != nil {
		outcome, words := failure(row, err)
		s.log.Info("agents: a call could not be run", "client", c.id, "tool", row.Name, "err", err)
		return s.refuse(ctx, rec, outcome, reveal.CutError(err.Error(), 200), words)
	}
	out := toolResult(row, res)
	rec.isError = res.IsError
	why := ""
	if class == ClassWithinLimits {
		why = class.Words()
	}
	s.record(ctx, rec, OutcomeRan, why, res.Output)
	return out
}

// readAgain reads e's row and its limits as they are now, since an update or a save of limits
// committed after the read that listed it; it refuses the call unless they still show what the
// agent was shown.
func (s *Service) readAgain(ctx context.Context, rec callRecord, e *entry) (allowlist.Tool, *sdk.CallToolResult) {
	row, err := s.d.Rows.Get(ctx, e.row.ID)
	switch {
	case errors.Is(err, allowlist.ErrNotFound):
		return row, s.refuse(ctx, rec, OutcomeChanged, "gone", changedWords(e.row))
	case err != nil:
		s.log.Error("agents: read a row", "tool", e.row.Name, "err", err)
		return row, s.refuse(ctx, rec, OutcomeFailed, "the allowlist could not be read", "Maven could not read its tools just now; try again.")
	case row.State != allowlist.StateEnabled:
		return row, s.refuse(ctx, rec, OutcomeChanged, "it is "+string(row.State)+" now", changedWords(e.row))
	}
	in, err := s.d.Limits.InForce(ctx, []allowlist.Tool{row})
	switch {
	case err != nil:
		s.log.Error("agents: read a row's limits", "tool", e.row.Name, "err", err)
		return row, s.refuse(ctx, rec, OutcomeFailed, "its limits could not be read", "Maven could not read its tools just now; try again.")
	case shownKey(row, in[row.ID]) != e.key || !slices.Equal(row.Cmd, e.row.Cmd):
		return row, s.refuse(ctx, rec, OutcomeChanged, "redefined, or its limits changed, since it was listed", changedWords(e.row))
	}
	return row, nil
}

// toolResult is a run's result as the agent is given it: an MCP row's content and structured
// content as bounded (runner.Result.Content), a local command's output as text; isError passes.
func toolResult(row allowlist.Tool, res runner.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: res.IsError}
	if row.IsMCP() {
		out.Content = res.Content
		if res.Structured != nil {
			out.StructuredContent = res.Structured
		}
	} else {
		out.Content = []sdk.Content{&sdk.TextContent{Text: res.Output}}
	}
	if out.Content == nil {
		out.Content = []sdk.Content{}
	}
	return out
}

// refusal is a tool error saying words.
func refusal(words string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: words}}}
}

// refuse records a call that did not run and answers it with words.
func (s *Service) refuse(ctx context.Context, rec callRecord, outcome Outcome, reason, words string) *sdk.CallToolResult {
	s.record(ctx, rec, outcome, reason, words)
	return refusal(words)
}

// outsideWords say why a call outside the owner's limits was refused: the property and the
// limit (a *limits.Violation).
func outsideWords(row allowlist.Tool, err error) string {
	return fmt.Sprintf("The arguments do not fit %s: %s. Nothing was done.", row.Name, reveal.CutError(err.Error(), 300))
}

func changedWords(row allowlist.Tool) string {
	return fmt.Sprintf("%s changed since you listed the tools (the owner disabled it or its server redefined it): list the tools again. Nothing was done.", row.Name)
}

// argumentsWords is jsonschema-go's account of why arguments do not fit, without the name of
// the schema's root: "validating /properties/count: type: …", `required: missing properties:
// ["title"]`, `unexpected additional properties ["x"]`; each names the property.
func argumentsWords(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	return reveal.CutError(msg, 300)
}

// failure says why a row could not be run, as a plain tool error: never the internal error,
// which may name addresses and paths (docs/design.md#rule-28).
func failure(row allowlist.Tool, err error) (Outcome, string) {
	if errors.Is(err, runner.ErrChanged) || errors.Is(err, runner.ErrNotEnabled) {
		return OutcomeChanged, changedWords(row)
	}
	var outside *limits.Violation
	if errors.As(err, &outside) {
		return OutcomeOutsideLimits, outsideWords(row, outside)
	}
	if errors.Is(err, mcp.ErrLocked) {
		return OutcomeLocked, LockedWords
	}
	what := "The server " + row.Server()
	if !row.IsMCP() {
		what = "The command " + row.Name
	}
	switch {
	case errors.Is(err, runner.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return OutcomeFailed, what + " did not answer in time."
	case errors.Is(err, context.Canceled):
		return OutcomeFailed, "The call was cancelled."
	case errors.Is(err, mcp.ErrNeedsSignIn):
		return OutcomeFailed, what + " needs the owner to sign in to it again, on Maven's tools page."
	case !row.IsMCP():
		return OutcomeFailed, what + " could not be run."
	case serverAnswered(err):
		return OutcomeFailed, what + " could not run it."
	}
	return OutcomeFailed, what + " could not be reached."
}

// codeRejected is go-sdk's code for a request its transport could not send (jsonrpc2's
// ErrRejected): the client's own error, not an answer.
const codeRejected = -32005

// serverAnswered reports whether err is the server's own answer to the call: a protocol error
// rather than a result.
func serverAnswered(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code != codeRejected
}

// callRecord is what the activity feed keeps of a call.
type callRecord struct {
	client, clientName string
	row                allowlist.Tool
	args               []byte
	isError            bool
	call               int64 // the pending call it became, 0 for none
}

// record appends a call's entry to the activity feed: its client, the row, its arguments (cut),
// the outcome, why it did not run, and what the agent was told (cut). A failed write is logged;
// the agent's answer does not wait on it more than recordTimeout.
func (s *Service) record(ctx context.Context, rec callRecord, outcome Outcome, reason, said string) {
	said, _ = reveal.Cut(said, 400, "…")
	detail := map[string]any{"client": rec.clientName, "client_id": rec.client, "reason": reason, "reply": said}
	if args := argsDetail(rec.args); len(args) > 0 {
		detail["args"] = args
	}
	if rec.isError {
		detail["is_error"] = true
	}
	if rec.call != 0 {
		detail["call"] = rec.call
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err := s.d.Activity.Append(ctx, activity.Event{At: s.opts.Now(), Actor: "agent", Action: activity.ActionAgentCall,
		Outcome: string(outcome), ToolID: rec.row.ID, Tool: rec.row.Name, Detail: detail})
	if err != nil {
		s.log.Error("agents: record a call", "tool", rec.row.Name, "err", err)
	}
}

// Bounds of what the feed keeps of a call's arguments: an agent chooses how much it sends.
const (
	maxArgsKept = 20
	maxArgKey   = 64
	maxArgValue = 200
)

// argsDetail is a call's arguments as the feed keeps them: at most maxArgsKept properties, by
// name, each value as text (a string as itself, anything else as its JSON), names and values
// cut; "…" counts the properties left out.
func argsDetail(raw []byte) map[string]any {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	out := make(map[string]any, min(len(m), maxArgsKept)+1)
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == maxArgsKept {
			out["…"] = fmt.Sprintf("%d more", len(m)-maxArgsKept)
			break
		}
		v := string(m[k])
		var str string
		if json.Unmarshal(m[k], &str) == nil {
			v = str
		}
		key, _ := reveal.Cut(k, maxArgKey, "…")
		out[key], _ = reveal.Cut(v, maxArgValue, "…")
	}
	return out
}
