package voice

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"maven/app/allowlist"
	"maven/app/phrases"
)

// When enabled rows share the spoken name an utterance starts with, voice does not guess: it
// asks which one, offering only the rows that can take the words said after the name (with
// one such row, that is the one), and remembers those words. The next utterance of the
// conversation names one by its server ("legacy", "the legacy one"), by its whole name, or by
// its place in the question ("the first one", "the second"); anything else is a new turn
// (docs/design.md#rule-17).

// choice is a "which one?" question waiting for its answer.
type choice struct {
	options []option // in the order the question says them
	tail    string   // the words said after the shared name
}

// option is a row offered, as the question names it.
type option struct {
	row    allowlist.Tool // as it was when offered: a change since voids the answer
	say    string         // "legacy echo": how the question says it
	server string         // "legacy": its server's spoken name, "" for a local command
}

// whichOne answers an utterance whose spoken name several enabled rows share.
func (s *Service) whichOne(ctx context.Context, idx *index, req Request, amb *allowlist.AmbiguousError, now time.Time) Reply {
	var options []option
	for _, row := range amb.Candidates {
		if !idx.takes(row, amb.Tail) {
			continue
		}
		o := option{row: row, say: spokenWords(row.Name)}
		if row.IsMCP() {
			o.server = spokenWords(row.Server())
			o.say = o.server + " " + amb.Spoken
		}
		options = append(options, o)
	}
	slices.SortFunc(options, func(a, b option) int { return strings.Compare(a.say, b.say) })
	switch len(options) {
	case 0:
		r := Reply{Speech: fmt.Sprintf("Several tools are called %s, and none of them takes the words after it.", amb.Spoken), Outcome: OutcomeRefused}
		s.recordNoRow(ctx, req, r.Outcome, "several tools have that name; none takes the words")
		return r
	case 1:
		// The others cannot run with these words at all: there is nothing to guess between.
		return s.named(ctx, idx, req, options[0].row, amb.Tail, now)
	}
	says := make([]string, len(options))
	for i, o := range options {
		says[i] = o.say
	}
	question := Reply{Speech: fmt.Sprintf("Several tools are called %s. Which one: %s?", amb.Spoken, phrases.JoinList(says, "or")),
		Outcome: OutcomeAsk, ExpectsReply: true}
	s.convs.put(&pending{conversation: req.Conversation, expires: now.Add(s.opts.ConfirmWindow), question: question,
		choice: &choice{options: options, tail: amb.Tail}})
	s.recordNoRow(ctx, req, question.Outcome, "several tools have that name")
	return question
}

// takes reports whether row can take tail: bound by its rule, or asked for the one argument
// not said.
func (idx *index) takes(row allowlist.Tool, tail string) bool {
	_, err := idx.bind(row, tail)
	_, asks := unspoken(err)
	return err == nil || asks
}

// choose reads the answer to a "which one?" question. The row picked goes on with the words
// said first, as if they had named it alone; what picks none is a new turn.
func (s *Service) choose(ctx context.Context, p *pending, req Request, words []phrases.Word, starts []int, now time.Time) Reply {
	if now.After(p.expires) {
		s.recordNoRow(ctx, req, OutcomeCancelled, "the answer came too late")
		return Reply{Speech: "That came too late, so nothing ran. Ask again if you still want it.", Outcome: OutcomeCancelled}
	}
	if saysOneOf(req.Text, cancellations) {
		s.recordNoRow(ctx, req, OutcomeCancelled, "")
		return Reply{Speech: "Cancelled; nothing ran.", Outcome: OutcomeCancelled}
	}
	i := p.choice.pick(answerForms(words, leadIns(words, fillers)))
	if i < 0 {
		return s.newTurn(ctx, req, words, starts, now)
	}
	offered := p.choice.options[i].row
	row, err := s.d.Rows.Get(ctx, offered.ID)
	if err != nil {
		return Reply{Speech: "That tool is gone, so nothing ran.", Outcome: OutcomeRefused}
	}
	idx, err := s.index(ctx)
	if err != nil {
		return s.failed(ctx, row, req, err)
	}
	if _, indexed := idx.positional[row.ID]; row.State != allowlist.StateEnabled || row.Fingerprint != offered.Fingerprint ||
		!row.UpdatedAt.Equal(offered.UpdatedAt) || row.IsMCP() && !indexed {
		s.record(ctx, row, req, OutcomeRefused, nil, "void: the tool changed after the question")
		return Reply{Speech: fmt.Sprintf("%s changed since I asked, so nothing ran.", capitalize(spokenName(row))),
			Outcome: OutcomeRefused, Tool: row.Name}
	}
	return s.named(ctx, idx, req, row, p.choice.tail, now)
}

// pick returns the option an answer names (its forms, answerForms), -1 for none.
func (c *choice) pick(forms []string) int {
	for _, form := range forms {
		words := strings.Fields(form)
		// "the one on legacy", "the legacy one", "legacy server".
		for len(words) > 1 && slices.Contains([]string{"one", "on", "from"}, words[0]) {
			words = words[1:]
		}
		for len(words) > 1 && slices.Contains([]string{"one", "server"}, words[len(words)-1]) {
			words = words[:len(words)-1]
		}
		if n, ok := ordinal(words, len(c.options)); ok {
			return n
		}
		heard := nameKey(strings.Join(words, " "))
		for i, o := range c.options {
			if heard != "" && (heard == nameKey(o.say) || heard == nameKey(o.server)) {
				return i
			}
		}
	}
	return -1
}

// nameKey is a name as an answer is compared with it: its spoken words without articles.
func nameKey(s string) string {
	return strings.Join(slices.DeleteFunc(allowlist.SpokenWords(s), allowlist.IsArticle), " ")
}

// ordinal reads a place among n options: "first" (or "1st", "one", "number 1"), …, "last".
func ordinal(words []string, n int) (int, bool) {
	if len(words) == 2 && words[0] == "number" {
		words = words[1:]
	}
	if len(words) != 1 {
		return 0, false
	}
	i := -1
	switch w := words[0]; {
	case w == "last":
		i = n - 1
	case slices.Contains(ordinals, w):
		i = slices.Index(ordinals, w)
	case slices.Contains(cardinals, w):
		i = slices.Index(cardinals, w)
	default:
		w = strings.TrimRight(w, "stndrh") // "2nd", "3rd", "4th"
		if k, err := strconv.Atoi(w); err == nil {
			i = k - 1
		}
	}
	return i, i >= 0 && i < n
}

var (
	ordinals  = []string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
	cardinals = []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
)

// repeat puts the question waiting again, as it was put, when the owner asks "what?"; the time
// to answer it still counts from its first asking.
func (s *Service) repeat(ctx context.Context, p *pending, req Request) Reply {
	s.convs.put(p)
	s.record(ctx, allowlist.Tool{ID: p.toolID, Name: p.question.Tool}, req, p.question.Outcome, nil, "repeated the question")
	return p.question
}
