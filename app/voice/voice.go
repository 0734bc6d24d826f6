// Package voice turns utterances into actions: it matches an enabled row, binds the spoken
// tail, asks before anything destructive runs, and answers in short sentences meant to be heard
// (DESIGN.md rules 15–19).
package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/runner"
)

// Outcome is the kind of answer a turn got; the values are part of the webhook contract.
type Outcome string

// The outcomes of a turn.
const (
	OutcomeRan       Outcome = "ran"
	OutcomeConfirm   Outcome = "confirm"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeRefused   Outcome = "refused"
	OutcomeNeedsArgs Outcome = "needs_args"
	OutcomeNoMatch   Outcome = "no_match"
	OutcomeLocked    Outcome = "locked"
	OutcomeError     Outcome = "error"
)

// Reply is what the voice front end says back.
type Reply struct {
	Speech       string
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
	Record(ctx context.Context, toolID int64, actor, action string, detail map[string]any) error
}

// Binder binds a spoken tail to an MCP row's named arguments (mcp.Manager.BindPositional). Its
// errors wrap mcp.ErrNeedsArgs or mcp.ErrUndescribedArg.
type Binder interface {
	BindPositional(row allowlist.Tool, tail string) (map[string]any, error)
}

// Runner runs an enabled row (runner.Executor).
type Runner interface {
	Exec(ctx context.Context, row allowlist.Tool, args map[string]any) (runner.Result, error)
}

// LockState tells whether the daemon is locked.
type LockState interface {
	Locked() bool
}

// Options tune the service; zero values take the defaults.
type Options struct {
	ConfirmWindow time.Duration // how long a confirm prompt waits for its answer (60s)
	MaxPending    int           // pending confirms kept at most (10,000)
	MaxSpeech     int           // characters of tool output read out (400)
	UnlockURL     string        // where the owner unlocks, said while locked
	OnTurn        func(Outcome) // told every turn's outcome (metrics); may be nil
	Now           func() time.Time
	Logger        *slog.Logger
}

// Service handles voice turns.
type Service struct {
	rows   Rows
	binder Binder
	runner Runner
	lock   LockState
	opts   Options
	convs  *conversations

	mu             sync.Mutex
	matcher        *allowlist.Matcher
	matcherVersion uint64
	matcherBuilt   bool
}

// New returns a voice service.
func New(rows Rows, binder Binder, runner Runner, lock LockState, opts Options) *Service {
	if opts.ConfirmWindow == 0 {
		opts.ConfirmWindow = 60 * time.Second
	}
	if opts.MaxPending == 0 {
		opts.MaxPending = 10000
	}
	if opts.MaxSpeech == 0 {
		opts.MaxSpeech = 400
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{rows: rows, binder: binder, runner: runner, lock: lock, opts: opts,
		convs: newConversations(opts.MaxPending)}
}

// CancelPending forgets every pending confirm, as locking the daemon must.
func (s *Service) CancelPending() { s.convs.clear() }

// Pending returns how many confirms are waiting, for tests and metrics.
func (s *Service) Pending() int { return s.convs.len() }

// confirmWords are the answers that confirm; anything else cancels.
var confirmWords = []string{"yes", "yeah", "confirm", "do it", "go ahead"}

// Turn handles one utterance of a conversation.
func (s *Service) Turn(ctx context.Context, conversation, text string) Reply {
	r := s.turn(ctx, conversation, text)
	if s.opts.OnTurn != nil {
		s.opts.OnTurn(r.Outcome)
	}
	return r
}

func (s *Service) turn(ctx context.Context, conversation, text string) Reply {
	if s.lock.Locked() {
		s.convs.clear()
		speech := "Maven is locked, so nothing can run. Unlock it with your passkey"
		if s.opts.UnlockURL != "" {
			speech += " at " + s.opts.UnlockURL
		}
		return Reply{Speech: speech + ".", Outcome: OutcomeLocked}
	}
	now := s.opts.Now()
	if p, ok := s.convs.take(conversation, now); ok {
		return s.answer(ctx, p, text, now)
	}
	return s.newTurn(ctx, conversation, text, now)
}

func (s *Service) newTurn(ctx context.Context, conversation, text string, now time.Time) Reply {
	m, err := s.currentMatcher(ctx)
	if err != nil {
		s.opts.Logger.Error("voice: load enabled tools", "err", err)
		return Reply{Speech: "Something went wrong on my side; the daemon log says what.", Outcome: OutcomeError}
	}
	match, err := m.Match(text)
	var amb *allowlist.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return Reply{Speech: ambiguityQuestion(amb), Outcome: OutcomeRefused, ExpectsReply: true}
	case err != nil:
		return Reply{Speech: noMatchSpeech(m, text), Outcome: OutcomeNoMatch}
	}
	row := match.Tool
	say := spokenName(row)

	args, err := s.bind(row, match.Tail)
	if err != nil {
		reply := argsReply(say, row, err)
		s.record(ctx, row, conversation, reply.Outcome, nil, err.Error())
		return reply
	}
	if row.Destructive {
		key, err := argsKey(args)
		if err != nil {
			return Reply{Speech: "I could not read those arguments back.", Outcome: OutcomeError, Tool: row.Name}
		}
		s.convs.put(&pending{conversation: conversation, toolID: row.ID, fingerprint: row.Fingerprint,
			updatedAt: row.UpdatedAt, args: args, argsKey: key, expires: now.Add(s.opts.ConfirmWindow)})
		s.record(ctx, row, conversation, OutcomeConfirm, args, "")
		return Reply{Speech: fmt.Sprintf("Run %s%s? Say yes to confirm.", say, readBack(args)),
			Outcome: OutcomeConfirm, ExpectsReply: true, Tool: row.Name}
	}
	return s.run(ctx, row, args, conversation)
}

// answer resolves a pending confirm. The row is read again: if it changed state or shape since
// the question, the confirm is void.
func (s *Service) answer(ctx context.Context, p *pending, text string, now time.Time) Reply {
	phrase := strings.Join(allowlist.SpokenWords(text), " ")
	row, err := s.rows.Get(ctx, p.toolID)
	name := ""
	if err == nil {
		name = row.Name
	}
	if now.After(p.expires) {
		s.record(ctx, row, p.conversation, OutcomeCancelled, nil, "confirm came too late")
		return Reply{Speech: "That came too late, so I did not run it. Ask again if you still want it.", Outcome: OutcomeCancelled, Tool: name}
	}
	if !slices.Contains(confirmWords, phrase) {
		s.record(ctx, row, p.conversation, OutcomeCancelled, nil, "")
		return Reply{Speech: "Cancelled; nothing ran.", Outcome: OutcomeCancelled, Tool: name}
	}
	if err != nil {
		return Reply{Speech: "That tool is gone, so I did not run it.", Outcome: OutcomeRefused}
	}
	key, kerr := argsKey(p.args)
	if row.State != allowlist.StateEnabled || row.Fingerprint != p.fingerprint || !row.UpdatedAt.Equal(p.updatedAt) || kerr != nil || key != p.argsKey {
		s.record(ctx, row, p.conversation, OutcomeRefused, nil, "confirm void: the tool changed after the question")
		return Reply{Speech: fmt.Sprintf("%s changed since I asked, so I did not run it.", capitalize(spokenName(row))),
			Outcome: OutcomeRefused, Tool: name}
	}
	return s.run(ctx, row, p.args, p.conversation)
}

func (s *Service) run(ctx context.Context, row allowlist.Tool, args map[string]any, conversation string) Reply {
	res, err := s.runner.Exec(ctx, row, args)
	if err != nil {
		s.opts.Logger.Warn("voice: tool failed", "tool", row.Name, "err", err)
		s.record(ctx, row, conversation, OutcomeError, args, err.Error())
		return Reply{Speech: fmt.Sprintf("I could not run %s: %s.", spokenName(row), failureReason(err)), Outcome: OutcomeError, Tool: row.Name}
	}
	s.record(ctx, row, conversation, OutcomeRan, args, "")
	out := speakable(res.Output, s.opts.MaxSpeech)
	if res.IsError {
		if out == "" {
			out = "no details"
		}
		return Reply{Speech: fmt.Sprintf("%s reported an error: %s", capitalize(spokenName(row)), out), Outcome: OutcomeError, Tool: row.Name}
	}
	if out == "" {
		out = "Done."
	}
	return Reply{Speech: out, Outcome: OutcomeRan, Tool: row.Name}
}

// bind applies rule 15 to MCP rows and rule 16 to local commands.
func (s *Service) bind(row allowlist.Tool, tail string) (map[string]any, error) {
	if !row.IsMCP() {
		if strings.TrimSpace(tail) != "" {
			return nil, errLocalArgs
		}
		return map[string]any{}, nil
	}
	return s.binder.BindPositional(row, tail)
}

var errLocalArgs = errors.New("local commands take no spoken arguments")

func argsReply(say string, row allowlist.Tool, err error) Reply {
	var ae *mcp.ArgsError
	switch {
	case errors.Is(err, errLocalArgs):
		return Reply{Speech: fmt.Sprintf("%s takes no arguments; say just its name.", capitalize(say)), Outcome: OutcomeRefused, Tool: row.Name}
	case errors.Is(err, mcp.ErrUndescribedArg):
		return Reply{Speech: fmt.Sprintf("%s requires an argument its description does not explain, so I will not guess it.", capitalize(say)), Outcome: OutcomeRefused, Tool: row.Name}
	case errors.As(err, &ae) && len(ae.Missing) > 0:
		return Reply{Speech: fmt.Sprintf("%s needs %s, which I cannot take from speech for this tool.", capitalize(say), strings.Join(ae.Missing, " and ")), Outcome: OutcomeNeedsArgs, Tool: row.Name}
	}
	return Reply{Speech: fmt.Sprintf("%s needs arguments I cannot take from speech.", capitalize(say)), Outcome: OutcomeNeedsArgs, Tool: row.Name}
}

func (s *Service) record(ctx context.Context, row allowlist.Tool, conversation string, outcome Outcome, args map[string]any, reason string) {
	if row.ID == 0 {
		return
	}
	detail := map[string]any{"conversation": conversation, "reason": reason}
	if args != nil {
		detail["args"] = args
	}
	if err := s.rows.Record(ctx, row.ID, "voice", "voice_"+string(outcome), detail); err != nil {
		s.opts.Logger.Error("voice: audit event", "tool", row.Name, "err", err)
	}
}

// currentMatcher rebuilds the matcher only when the allowlist changed.
func (s *Service) currentMatcher(ctx context.Context) (*allowlist.Matcher, error) {
	v := s.rows.Version()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.matcherBuilt && s.matcherVersion == v {
		return s.matcher, nil
	}
	rows, err := s.rows.List(ctx, allowlist.Filter{States: []allowlist.State{allowlist.StateEnabled}})
	if err != nil {
		return nil, err
	}
	s.matcher, s.matcherVersion, s.matcherBuilt = allowlist.NewMatcher(rows), v, true
	return s.matcher, nil
}

// spokenName is how a reply names a row: "list tasks on vikunja", "restart router".
func spokenName(row allowlist.Tool) string {
	if row.IsMCP() {
		return strings.Join(allowlist.SpokenWords(row.RemoteName()), " ") + " on " + strings.Join(allowlist.SpokenWords(row.Server()), " ")
	}
	return strings.Join(allowlist.SpokenWords(row.Name), " ")
}

func ambiguityQuestion(e *allowlist.AmbiguousError) string {
	var options []string
	for _, t := range e.Candidates {
		if t.IsMCP() {
			options = append(options, strings.Join(allowlist.SpokenWords(t.Server()), " ")+" "+e.Spoken)
		} else {
			options = append(options, strings.Join(allowlist.SpokenWords(t.Name), " "))
		}
	}
	sort.Strings(options)
	return fmt.Sprintf("Several tools are called %s. Which one: %s?", e.Spoken, orList(options))
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
		d := levenshtein(heard, n)
		if d <= max(2, len(n)/2) {
			best = append(best, scored{n, d})
		}
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	if len(best) == 0 {
		return "I do not know a tool by that name."
	}
	var out []string
	for i := 0; i < len(best) && i < 3; i++ {
		out = append(out, best[i].name)
	}
	return fmt.Sprintf("I do not know a tool by that name. Did you mean %s?", orList(out))
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// readBack reads the bound arguments out loud, so the owner confirms what will actually run.
func readBack(args map[string]any) string {
	if len(args) == 0 {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", strings.Join(allowlist.SpokenWords(k), " "), args[k])
	}
	return " with " + strings.Join(parts, ", ")
}

func argsKey(args map[string]any) (string, error) {
	b, err := json.Marshal(args) // map keys are sorted: a stable form
	return string(b), err
}

// speakable flattens tool output into one line of at most max characters, cut at a word.
func speakable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := string(r[:max])
	if i := strings.LastIndexByte(cut, ' '); i > max/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

func failureReason(err error) string {
	switch {
	case errors.Is(err, mcp.ErrNotConnected):
		return "its server is not connected"
	case errors.Is(err, mcp.ErrLocked):
		return "its server is locked"
	case errors.Is(err, runner.ErrTimeout):
		return "it took too long"
	case errors.Is(err, context.DeadlineExceeded):
		return "it took too long"
	}
	return "something went wrong; the daemon log says what"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
