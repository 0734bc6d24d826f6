package voice

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/runner"
)

// maxQuestions is how many questions one call may put to the owner; past it they are declined.
const maxQuestions = 5

// call is a run a voice turn started. It runs on a goroutine of its own, so that when its MCP
// server asks the owner something, the question can be this turn's reply while the call waits
// for the answer; the next turn of the conversation brings the answer and, in the end, the
// call's result. It is the call's mcp.Elicitor.
type call struct {
	s            *Service
	conversation string
	row          allowlist.Tool
	args         map[string]any
	cancel       context.CancelFunc
	done         chan callEnd         // the run ended; buffered
	asks         chan *serverQuestion // a question, waiting for a turn to put it

	mu       sync.Mutex
	asked    int
	declined []string // questions declined without the owner, and why: said before the result
}

type callEnd struct {
	res runner.Result
	err error
}

// startCall runs row with args. The run outlives the turn that started it only while its server
// waits for the owner's answer; the turn that waits for it cancels it if the front end gives up.
func (s *Service) startCall(ctx context.Context, req Request, row allowlist.Tool, args map[string]any) *call {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &call{s: s, conversation: req.Conversation, row: row, args: args, cancel: cancel,
		done: make(chan callEnd, 1), asks: make(chan *serverQuestion)}
	go func() {
		defer cancel()
		res, err := s.d.Runner.Exec(mcp.WithElicitor(ctx, c), row, args)
		c.done <- callEnd{res, err}
	}()
	return c
}

// await answers the turn with the call's result, or with its server's question.
func (s *Service) await(ctx context.Context, c *call, req Request) Reply {
	select {
	case end := <-c.done:
		return s.ended(ctx, c, req, end)
	case q := <-c.asks:
		return s.putQuestion(ctx, c, q, req, nil, 0, s.opts.Now().Add(s.opts.ConfirmWindow))
	case <-ctx.Done():
		// No one will hear the answer: stop the call, as a run inside the turn always was.
		c.cancel()
		return s.ended(ctx, c, req, <-c.done)
	}
}

// ended answers with the result of a run: a sentence about a JSON result, the text of any
// other, cut for speech; the whole result goes in Output. Questions declined on the way are
// said first.
func (s *Service) ended(ctx context.Context, c *call, req Request, end callEnd) Reply {
	row, args := c.row, c.args
	before := c.declinedSpeech()
	if end.err != nil {
		s.opts.Logger.Warn("voice: tool failed", "tool", row.Name, "err", end.err)
		s.record(ctx, row, req, OutcomeError, args, end.err.Error())
		return Reply{Speech: before + fmt.Sprintf("I could not run %s: %s.", spokenName(row), failureReason(end.err)), Outcome: OutcomeError, Tool: row.Name}
	}
	s.record(ctx, row, req, OutcomeRan, args, "")
	res := end.res
	speech := res.Output
	if sum, ok := summarize(res.Output); ok {
		speech = sum
	}
	speech = speakable(speech, s.opts.MaxSpeech)
	if res.IsError {
		if speech == "" {
			speech = "no details"
		}
		said := before + capitalize(spokenName(row)) + " reported an error: "
		return Reply{Speech: said + speech, Output: said + strings.TrimSpace(res.Output), Outcome: OutcomeError, Tool: row.Name}
	}
	if speech == "" {
		speech = "Done."
	}
	return Reply{Speech: before + speech, Output: before + strings.TrimSpace(res.Output), Outcome: OutcomeRan, Tool: row.Name}
}

// Elicit implements mcp.Elicitor: a question voice can put (one field, or a form whose fields
// all have defaults) waits for a turn to put it and then for the owner's answer, at most
// ConfirmWindow; after that it is declined and the call is stopped. Any other question is
// declined at once, and the owner hears why with the result.
func (c *call) Elicit(ctx context.Context, e mcp.Elicitation) (mcp.ElicitAnswer, error) {
	f, why := readForm(e)
	if asked := credentialAsked(e, f, why == ""); asked != "" {
		why = "asked for " + asked + "; Maven never passes credentials by voice"
		c.s.opts.Logger.Warn("voice: declined a server's request for credentials", "tool", c.row.Name, "server", e.Server, "asked", asked)
		c.s.flag(c.row, Request{Conversation: c.conversation}, "credential request",
			spokenWords(e.Server)+" "+why+"; it said: "+speakable(e.Message, maxRecorded))
	}
	c.mu.Lock()
	c.asked++
	if why == "" && c.asked > maxQuestions {
		why = fmt.Sprintf("asked more than %d questions", maxQuestions)
	}
	if why != "" {
		c.declined = append(c.declined, fmt.Sprintf("%s %s, so I declined.", capitalize(spokenWords(e.Server)), why))
	}
	c.mu.Unlock()
	if why != "" {
		c.s.opts.Logger.Info("voice: declined a server's question", "tool", c.row.Name, "why", why)
		return declined, nil
	}
	q := &serverQuestion{e: e, form: f, answer: make(chan mcp.ElicitAnswer, 1)}
	select {
	case c.asks <- q:
	case <-ctx.Done():
		return mcp.ElicitAnswer{}, ctx.Err()
	}
	t := time.NewTimer(c.s.opts.ConfirmWindow)
	defer t.Stop()
	select {
	case a := <-q.answer:
		return a, nil
	case <-t.C:
		c.unanswered(q)
		return declined, nil
	case <-ctx.Done():
		return mcp.ElicitAnswer{}, ctx.Err()
	}
}

// unanswered stops a call whose question the owner did not answer in time, and records so.
func (c *call) unanswered(q *serverQuestion) {
	c.cancel()
	reason := fmt.Sprintf("no answer within %s to %s's question; declined it and stopped the call", c.s.opts.ConfirmWindow, q.e.Server)
	c.s.opts.Logger.Info("voice: "+reason, "tool", c.row.Name)
	c.s.record(context.Background(), c.row, Request{Conversation: c.conversation}, OutcomeCancelled, nil, reason)
}

// declinedSpeech says which questions were declined without the owner, and why.
func (c *call) declinedSpeech() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.declined) == 0 {
		return ""
	}
	return strings.Join(c.declined, " ") + " "
}
