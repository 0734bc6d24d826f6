package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"maven/app/allowlist"
	"maven/app/mcp"
	"maven/app/phrases"
)

// A server may ask the owner for input during a call (MCP elicitation, form mode). Voice puts
// a question it can ask in one sentence: a form with one field to fill (string, number,
// integer, boolean or enum), the others, if any, having defaults; or a form whose fields all
// have defaults, read back and accepted with them on a yes (SEP-1034). It declines anything
// else, and the owner hears why. An answer only supplies what the server asked for, to the
// call that asked: the call was approved, and confirmed if destructive, before it started.

// declined is the answer to a question voice does not put, or that the owner refused.
var declined = mcp.ElicitAnswer{Action: mcp.ActionDecline}

// serverQuestion is a server's question on its way to the owner and back.
type serverQuestion struct {
	e      mcp.Elicitation
	form   form
	answer chan mcp.ElicitAnswer // buffered: the first answer given is the one
}

// settle answers the question, unless it was answered already.
func (q *serverQuestion) settle(a mcp.ElicitAnswer) {
	select {
	case q.answer <- a:
	default:
	}
}

// form is a server's form as voice reads it.
type form struct {
	fields []formField // by name
	ask    int         // the index of the one field without a default; -1 if every one has one
}

type formField struct {
	phrases.Property
	def    any // the schema's default; nil without one
	titles map[string]string
}

// readForm reads a server's question, or says (as a clause: "Studio asked for …") why voice
// cannot put it.
func readForm(e mcp.Elicitation) (form, string) {
	if e.Mode != "form" {
		return form{}, "wanted to send you to a web page, which I cannot open by voice"
	}
	schema, err := phrases.ReadSchema(e.Schema)
	if err != nil {
		return form{}, "asked a question I could not read"
	}
	var extra struct {
		Properties map[string]struct {
			Default   any      `json:"default"`
			EnumNames []string `json:"enumNames"`
			OneOf     []struct {
				Const any    `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
		} `json:"properties"`
	}
	if len(e.Schema) > 0 && json.Unmarshal(e.Schema, &extra) != nil {
		return form{}, "asked a question I could not read"
	}
	f := form{ask: -1}
	var open []string // the fields without a default
	for _, name := range schema.Names {
		x := extra.Properties[name]
		field := formField{Property: schema.Props[name], def: x.Default, titles: map[string]string{}}
		for i, v := range field.Enum {
			if s, ok := v.(string); ok && i < len(x.EnumNames) {
				field.titles[s] = x.EnumNames[i]
			}
		}
		for _, o := range x.OneOf { // titled enum values (SEP-1330)
			if s, ok := o.Const.(string); ok {
				field.Enum = append(field.Enum, s)
				field.titles[s] = o.Title
				field.Type = "string"
			}
		}
		if field.def == nil {
			open = append(open, spokenWords(name))
			f.ask = len(f.fields)
		}
		f.fields = append(f.fields, field)
	}
	switch {
	case len(open) > 1:
		return form{}, fmt.Sprintf("asked for %s at once, which I cannot ask by voice", phrases.JoinList(open, "and"))
	case f.ask >= 0 && !f.fields[f.ask].Fillable():
		return form{}, fmt.Sprintf("asked for %s, which voice cannot fill", open[0])
	}
	return f, ""
}

// defaults are the fields' defaults: what an accepted form sends for each field not answered.
func (f form) defaults() map[string]any {
	out := map[string]any{}
	for _, field := range f.fields {
		if field.def != nil {
			out[field.Name] = field.def
		}
	}
	return out
}

// speech is the question as the owner hears it: who asks, the server's message, and what to
// say. why, if set, says why the last answer did not fit.
func (q *serverQuestion) speech(maxSpeech int, why error) string {
	var b strings.Builder
	var ce *phrases.CoerceError
	if errors.As(why, &ce) {
		fmt.Fprintf(&b, "%s must be %s. ", capitalize(spokenWords(ce.Property)), ce.Want)
	}
	fmt.Fprintf(&b, "%s asks: ", capitalize(spokenWords(q.e.Server)))
	if msg := speakable(q.e.Message, maxSpeech); msg != "" {
		b.WriteString(msg + " ")
	}
	if q.form.ask < 0 {
		values := q.form.defaults()
		for _, field := range q.form.fields {
			if s, ok := values[field.Name].(string); ok && field.titles[s] != "" {
				values[field.Name] = field.titles[s]
			}
		}
		fmt.Fprintf(&b, "Accept%s? Say yes to accept.", readBack(values))
		return b.String()
	}
	field := q.form.fields[q.form.ask]
	if len(field.titles) > 0 {
		field.Enum = slices.Clone(field.Enum)
		for i, v := range field.Enum {
			if s, ok := v.(string); ok && field.titles[s] != "" {
				field.Enum[i] = field.titles[s]
			}
		}
	}
	b.WriteString(question(field.Property))
	return b.String()
}

// read reads the owner's words as the answer to q: the value of the one field (with the
// other fields' defaults), or for a read-back form an affirmative. A value that does not fit
// is an error saying what would.
func (q *serverQuestion) read(said string) (mcp.ElicitAnswer, error) {
	content := q.form.defaults()
	if q.form.ask < 0 {
		if !affirmative(said) {
			return declined, nil
		}
		return mcp.ElicitAnswer{Action: mcp.ActionAccept, Content: content}, nil
	}
	field := q.form.fields[q.form.ask]
	said = answerValue(said)
	for value, title := range field.titles {
		if heardAs(title) == heardAs(said) {
			said = value
		}
	}
	v, err := phrases.Coerce(field.Property, said)
	if err != nil {
		return mcp.ElicitAnswer{}, err
	}
	content[field.Name] = v
	return mcp.ElicitAnswer{Action: mcp.ActionAccept, Content: content}, nil
}

// putQuestion makes a server's question this turn's reply; the next turn of the conversation
// answers it (answerServer) until expires. why says why the last answer did not fit, tries how
// often it was asked before.
func (s *Service) putQuestion(ctx context.Context, c *call, q *serverQuestion, req Request, why error, tries int, expires time.Time) Reply {
	row := c.row
	key, err := argsKey(c.args)
	if err != nil {
		q.settle(declined)
		return s.await(ctx, c, req)
	}
	question := Reply{Speech: q.speech(s.opts.MaxSpeech, why), Outcome: OutcomeAsk, ExpectsReply: true, Tool: row.Name}
	s.convs.put(&pending{conversation: req.Conversation, toolID: row.ID, fingerprint: row.Fingerprint,
		updatedAt: row.UpdatedAt, args: c.args, argsKey: key, tries: tries, expires: expires,
		server: &serverAsk{call: c, q: q}, question: question})
	s.record(ctx, row, req, OutcomeAsk, c.args, "the server asked: "+speakable(q.e.Message, maxRecorded))
	return question
}

// serverAsk is a pending server's question: the call waiting, and the question.
type serverAsk struct {
	call *call
	q    *serverQuestion
}

// drop declines the question and stops the call: no answer will come (a lock, a flood of
// conversations evicted it).
func (a *serverAsk) drop() {
	a.q.settle(declined)
	a.call.cancel()
}

// answerServer reads the turn as the answer to a server's question, and answers the turn with
// what the call does next: its result, or another question.
func (s *Service) answerServer(ctx context.Context, p *pending, req Request, now time.Time) Reply {
	c, q := p.server.call, p.server.q
	// The feed keeps that the question was answered, and for which field, never what was said.
	said := req.Text
	req.Text = q.answeredAs()
	row, err := s.d.Rows.Get(ctx, p.toolID)
	if r, void := s.checkAnswer(ctx, p, req, row, err, now); void {
		p.server.drop()
		return r
	}
	// "Never mind" dismisses a question for a value. A read-back is declined by anything but
	// a yes, and to a yes-or-no question "no" is the answer.
	if q.form.ask >= 0 && dismisses(said, q.form.fields[q.form.ask].Property) {
		q.settle(mcp.ElicitAnswer{Action: mcp.ActionCancel})
		return s.await(ctx, c, req)
	}
	a, err := q.read(said)
	if err != nil {
		if p.tries+1 >= maxTries {
			c.mu.Lock()
			c.declined = append(c.declined, fmt.Sprintf("I still did not get %s, so I declined %s's question.",
				spokenWords(q.form.fields[q.form.ask].Name), spokenWords(q.e.Server)))
			c.mu.Unlock()
			q.settle(declined)
			return s.await(ctx, c, req)
		}
		// Asked again within the time the first asking gave (Elicit waits no longer).
		return s.putQuestion(ctx, c, q, req, err, p.tries+1, p.expires)
	}
	q.settle(a)
	return s.await(ctx, c, req)
}

// answeredAs is what the feed keeps of an answer to q in place of the words said: whose
// question it answered, and the field it was for.
func (q *serverQuestion) answeredAs() string {
	if q.form.ask < 0 {
		return fmt.Sprintf("[an answer to %s's question]", spokenWords(q.e.Server))
	}
	return fmt.Sprintf("[an answer to %s's question for %s]", spokenWords(q.e.Server), q.form.fields[q.form.ask].Name)
}

// checkAnswer voids an answer that came too late, or whose row is gone or changed since the
// call started: the question is declined and the call stopped.
func (s *Service) checkAnswer(ctx context.Context, p *pending, req Request, row allowlist.Tool, getErr error, now time.Time) (Reply, bool) {
	name := spokenName(p.server.call.row)
	switch p.void(row, getErr, now) {
	case voidLate:
		s.record(ctx, row, req, OutcomeCancelled, nil, "the answer came too late")
		return Reply{Speech: fmt.Sprintf("That came too late: I declined the question and stopped %s.", name),
			Outcome: OutcomeCancelled, Tool: row.Name}, true
	case voidGone:
		return Reply{Speech: fmt.Sprintf("That tool is gone, so I stopped %s.", name), Outcome: OutcomeRefused}, true
	case voidChanged:
		s.record(ctx, row, req, OutcomeRefused, nil, "void: the tool changed while its server asked")
		return Reply{Speech: fmt.Sprintf("%s changed since it asked, so I declined and stopped it.", capitalize(name)),
			Outcome: OutcomeRefused, Tool: row.Name}, true
	}
	return Reply{}, false
}
