package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/internal/suggest"
)

const (
	maxRecorded   = 500             // the most characters of an utterance an audit event keeps
	appendTimeout = 5 * time.Second // bounds writing a turn's events to the feed
)

// record queues a turn for the activity feed, with the row it involved and the arguments bound.
// Within Turn it is held until the reply is known (turnRecord).
func (s *Service) record(ctx context.Context, row allowlist.Tool, req Request, outcome Outcome, args map[string]any, reason string) {
	detail := turnDetail(req, reason)
	if args != nil && row.ID != 0 {
		// Its own copy: the feed encodes it later, on its writer's goroutine, while the
		// conversation may go on filling the turn's arguments.
		detail["args"] = maps.Clone(args)
	}
	e := activity.Event{At: s.opts.Now(), Actor: "voice", Action: activity.ActionVoiceTurn,
		ToolID: row.ID, Tool: row.Name, Outcome: string(outcome), Detail: detail}
	if tr, ok := ctx.Value(turnRecordKey{}).(*turnRecord); ok && tr.hold(e) {
		return
	}
	s.append(e)
}

// append writes e to the activity feed, if the service has one. The daemon's is an
// activity.Batcher, so a turn's reply does not wait for its entry's commit.
func (s *Service) append(events ...activity.Event) {
	if s.d.Activity == nil || len(events) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), appendTimeout)
	defer cancel()
	if err := s.d.Activity.Append(ctx, events...); err != nil {
		s.opts.Logger.Error("voice: record turns", "events", len(events), "err", err)
	}
}

// turnRecord holds what a turn records until Turn knows what Maven said back, which the last
// event (the turn's own) then keeps as "reply", cut like the utterance.
type turnRecord struct {
	mu     sync.Mutex
	done   bool
	events []activity.Event
}

type turnRecordKey struct{}

// hold keeps e for the reply, unless the turn has answered already.
func (tr *turnRecord) hold(e activity.Event) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.done {
		return false
	}
	tr.events = append(tr.events, e)
	return true
}

// flush queues the held events, the last with the reply spoken.
func (s *Service) flush(tr *turnRecord, speech string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.done = true
	if n := len(tr.events); n > 0 {
		if r := []rune(speech); len(r) > maxRecorded {
			speech = string(r[:maxRecorded]) + "…"
		}
		tr.events[n-1].Detail["reply"] = speech
	}
	s.append(tr.events...)
}

// flag records what a server attempted that the owner should see: an event of the turn marked
// flagged, with what and why. It never holds what the owner said.
func (s *Service) flag(row allowlist.Tool, req Request, flagged, reason string) {
	detail := turnDetail(req, reason)
	detail["flagged"] = flagged
	s.append(activity.Event{At: s.opts.Now(), Actor: "voice", Action: activity.ActionVoiceTurn,
		ToolID: row.ID, Tool: row.Name, Outcome: string(OutcomeRefused), Detail: detail})
}

// recordNoRow records a turn that involved no row: it matched nothing, or came while locked.
func (s *Service) recordNoRow(ctx context.Context, req Request, outcome Outcome, reason string) {
	s.record(ctx, allowlist.Tool{}, req, outcome, nil, reason)
}

func turnDetail(req Request, reason string) map[string]any {
	utterance := req.Text
	if cut, ok := firstRunes(utterance, maxRecorded); ok {
		utterance = cut + "…"
	}
	return map[string]any{"conversation": req.Conversation, "utterance": utterance, "user_id": req.UserID, "reason": reason}
}

// firstRunes is s cut after n characters, reading no further; ok reports a cut.
func firstRunes(s string, n int) (string, bool) {
	for i := range s {
		if n == 0 {
			return s[:i], true
		}
		n--
	}
	return s, false
}

// unspoken returns the property of a refusal that is only because the one argument a tool
// takes from speech was not said.
func unspoken(err error) (string, bool) {
	var ae *mcp.ArgsError
	if errors.As(err, &ae) && ae.Unspoken && len(ae.Missing) == 1 {
		return ae.Missing[0], true
	}
	return "", false
}

// argsReply says why the words after a tool's name cannot be its arguments, and how the owner
// can make them so.
func argsReply(row allowlist.Tool, err error, saved phrases.Saved, schema phrases.Schema) Reply {
	say := capitalize(spokenName(row))
	hint := " A phrase on the tools page can bind them."
	if saved.UsableFor(row) {
		forms := make([]string, len(saved.Lines))
		for i, line := range saved.Lines {
			forms[i] = sayPhrase(line, schema, spokenWords)
		}
		hint = " Say it as: " + strings.Join(forms, ", or ") + "."
	}
	var ae *mcp.ArgsError
	switch {
	case errors.Is(err, errLocalArgs):
		return Reply{Speech: fmt.Sprintf("%s takes no arguments; say just its name.", say), Outcome: OutcomeRefused, Tool: row.Name}
	case errors.Is(err, mcp.ErrUndescribedArg):
		return Reply{Speech: fmt.Sprintf("%s requires an argument its description does not explain, so I will not guess it.", say), Outcome: OutcomeRefused, Tool: row.Name}
	case errors.As(err, &ae) && len(ae.Missing) > 0:
		return Reply{Speech: fmt.Sprintf("%s needs %s, which I cannot take from the words after its name.%s", say, phrases.JoinList(ae.Missing, "and"), hint), Outcome: OutcomeNeedsArgs, Tool: row.Name}
	}
	return Reply{Speech: fmt.Sprintf("%s takes no words after its name.%s", say, hint), Outcome: OutcomeNeedsArgs, Tool: row.Name}
}

// spokenName is how a reply names a row: "list tasks on vikunja", "restart router".
func spokenName(row allowlist.Tool) string {
	if row.IsMCP() {
		return spokenWords(row.RemoteName()) + " on " + spokenWords(row.Server())
	}
	return spokenWords(row.Name)
}

// noMatchSpeech suggests the enabled names closest to what was said.
func noMatchSpeech(m *allowlist.Matcher, text string) string {
	names := m.Names()
	if len(names) == 0 {
		return "No tools are enabled yet; enable some on the tools page."
	}
	words := allowlist.SpokenWords(text)
	type scored struct {
		name string
		d    int
	}
	var best []scored
	for _, n := range names {
		k := len(strings.Fields(n))
		heard := strings.Join(words[:min(k, len(words))], " ")
		if d := suggest.Distance(heard, n); d <= max(2, len(n)/2) {
			best = append(best, scored{n, d})
		}
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	if len(best) == 0 {
		return "I do not know a tool by that name. Ask what you can say to hear them."
	}
	var out []string
	for i := 0; i < len(best) && i < 3; i++ {
		out = append(out, best[i].name)
	}
	return fmt.Sprintf("I do not know a tool by that name. Did you mean %s?", phrases.JoinList(out, "or"))
}

// readBack reads the bound arguments out loud, so the owner confirms what will actually run.
func readBack(args map[string]any) string {
	if len(args) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(args))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = spokenWords(k) + " " + spokenValue(args[k])
	}
	return " with " + phrases.JoinList(parts, "and")
}

func argsKey(args map[string]any) (string, error) {
	b, err := json.Marshal(args) // map keys are sorted: a stable form
	return string(b), err
}

func failureReason(err error) string {
	switch {
	case errors.Is(err, mcp.ErrNotConnected):
		return "its server is not connected"
	case errors.Is(err, mcp.ErrLocked):
		return "its server is locked"
	case errors.Is(err, mcp.ErrNeedsSignIn):
		return "its server wants you to sign in to it: press Sign in on the servers card"
	case errors.Is(err, runner.ErrNotEnabled):
		// Disabled, or redefined by its server, between the match and the run (docs/design.md#rule-5).
		return "it is no longer enabled; the tools page says why"
	case errors.Is(err, runner.ErrChanged):
		return "it changed a moment ago; say it again"
	case errors.Is(err, runner.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "it took too long"
	case errors.Is(err, limits.ErrOutside):
		// The limits changed between the confirm and the run: nothing was sent.
		return "it is outside your limits now; " + strings.TrimSuffix(limitSpeech(err), ".")
	}
	return "something went wrong; the daemon log says what"
}
