package agents

import (
	"context"
	"errors"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/pending"
	"maven/app/runner"
)

// Pending keeps the calls that wait for the owner's approval on the phone (*pending.Service,
// docs/design.md#rule-30).
type Pending interface {
	// Submit fails with pending.ErrTooMany for a client that holds too many pending calls.
	Submit(ctx context.Context, req pending.Request) (pending.Call, pending.Submitted, error)
	Await(ctx context.Context, id int64, wait time.Duration) (pending.Call, error)
	Collect(ctx context.Context, id int64) (bool, error)
	Words(c pending.Call) string
	TooManyWords() string
	Link(id int64) string
	// Wait is the longest an agent's request waits for the owner (approval_wait).
	Wait() time.Duration
}

// approvalInput is the key of the URL elicitation that carries a pending call's link.
const approvalInput = "maven_approval"

// askOwner makes a call that needs the owner a pending call (docs/design.md#rule-31) and
// answers with what came of it within approval_wait: the result when the owner approved it in
// time (or an identical call ran before and its result was kept), else words saying what waits
// for the owner and where. A client that advertises URL-mode elicitation is first sent the
// approval link that way: go-sdk asks a 2025-era client with elicitation/create and calls the
// handler again with its answer; a 2026-07-28 client gets an input_required result and calls
// again. Whatever it answers is no approval: the call then waits for the owner as any other.
func (s *Service) askOwner(ctx context.Context, c *client, rec callRecord, e *entry, row allowlist.Tool, args map[string]any,
	class Class, req *sdk.CallToolRequest) *sdk.CallToolResult {
	call, how, err := s.d.Pending.Submit(ctx, pending.Request{Client: pending.Client{ID: c.id, Name: rec.clientName},
		Row: row, Args: args, Absent: e.absent(args), Why: class.Words()})
	switch {
	case errors.Is(err, pending.ErrTooMany):
		return s.refuse(ctx, rec, OutcomeNeedsOwner, "too many calls wait for approval", s.d.Pending.TooManyWords())
	case err != nil:
		s.log.Error("agents: keep a call for approval", "tool", row.Name, "err", err)
		return s.refuse(ctx, rec, OutcomeFailed, "the call could not be kept for approval",
			"Maven could not ask for your approval just now; try again. Nothing was done.")
	case how == pending.Kept:
		return s.ran(ctx, rec, row, call)
	}
	rec.call = call.ID
	answered := len(req.Params.InputResponses) > 0
	if !answered && elicitsURL(req) {
		s.record(ctx, rec, OutcomeNeedsOwner, class.Words()+"; sent the approval link", s.d.Pending.Words(call))
		return &sdk.CallToolResult{
			InputRequests: sdk.InputRequestMap{approvalInput: &sdk.ElicitParams{Mode: "url", Message: s.d.Pending.Words(call),
				URL: s.d.Pending.Link(call.ID), ElicitationID: "maven-approval-" + strconv.FormatInt(call.ID, 10)}},
			RequestState: "approval-" + strconv.FormatInt(call.ID, 10),
		}
	}
	if answered && declined(req) {
		return s.refuse(ctx, rec, OutcomeNeedsOwner, class.Words()+"; the approval link was declined", s.d.Pending.Words(call))
	}
	call, err = s.d.Pending.Await(ctx, call.ID, s.d.Pending.Wait())
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		s.log.Error("agents: wait for the owner", "call", call.ID, "err", err)
	}
	if call.State == pending.StateRan {
		if _, err := s.d.Pending.Collect(ctx, call.ID); err != nil {
			s.log.Error("agents: collect a call's result", "call", call.ID, "err", err)
		}
		return s.ran(ctx, rec, row, call)
	}
	return s.refuse(ctx, rec, OutcomeNeedsOwner, class.Words()+"; "+call.State.Words(), s.d.Pending.Words(call))
}

// ran answers with the result of a pending call that ran, as a call that ran at once is
// answered.
func (s *Service) ran(ctx context.Context, rec callRecord, row allowlist.Tool, call pending.Call) *sdk.CallToolResult {
	rec.call = call.ID
	res := runner.Result{}
	if call.Result != nil {
		blocks, err := call.Result.Blocks()
		if err != nil {
			s.log.Error("agents: read a kept result", "call", call.ID, "err", err)
		}
		res = runner.Result{Output: call.Result.Output, IsError: call.Result.IsError, Truncated: call.Result.Truncated,
			Content: blocks, Structured: call.Result.Structured}
	}
	if row.IsMCP() && res.Content == nil {
		// A result whose content is gone (swept, or a failure's words) is its text.
		res.Content = []sdk.Content{&sdk.TextContent{Text: res.Output}}
	}
	rec.isError = res.IsError
	s.record(ctx, rec, OutcomeRan, "approved on the phone", res.Output)
	return toolResult(row, res)
}

// elicitsURL reports whether the agent's client advertises URL-mode elicitation, in this
// request (2026-07-28) or when its session began (the 2025 era).
func elicitsURL(req *sdk.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// declined reports whether the agent's client answered the approval link's elicitation with
// anything but accept: no one is on the way to the page, so the call does not wait.
func declined(req *sdk.CallToolRequest) bool {
	r, ok := req.Params.InputResponses[approvalInput].(*sdk.ElicitResult)
	return ok && r.Action != "accept"
}
