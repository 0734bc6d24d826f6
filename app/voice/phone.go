package voice

import (
	"context"
	"errors"
	"strings"
	"time"

	"maven/app/allowlist"
	pendingcalls "maven/app/pending"
	"maven/app/phrases"
)

// Pending keeps the calls that wait for the owner's approval on the phone (*pending.Service).
type Pending interface {
	// Submit fails with pendingcalls.ErrTooMany while voice holds too many pending calls.
	Submit(ctx context.Context, req pendingcalls.Request) (pendingcalls.Call, pendingcalls.Submitted, error)
	AwaitNotified(ctx context.Context, id int64, wait time.Duration) (pendingcalls.Call, error)
	Words(c pendingcalls.Call) string
	TooManyWords() string
}

// noticeWait is the longest a turn waits to know whether the owner was told of its pending
// call: the reply says so when no notifier could tell them.
const noticeWait = 3 * time.Second

// onPhone makes a turn to a row set to confirm on the phone a pending call of client "voice"
// (docs/design.md#rule-32), and the reply says the request went to the phone: a spoken yes never
// runs it. The same turn after the owner approved it gets the result, and runs nothing again.
func (s *Service) onPhone(ctx context.Context, req Request, row allowlist.Tool, schema phrases.Schema, args map[string]any) Reply {
	if s.d.Pending == nil {
		r := Reply{Speech: "This tool is confirmed on your phone, and this Maven cannot ask there.", Outcome: OutcomeRefused, Tool: row.Name}
		s.record(ctx, row, req, r.Outcome, args, "no pending calls")
		return r
	}
	var absent []string
	for _, name := range schema.Names {
		if _, ok := args[name]; !ok {
			absent = append(absent, name)
		}
	}
	call, how, err := s.d.Pending.Submit(ctx, pendingcalls.Request{Client: pendingcalls.Voice, Row: row, Args: args, Absent: absent,
		Why: "you set it to be confirmed on your phone"})
	switch {
	case errors.Is(err, pendingcalls.ErrTooMany):
		r := Reply{Speech: s.d.Pending.TooManyWords(), Outcome: OutcomeRefused, Tool: row.Name}
		s.record(ctx, row, req, r.Outcome, args, "too many calls wait for approval")
		return r
	case err != nil:
		return s.failed(ctx, row, req, err)
	case how == pendingcalls.Kept:
		return s.approved(ctx, req, row, args, call)
	case how == pendingcalls.Created:
		if call, err = s.d.Pending.AwaitNotified(ctx, call.ID, noticeWait); err != nil {
			s.opts.Logger.Warn("voice: wait for a call's notice", "call", call.ID, "err", err)
		}
	}
	r := Reply{Speech: s.d.Pending.Words(call), Outcome: OutcomeConfirm, Tool: row.Name}
	s.record(ctx, row, req, r.Outcome, args, "sent to the phone for approval")
	return r
}

// approved answers with the result of a call the owner approved on the phone.
func (s *Service) approved(ctx context.Context, req Request, row allowlist.Tool, args map[string]any, call pendingcalls.Call) Reply {
	res := pendingcalls.Result{}
	if call.Result != nil {
		res = *call.Result
	}
	s.record(ctx, row, req, OutcomeRan, args, "approved on the phone")
	speech := res.Output
	if sum, ok := summarize(res.Output); ok {
		speech = sum
	}
	speech = speakable(speech, s.opts.MaxSpeech)
	if res.IsError {
		if speech == "" {
			speech = "no details"
		}
		said := capitalize(spokenName(row)) + " reported an error: "
		return Reply{Speech: said + speech, Output: said + strings.TrimSpace(res.Output), Outcome: OutcomeError, Tool: row.Name}
	}
	if speech == "" {
		speech = "Done."
	}
	return Reply{Speech: speech, Output: strings.TrimSpace(res.Output), Outcome: OutcomeRan, Tool: row.Name}
}
