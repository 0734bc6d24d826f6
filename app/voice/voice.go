// Package voice turns utterances into actions: it drops the lead-ins people say, matches an
// owner's phrase or an enabled row's name, binds and coerces the arguments, asks for a missing
// one, asks before anything destructive runs, and answers in short sentences meant to be heard
// (docs/design.md#rule-15 to docs/design.md#rule-19).
package voice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/internal/enum"
)

// Outcome is the kind of answer a turn got; the values are part of the webhook contract.
type Outcome string

// The outcomes of a turn.
const (
	OutcomeRan       Outcome = "ran"
	OutcomeConfirm   Outcome = "confirm"
	OutcomeAsk       Outcome = "ask" // a question for a missing argument; the next turn answers it
	OutcomeCancelled Outcome = "cancelled"
	OutcomeRefused   Outcome = "refused"
	OutcomeNeedsArgs Outcome = "needs_args"
	OutcomeNoMatch   Outcome = "no_match"
	OutcomeLocked    Outcome = "locked"
	OutcomeError     Outcome = "error"
	OutcomeHelp      Outcome = "help" // "what can I say": the tools and how to say them
)

// outcomes is every outcome, in the order of the webhook contract (docs/design.md#http), with
// its words: what the activity feed and its filter say of it. An outcome is added here, or
// TestEveryOutcomeHasItsWords fails (docs/style.md#enumerations).
var outcomes = enum.Table[Outcome, string]{
	{Member: OutcomeRan, Said: "ran"},
	{Member: OutcomeConfirm, Said: "asked to confirm"},
	{Member: OutcomeCancelled, Said: "cancelled"},
	{Member: OutcomeRefused, Said: "refused"},
	{Member: OutcomeNeedsArgs, Said: "needs arguments"},
	{Member: OutcomeNoMatch, Said: "matched nothing"},
	{Member: OutcomeLocked, Said: "locked"},
	{Member: OutcomeError, Said: "failed"},
	{Member: OutcomeHelp, Said: "said what to say"},
	{Member: OutcomeAsk, Said: "asked for a value"},
}

// Outcomes returns every outcome, in the order of the webhook contract (docs/design.md#http):
// what a filter on outcomes may name.
func Outcomes() []Outcome { return outcomes.Members() }

// Words are what the owner is told of the outcome: "asked to confirm". An outcome this daemon
// does not know reads as it is recorded.
func (o Outcome) Words() string {
	if words, ok := outcomes.Of(o); ok {
		return words
	}
	return string(o)
}

// Request is one utterance.
type Request struct {
	Conversation string
	Text         string
	// UserID names who spoke, as the front end knows them (Home Assistant's user_id); it is
	// recorded, never trusted for anything.
	UserID string
}

// Reply is what the voice front end says back.
type Reply struct {
	Speech string
	// Output is the full text: a tool's whole result where Speech summarises or cuts it, the
	// unlock address where Speech only says to unlock; Speech when there is no more to it.
	Output       string
	Outcome      Outcome
	ExpectsReply bool
	Tool         string // the row's name, when a row was involved
}

// Rows is the allowlist as the voice service uses it.
type Rows interface {
	List(ctx context.Context, f allowlist.Filter) ([]allowlist.Tool, error)
	// Get returns allowlist.ErrNotFound if the row is gone.
	Get(ctx context.Context, id int64) (allowlist.Tool, error)
	Version() uint64
}

// Binder reads an MCP row for binding the words after its name to its named arguments by
// rule 15 (mcp.Manager.Positional); the index keeps one per enabled row. Bind's errors wrap
// mcp.ErrNeedsArgs or mcp.ErrUndescribedArg.
type Binder interface {
	Positional(row allowlist.Tool) mcp.Positional
}

// Runner runs an enabled row (runner.Executor).
type Runner interface {
	Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (runner.Result, error)
}

// LockState tells whether the daemon is locked.
type LockState interface {
	Locked() bool
}

// Phrases are the owner's saved phrases (phrases.Service).
type Phrases interface {
	Phrases(ctx context.Context, ids []int64) (map[int64]phrases.Saved, error)
	Version() uint64
}

// Recorder appends events to the activity feed (activity.Log): every turn is one.
type Recorder interface {
	Append(ctx context.Context, events ...activity.Event) error
}

// Deps are the services a voice turn uses. Phrases, Limits, Activity and Pending may be nil:
// no phrases, no limits, turns go unrecorded, and a row set to confirm on the phone is refused
// (tests that are about something else).
type Deps struct {
	Rows     Rows
	Binder   Binder
	Runner   Runner
	Lock     LockState
	Phrases  Phrases
	Limits   Limits
	Activity Recorder
	Pending  Pending
}

// Options tune the service; zero values take the defaults.
type Options struct {
	ConfirmWindow time.Duration // how long a question waits for its answer (60s)
	MaxPending    int           // pending questions kept at most (10,000)
	MaxSpeech     int           // characters of tool output read out (400)
	// Origins are the browser origins the owner configured (config origins): the locked reply
	// says how to unlock with them.
	Origins []string
	// TurnsPerSecond and Burst bound the turns taken (DefaultTurnsPerSecond, DefaultBurst);
	// a turn over the rate is answered, and nothing of it recorded or run.
	TurnsPerSecond float64
	Burst          int
	// WakeWords are dropped from the start of an utterance ("hey maven"); nil means
	// DefaultWakeWords, empty none.
	WakeWords []string
	OnTurn    func(Outcome) // told every turn's outcome (metrics); may be nil
	Now       func() time.Time
	Logger    *slog.Logger
}

// Service handles voice turns.
type Service struct {
	d      Deps
	opts   Options
	wake   [][]string
	locked Reply // the locked reply, for opts.Origins
	// hears is the most words of an utterance a turn reads: its lead-ins at their longest,
	// MaxWords, and one to tell that there are more.
	hears int
	convs *conversations
	limit *rate.Limiter // turns taken (DefaultTurnsPerSecond, DefaultBurst)

	mu       sync.Mutex
	idx      *index
	idxRows  uint64
	idxWords uint64
}

// New returns a voice service; Close it before the database closes.
func New(d Deps, opts Options) *Service {
	if opts.ConfirmWindow == 0 {
		opts.ConfirmWindow = 60 * time.Second
	}
	if opts.MaxPending == 0 {
		opts.MaxPending = 10000
	}
	if opts.MaxSpeech == 0 {
		opts.MaxSpeech = 400
	}
	if opts.TurnsPerSecond == 0 {
		opts.TurnsPerSecond = DefaultTurnsPerSecond
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.WakeWords == nil {
		opts.WakeWords = DefaultWakeWords
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var wake []string
	for _, w := range opts.WakeWords {
		wake = append(wake, heardAs(w))
	}
	s := &Service{d: d, opts: opts, wake: wordLists(wake...), convs: newConversations(opts.MaxPending),
		limit: rate.NewLimiter(rate.Limit(opts.TurnsPerSecond), opts.Burst)}
	s.hears = maxLeadIns*longest(s.wake, fillers) + MaxWords + 1
	s.locked = unlockReply(opts.Origins)
	return s
}

// CancelPending forgets every pending question, as locking the daemon must; a call waiting for
// the owner's answer to its server's question is stopped.
func (s *Service) CancelPending() { s.convs.clear() }

// Pending returns how many questions are waiting, for tests and metrics.
func (s *Service) Pending() int { return s.convs.len() }

// Turn handles one utterance of a conversation. The activity feed keeps what Maven said back
// with the turn.
func (s *Service) Turn(ctx context.Context, req Request) Reply {
	tr := &turnRecord{}
	r := s.turn(context.WithValue(ctx, turnRecordKey{}, tr), req)
	s.flush(tr, r.Speech)
	if r.Output == "" {
		r.Output = r.Speech
	}
	if s.opts.OnTurn != nil {
		s.opts.OnTurn(r.Outcome)
	}
	return r
}

func (s *Service) turn(ctx context.Context, req Request) Reply {
	if !s.limit.AllowN(s.opts.Now(), 1) {
		return Reply{Speech: "Too many requests at once; wait a moment and try again.", Outcome: OutcomeRefused}
	}
	if s.d.Lock.Locked() {
		s.recordNoRow(ctx, s.forFeed(req), OutcomeLocked, "")
		s.convs.clear()
		return s.locked
	}
	words, starts, ok := s.hear(req.Text)
	if !ok {
		// Unmatched, and any question waiting is left waiting.
		r := Reply{Speech: fmt.Sprintf("That is more than I take in one turn: say it in at most %d words.", MaxWords), Outcome: OutcomeRefused}
		s.recordNoRow(ctx, s.forFeed(req), r.Outcome, fmt.Sprintf("more than %d words", MaxWords))
		return r
	}
	now := s.opts.Now()
	if p, ok := s.convs.take(req.Conversation, now); ok {
		switch {
		case saysOneOf(req.Text, repeats) && !now.After(p.expires):
			return s.repeat(ctx, p, req)
		case p.choice != nil:
			return s.choose(ctx, p, req, words, starts, now)
		}
		if p.server != nil {
			return s.answerServer(ctx, p, req, now)
		}
		if p.asking {
			return s.fill(ctx, p, req, now)
		}
		return s.confirm(ctx, p, req, now)
	}
	return s.newTurn(ctx, req, words, starts, now)
}

// forFeed is req as the feed may keep it when no question reads it: words said while a
// server's question waits may be its answer, and an answer is never kept.
func (s *Service) forFeed(req Request) Request {
	if p, ok := s.convs.waiting(req.Conversation); ok && p.server != nil {
		req.Text = p.server.q.answeredAs()
	}
	return req
}

// hear reads the words of an utterance a turn considers and where it may start (leadIns); ok is
// false when it says more than MaxWords after its lead-ins. It reads at most s.hears words,
// however long the text.
func (s *Service) hear(text string) (words []phrases.Word, starts []int, ok bool) {
	words, _ = phrases.FirstWords(text, s.hears)
	starts = leadIns(words, s.wake, fillers)
	return words, starts, len(words)-starts[len(starts)-1] <= MaxWords
}

// newTurn tries the utterance as said, then without each lead-in in turn: by the owner's
// phrases first (their binding is explicit), then by a tool's name.
func (s *Service) newTurn(ctx context.Context, req Request, words []phrases.Word, starts []int, now time.Time) Reply {
	idx, err := s.index(ctx)
	if err != nil {
		s.opts.Logger.Error("voice: load enabled tools", "err", err)
		return Reply{Speech: "Something went wrong on my side; the daemon log says what.", Outcome: OutcomeError}
	}
	heard := ""
	// A "please" that ends the utterance is no part of a name, a phrase or an argument.
	end := withoutPlease(words)
	for _, i := range starts {
		if i >= end {
			break
		}
		text := req.Text[words[i].Start:words[end-1].End]
		heard = text
		if slices.Contains(helpQuestions, phrases.Join(words[i:end])) {
			return s.help(ctx, idx, req)
		}
		if r, ok := s.byPhrase(ctx, idx, req, words[i:end], now); ok {
			return r
		}
		if r, ok := s.byName(ctx, idx, req, text, now); ok {
			return r
		}
	}
	r := Reply{Speech: noMatchSpeech(idx.matcher, heard), Outcome: OutcomeNoMatch}
	switch {
	case slices.ContainsFunc(answerForms(words, starts), allAffirmative):
		r.Speech = "There's nothing waiting for a yes."
	case starts[len(starts)-1] >= end:
		// Nothing but a wake word and fillers: the owner is about to say something.
		r = Reply{Speech: "I am listening. Say what to run, or ask what you can say.", Outcome: OutcomeNoMatch, ExpectsReply: true}
	}
	s.recordNoRow(ctx, req, r.Outcome, "")
	return r
}

// byPhrase matches the words of the utterance from a lead-in on against every usable phrase
// and keeps the most specific match; a tie between two tools is refused with a question rather
// than guessed.
func (s *Service) byPhrase(ctx context.Context, idx *index, req Request, words []phrases.Word, now time.Time) (Reply, bool) {
	if len(idx.phrased) == 0 {
		return Reply{}, false
	}
	var best *phrased
	var bestMatch phrases.Match
	var tied []string
	for i := range idx.phrased {
		pr := &idx.phrased[i]
		for _, t := range pr.templates {
			m, ok := t.Match(req.Text, words)
			switch {
			case !ok:
			case best == nil || m.Literal > bestMatch.Literal:
				best, bestMatch, tied = pr, m, nil
			case m.Literal == bestMatch.Literal && pr.row.ID != best.row.ID && !slices.Contains(tied, spokenName(pr.row)):
				tied = append(tied, spokenName(pr.row))
			}
		}
	}
	switch {
	case best == nil:
		return Reply{}, false
	case len(tied) > 0:
		options := append(tied, spokenName(best.row))
		sort.Strings(options)
		r := Reply{Speech: fmt.Sprintf("That fits several tools: %s. Say the tool's name instead.", phrases.JoinList(options, "or")),
			Outcome: OutcomeRefused}
		s.recordNoRow(ctx, req, r.Outcome, "phrase fits several tools")
		return r, true
	}
	in, err := s.limitsOf(ctx, best.row)
	if err != nil {
		return s.failed(ctx, best.row, req, err), true
	}
	args := map[string]any{}
	var wrong []string
	var why error
	for _, name := range slices.Sorted(maps.Keys(bestMatch.Values)) {
		v, err := phrases.Coerce(best.schema.Props[name], bestMatch.Values[name])
		if err == nil {
			err = withinLimit(in, name, v)
		}
		if err != nil {
			wrong = append(wrong, name)
			if why == nil {
				why = err
			}
			continue
		}
		args[name] = v
	}
	return s.complete(ctx, req, best.row, best.schema, args, wrong, why, now), true
}

// byName matches a tool's spoken name at the start of the utterance and binds the words after
// it by rule 15.
func (s *Service) byName(ctx context.Context, idx *index, req Request, text string, now time.Time) (Reply, bool) {
	match, err := idx.matcher.Match(text)
	var amb *allowlist.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return s.whichOne(ctx, idx, req, amb, now), true
	case err != nil:
		return Reply{}, false
	}
	return s.named(ctx, idx, req, match.Tool, match.Tail, now), true
}

// named goes on with row, which the utterance named, and the words said after its name.
func (s *Service) named(ctx context.Context, idx *index, req Request, row allowlist.Tool, tail string, now time.Time) Reply {
	args, err := idx.bind(row, tail)
	if err != nil {
		if _, ok := unspoken(err); ok {
			// The tool takes its argument from speech and none was said: ask for it.
			return s.complete(ctx, req, row, idx.schemas[row.ID], map[string]any{}, nil, nil, now)
		}
		reply := argsReply(row, err, idx.saved[row.ID], idx.schemas[row.ID])
		s.record(ctx, row, req, reply.Outcome, nil, err.Error())
		return reply
	}
	return s.proceed(ctx, req, row, idx.schemas[row.ID], args, now)
}

// bind applies rule 15 to MCP rows and rule 16 to local commands.
func (idx *index) bind(row allowlist.Tool, tail string) (map[string]any, error) {
	if !row.IsMCP() {
		if strings.TrimSpace(tail) != "" {
			return nil, errLocalArgs
		}
		return map[string]any{}, nil
	}
	return idx.positional[row.ID].Bind(tail)
}

var errLocalArgs = errors.New("local commands take no spoken arguments")
