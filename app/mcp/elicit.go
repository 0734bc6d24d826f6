package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/runner"
)

// Elicitation is a server's request for input from the owner during a call (MCP elicitation).
// Every field but Server and Tool is the server's own text: data to show or say, never
// instructions.
type Elicitation struct {
	Server  string
	Tool    string // the tool whose call the server asks for
	Mode    string // "form" (the only mode Maven declares) or "url"
	Message string
	// Schema is a form's requested schema: an object of flat properties, as the server sent it.
	Schema json.RawMessage
	URL    string // url mode: the page the server wants opened; never opened
}

// ElicitAnswer is the owner's answer: Action is ActionAccept (with Content for the form's
// fields), ActionDecline or ActionCancel.
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// The actions of an answer (MCP elicitation). A question not put to the owner is declined.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline" // refused, or not put to the owner
	ActionCancel  = "cancel"  // dismissed without a choice
)

// Elicitor puts a server's questions to the owner: the voice turn that started the call. Elicit
// blocks until the owner answers, the question is given up, or ctx is done (the call ended);
// the clocks of the call's timeouts are stopped meanwhile (runner.Pause). The answer goes back
// to the same call only: it supplies what the server asked for, and enables or confirms
// nothing.
type Elicitor interface {
	Elicit(ctx context.Context, e Elicitation) (ElicitAnswer, error)
}

type elicitorKey struct{}

// WithElicitor returns ctx carrying e, for CallTool: the server's questions during calls made
// with it go to e. A call made without one has every question declined.
func WithElicitor(ctx context.Context, e Elicitor) context.Context {
	return context.WithValue(ctx, elicitorKey{}, e)
}

// inflight is one call in progress on a server.
type inflight struct {
	tool     string
	ctx      context.Context // the call's; ends with it
	elicitor Elicitor        // nil: the call was not started by a voice turn
}

type inflightKey struct{}

// beginCall registers a call to tool made with ctx, until done is called. The context returned
// carries it: a 2026-07-28 server's question arrives on the call's own context (go-sdk relays
// an input_required result from inside CallTool), a 2025-era one as a request of its own that
// beginCall's register tells the call of.
func (s *supervisor) beginCall(ctx context.Context, tool string) (context.Context, func()) {
	e, _ := ctx.Value(elicitorKey{}).(Elicitor)
	c := &inflight{tool: tool, elicitor: e}
	ctx = context.WithValue(ctx, inflightKey{}, c)
	c.ctx = ctx
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[*inflight]struct{}{}
	}
	s.calls[c] = struct{}{}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.calls, c)
		s.mu.Unlock()
	}
}

// askingCall finds the call a question belongs to: the one whose context it came on, else the
// one call in progress on the server. A 2025-era elicitation/create names no call, so with none
// or several in progress it belongs to none that Maven can tell.
func (s *supervisor) askingCall(ctx context.Context) (*inflight, string) {
	if c, ok := ctx.Value(inflightKey{}).(*inflight); ok {
		return c, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch len(s.calls) {
	case 0:
		return nil, "no call is in progress"
	case 1:
		for c := range s.calls {
			return c, ""
		}
	}
	return nil, fmt.Sprintf("%d calls are in progress and the question does not say which one it is for", len(s.calls))
}

// elicit is the client's ElicitationHandler: it relays a server's question to the voice turn
// that started the call it is for, and declines any other (a refresh, a call not started by
// voice: docs/design.md#rule-18), logging why. The call's clocks stop while the owner is asked.
func (s *supervisor) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	e := Elicitation{Server: s.name, Mode: req.Params.Mode, Message: req.Params.Message, URL: req.Params.URL}
	if e.Mode == "" {
		e.Mode = "form"
	}
	if req.Params.RequestedSchema != nil {
		raw, err := json.Marshal(req.Params.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("read the requested schema: %w", err)
		}
		e.Schema = raw
	}
	call, why := s.askingCall(ctx)
	if call != nil && call.elicitor == nil {
		why = "the call was not started by a voice turn"
	}
	if why != "" {
		s.logger.Warn("mcp server asked for input; declined", "why", why, "mode", e.Mode, "message", s.errText(errors.New(e.Message)))
		return &sdk.ElicitResult{Action: ActionDecline}, nil
	}
	e.Tool = call.tool
	// The wait for the owner ends with the call (cancelled, its session gone) or the request.
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(call.ctx, cancel)()
	defer runner.Pause(call.ctx)()
	a, err := call.elicitor.Elicit(ectx, e)
	if err != nil {
		return nil, fmt.Errorf("the owner was not asked: %w", err)
	}
	if call.ctx.Err() != nil {
		// Stopped while it asked: the server gets no answer, and a 2026-07-28 call is not
		// sent again with one. go-sdk's own context for the call follows the call's a moment
		// later (callDetached), too late to stop that retry itself.
		return nil, fmt.Errorf("the call was stopped while its server asked: %w", context.Cause(call.ctx))
	}
	return &sdk.ElicitResult{Action: a.Action, Content: a.Content}, nil
}
