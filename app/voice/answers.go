package voice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/phrases"
)

// maxTries is how often one missing value is asked for before the question is dropped.
const maxTries = 3

// complete checks that args (bound so far, and the values the owner fixed) cover what the tool
// requires. wrong lists properties whose words did not fit their type or the owner's limit,
// asked for again first (why says how they did not fit).
// A required property voice cannot fill is refused; one it can is asked for; with nothing
// missing, the tool runs or is confirmed.
func (s *Service) complete(ctx context.Context, req Request, row allowlist.Tool, schema phrases.Schema, args map[string]any, wrong []string, why error, now time.Time) Reply {
	in, err := s.limitsOf(ctx, row)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	args = withFixed(args, in)
	say := capitalize(spokenName(row))
	if len(schema.Undescribed) > 0 {
		r := Reply{Speech: fmt.Sprintf("%s requires an argument its description does not explain, so I will not guess it.", say),
			Outcome: OutcomeRefused, Tool: row.Name}
		s.record(ctx, row, req, r.Outcome, nil, "undescribed required argument")
		return r
	}
	missing := slices.Clone(wrong)
	for _, name := range schema.Required {
		if _, ok := args[name]; !ok && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	var unfillable []string
	for _, name := range missing {
		if !schema.Props[name].Fillable() {
			unfillable = append(unfillable, name)
		}
	}
	if len(unfillable) > 0 {
		r := Reply{Speech: fmt.Sprintf("%s needs %s, which voice cannot fill.", say, phrases.JoinList(unfillable, "and")),
			Outcome: OutcomeNeedsArgs, Tool: row.Name}
		s.record(ctx, row, req, r.Outcome, nil, "unfillable required argument")
		return r
	}
	if len(missing) > 0 {
		return s.ask(ctx, req, row, schema, &pending{asking: true, args: args, missing: missing}, why, in, now)
	}
	return s.proceed(ctx, req, row, schema, args, now)
}

// ask puts the question for p.missing[0] to the owner, offering only the values the owner's
// limits on row (in) allow; the next utterance of the conversation answers it (fill).
func (s *Service) ask(ctx context.Context, req Request, row allowlist.Tool, schema phrases.Schema, p *pending, why error, in *limits.Active, now time.Time) Reply {
	p.conversation, p.toolID, p.fingerprint, p.updatedAt = req.Conversation, row.ID, row.Fingerprint, row.UpdatedAt
	p.expires = now.Add(s.opts.ConfirmWindow)
	key, err := argsKey(p.args)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	p.argsKey = key
	speech := question(allowedOnly(schema.Props[p.missing[0]], in))
	var ce *phrases.CoerceError
	switch {
	case errors.As(why, &ce):
		speech = fmt.Sprintf("%s must be %s. %s", capitalize(spokenWords(ce.Property)), ce.Want, speech)
	case limitSpeech(why) != "":
		speech = limitSpeech(why) + " " + speech
	}
	p.question = Reply{Speech: speech, Outcome: OutcomeAsk, ExpectsReply: true, Tool: row.Name}
	s.convs.put(p)
	s.record(ctx, row, req, OutcomeAsk, p.args, "asked for "+p.missing[0])
	return p.question
}

// question asks for one property in the words its type suggests, naming it by its
// description when the schema gives one that reads as a name ("What is the first number?").
func question(p phrases.Property) string {
	name := spokenWords(p.Name)
	about := describedAs(p.Description)
	switch {
	case len(p.Enum) > 0:
		values := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			values[i] = spokenValue(v)
		}
		if about != "" {
			return fmt.Sprintf("%s: %s?", capitalize(about), phrases.JoinList(values, "or"))
		}
		return fmt.Sprintf("Which %s: %s?", name, phrases.JoinList(values, "or"))
	case p.Type == "boolean" && about != "":
		return fmt.Sprintf("%s: yes or no?", capitalize(about))
	case p.Type == "boolean":
		return fmt.Sprintf("Should %s be yes or no?", name)
	case about != "":
		name = "is " + definite(about)
	}
	if p.Type == "number" || p.Type == "integer" {
		return fmt.Sprintf("What %s? Say a number.", name)
	}
	return fmt.Sprintf("What %s?", name)
}

// describedAs is a property's description as a question can say it: its first sentence, lower
// case unless it starts with an acronym, and "" when there is none, it is long, or it reads as
// an instruction ("Enter the name") rather than a name.
func describedAs(description string) string {
	d := speakable(description, maxDescribed+1)
	if i := strings.IndexAny(d, ".;:!?("); i >= 0 {
		d = d[:i]
	}
	d = strings.TrimSpace(d)
	words := strings.Fields(d)
	if len(words) == 0 || len([]rune(d)) > maxDescribed || slices.Contains(instructions, strings.ToLower(words[0])) {
		return ""
	}
	if r := []rune(d); len(r) < 2 || !unicode.IsUpper(r[1]) {
		d = strings.ToLower(d[:1]) + d[1:]
	}
	return d
}

// maxDescribed is the longest description a question names a property by.
const maxDescribed = 60

// instructions are first words of descriptions that tell the client what to do.
var instructions = []string{"enter", "provide", "specify", "give", "input", "type", "choose", "select", "pick", "set", "use", "if"}

// definite puts "the" before a description that has no determiner of its own.
func definite(d string) string {
	first := strings.ToLower(strings.Fields(d)[0])
	if slices.Contains([]string{"the", "a", "an", "your", "my", "this", "that", "which", "how", "what", "whether", "who", "where", "when"}, first) {
		return d
	}
	return "the " + d
}

// fill reads an answer to a question for a missing value. A value that does not fit its type,
// or the owner's limit, is asked for again, up to maxTries times.
func (s *Service) fill(ctx context.Context, p *pending, req Request, now time.Time) Reply {
	row, err := s.d.Rows.Get(ctx, p.toolID)
	if r, void := s.checkPending(ctx, p, req, row, err, now); void {
		return r
	}
	schema, err := phrases.ReadSchema(row.InputSchema)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	in, err := s.limitsOf(ctx, row)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	name := p.missing[0]
	if dismisses(req.Text, schema.Props[name]) {
		s.record(ctx, row, req, OutcomeCancelled, nil, "")
		return Reply{Speech: "Cancelled; nothing ran.", Outcome: OutcomeCancelled, Tool: row.Name}
	}
	v, err := phrases.Coerce(schema.Props[name], answerValue(req.Text))
	if err == nil {
		err = withinLimit(in, name, v)
	}
	if err != nil {
		if p.tries+1 >= maxTries {
			s.record(ctx, row, req, OutcomeCancelled, nil, "no fitting "+name)
			return Reply{Speech: fmt.Sprintf("I still did not get %s, so nothing ran.", spokenWords(name)), Outcome: OutcomeCancelled, Tool: row.Name}
		}
		p.tries++
		return s.ask(ctx, req, row, schema, p, err, in, now)
	}
	args := maps.Clone(p.args)
	args[name] = v
	return s.complete(ctx, req, row, schema, args, p.missing[1:], nil, now)
}

// confirm resolves a pending confirm: only an affirmative runs it, anything else cancels.
func (s *Service) confirm(ctx context.Context, p *pending, req Request, now time.Time) Reply {
	row, err := s.d.Rows.Get(ctx, p.toolID)
	if r, void := s.checkPending(ctx, p, req, row, err, now); void {
		return r
	}
	if !affirmative(req.Text) {
		s.record(ctx, row, req, OutcomeCancelled, nil, "")
		return Reply{Speech: "Cancelled; nothing ran.", Outcome: OutcomeCancelled, Tool: row.Name}
	}
	return s.run(ctx, row, req, p.args)
}

// affirmative reports whether an answer confirms: affirmatives and nothing else, after any
// lead-in ("ok, do it", "um yes", "yes please", "yeah, go for it").
func affirmative(text string) bool {
	words := phrases.Words(text)
	return slices.ContainsFunc(answerForms(words, leadIns(words, fillers)), allAffirmative)
}

// allAffirmative reports whether an answer's form (answerForms) is one affirmative after
// another.
func allAffirmative(form string) bool {
	words := strings.Fields(form)
	for len(words) > 0 {
		i := slices.IndexFunc(affirmativeWords, func(a []string) bool {
			return len(a) <= len(words) && slices.Equal(words[:len(a)], a)
		})
		if i < 0 {
			return false
		}
		words = words[len(affirmativeWords[i]):]
	}
	return form != ""
}

// affirmativeWords are the affirmatives' words, longest first.
var affirmativeWords = wordLists(affirmatives...)

// dismisses reports whether an answer ends a question for a value of p without one: a
// cancellation, except that "no" answers a yes-or-no question.
func dismisses(text string, p phrases.Property) bool {
	return saysOneOf(text, cancellations) && (p.Type != "boolean" || !saysOneOf(text, []string{"no"}))
}

// voidness is why a pending question no longer stands.
type voidness int

const (
	voidNone    voidness = iota
	voidLate             // the answer came after the question expired
	voidGone             // its row is gone
	voidChanged          // its row changed state or shape, or its arguments are not those asked with
)

// void tells whether p still stands for an answer at now, given its row as read again (row,
// getErr).
func (p *pending) void(row allowlist.Tool, getErr error, now time.Time) voidness {
	switch {
	case now.After(p.expires):
		return voidLate
	case getErr != nil:
		return voidGone
	}
	key, err := argsKey(p.args)
	if row.State != allowlist.StateEnabled || row.Fingerprint != p.fingerprint || !row.UpdatedAt.Equal(p.updatedAt) || err != nil || key != p.argsKey {
		return voidChanged
	}
	return voidNone
}

// checkPending voids a pending question of voice's that came too late, whose row is gone, or
// whose row changed since it was asked (the row is read again for this).
func (s *Service) checkPending(ctx context.Context, p *pending, req Request, row allowlist.Tool, getErr error, now time.Time) (Reply, bool) {
	switch p.void(row, getErr, now) {
	case voidLate:
		s.record(ctx, row, req, OutcomeCancelled, nil, "the answer came too late")
		return Reply{Speech: "That came too late, so nothing ran. Ask again if you still want it.", Outcome: OutcomeCancelled, Tool: row.Name}, true
	case voidGone:
		return Reply{Speech: "That tool is gone, so nothing ran.", Outcome: OutcomeRefused}, true
	case voidChanged:
		s.record(ctx, row, req, OutcomeRefused, nil, "void: the tool changed after the question")
		return Reply{Speech: fmt.Sprintf("%s changed since I asked, so nothing ran.", capitalize(spokenName(row))),
			Outcome: OutcomeRefused, Tool: row.Name}, true
	}
	return Reply{}, false
}

// proceed refuses a call outside the owner's limits on row (nothing is sent), runs a read-only
// row at once, and a destructive one within limits the owner let run without asking; it asks
// before any other destructive one, reading back every argument and naming the properties
// that will be sent absent.
func (s *Service) proceed(ctx context.Context, req Request, row allowlist.Tool, schema phrases.Schema, args map[string]any, now time.Time) Reply {
	in, err := s.limitsOf(ctx, row)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	args = withFixed(args, in)
	if in != nil {
		if err := in.Check(args); err != nil {
			said := limitSpeech(err)
			if said == "" {
				said = "its limits cannot be read."
			}
			r := Reply{Speech: fmt.Sprintf("I did not run %s: %s", spokenName(row), said), Outcome: OutcomeRefused, Tool: row.Name}
			s.record(ctx, row, req, r.Outcome, args, err.Error())
			return r
		}
	}
	if !row.Destructive || in != nil && in.Set.RunUnasked {
		return s.run(ctx, row, req, args)
	}
	if row.OnPhone() {
		return s.onPhone(ctx, req, row, schema, args)
	}
	key, err := argsKey(args)
	if err != nil {
		return Reply{Speech: "I could not read those arguments back.", Outcome: OutcomeError, Tool: row.Name}
	}
	var absent []string
	for _, name := range schema.Names {
		if _, ok := args[name]; !ok {
			absent = append(absent, spokenWords(name))
		}
	}
	speech := fmt.Sprintf("Run %s%s?", spokenName(row), readBack(args))
	if len(absent) > 0 {
		speech += fmt.Sprintf(" It goes without %s.", phrases.JoinList(absent, "or"))
	}
	question := Reply{Speech: speech + " Say yes to confirm.", Outcome: OutcomeConfirm, ExpectsReply: true, Tool: row.Name}
	s.convs.put(&pending{conversation: req.Conversation, toolID: row.ID, fingerprint: row.Fingerprint,
		updatedAt: row.UpdatedAt, args: args, argsKey: key, expires: now.Add(s.opts.ConfirmWindow), question: question})
	s.record(ctx, row, req, OutcomeConfirm, args, "")
	return question
}

// run runs the row and answers with its result, or with a question its server asks the owner
// meanwhile (questions.go).
func (s *Service) run(ctx context.Context, row allowlist.Tool, req Request, args map[string]any) Reply {
	return s.await(ctx, s.startCall(ctx, req, row, args), req)
}

// failed answers a turn that could not go on because of a fault on Maven's side.
func (s *Service) failed(ctx context.Context, row allowlist.Tool, req Request, err error) Reply {
	s.opts.Logger.Error("voice: turn failed", "tool", row.Name, "err", err)
	s.record(ctx, row, req, OutcomeError, nil, err.Error())
	return Reply{Speech: "Something went wrong on my side; the daemon log says what.", Outcome: OutcomeError, Tool: row.Name}
}
