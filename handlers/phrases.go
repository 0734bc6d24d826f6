package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/phrases"
	"maven/app/voice"
	"maven/views"
)

// PhraseBook saves the owner's phrases of enabled MCP rows (*phrases.Service).
type PhraseBook interface {
	// Save needs a step-up for auth.ActionSetPhrases on id, naming the fingerprint the page
	// showed; it fails as phrases.Service.Save does, and then saves nothing.
	Save(ctx context.Context, id int64, text string, proof auth.StepUp) (phrases.Saved, error)
}

// VoiceGuides say how voice reaches each row, and what its saved phrases are (*voice.Service).
type VoiceGuides interface {
	Guides(ctx context.Context, rows []allowlist.Tool) (map[int64]voice.Guide, error)
}

// maxPhrasesForm bounds the phrases form: far more than phrases.MaxLines lines of
// phrases.MaxLineLen bytes, form-encoded, so that too many lines get their own answer.
const maxPhrasesForm = 64 << 10

// What a row says of its saved phrases when they no longer apply.
const (
	voidEnabled  = "Its phrases were for the earlier shape of this tool; check them and save them again."
	voidProposed = "Its phrases were for the earlier shape of this tool; once you enable it, check them and save them again."
)

// guidedRow is the view of one row with what it says about voice, and its limits.
func (s *server) guidedRow(ctx context.Context, t allowlist.Tool) (views.ToolRow, error) {
	guides, err := s.guides.Guides(ctx, []allowlist.Tool{t})
	if err != nil {
		return views.ToolRow{}, err
	}
	saved, err := s.limits.Limits(ctx, []int64{t.ID})
	if err != nil {
		return views.ToolRow{}, err
	}
	row := s.toolRow(t)
	s.addVoice(&row, t, guides[t.ID])
	l, has := saved[t.ID]
	addLimits(&row, t, l, has)
	return row, nil
}

// addVoice adds to a row's view how voice reaches it, and the phrases box of a row that takes
// phrases, holding the saved ones.
func (s *server) addVoice(row *views.ToolRow, t allowlist.Tool, g voice.Guide) {
	v := views.Voice{HowToSay: text(capitalized(g.HowToSay)), Phrasable: phrases.Takes(t)}
	if g.Void {
		// Void phrases of an enabled row were saved for another fingerprint; a row that shows a
		// diff was redefined since. A row merely disabled keeps its phrases for when it returns.
		switch {
		case t.State == allowlist.StateEnabled:
			v.Void = voidEnabled
		case row.Diff != nil:
			v.Void = voidProposed
		}
	}
	if v.Phrasable {
		v.Phrases = strings.Join(g.Phrases, "\n")
		v.Rows = boxRows(v.Phrases)
		v.Slots = slots(t)
	}
	if t.State == allowlist.StateEnabled && t.Destructive {
		v.Confirm = confirmChoice(t)
	}
	row.Voice = v
}

// capitalized begins s with a capital letter, as a sentence on the page does.
func capitalized(s string) string {
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// slots are the properties of t's input schema a phrase can fill, as "{name}".
func slots(t allowlist.Tool) []views.Text {
	schema, err := phrases.ReadSchema(t.InputSchema)
	if err != nil {
		return nil
	}
	var out []views.Text
	for _, name := range schema.Names {
		if schema.Props[name].Fillable() {
			out = append(out, text("{"+name+"}"))
		}
	}
	return out
}

// boxRows is the height of a phrases box: its lines and one to spare, between 2 and 8.
func boxRows(text string) int {
	n := strings.Count(text, "\n") + 2
	return min(max(n, 2), 8)
}

// phrasesSaveable refuses a save of phrases that cannot succeed before the passkey is asked for:
// the row changed since its page showed it (409, with what changed), it no longer takes phrases
// (409), or a line cannot be used (422, naming each line and what is wrong with it). Save checks
// it all again: this only spares the owner a passkey gesture for nothing.
func (s *server) phrasesSaveable(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		t, shown, err := s.shownRow(w, r, maxPhrasesForm)
		if err != nil {
			return err
		}
		if _, err := phrases.Check(t, shown, r.PostForm.Get("phrases")); err != nil {
			return s.phrasesRefused(w, r, t, err)
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// toolPhrasesPost saves a row's phrases (form fields "phrases", one a line, and "fingerprint");
// requireStepUp has spent the session's grant for this row as the page showed it. The row
// comes back in place saying what was saved, or, refused, with what the owner wrote kept.
func (s *server) toolPhrasesPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := idParam(r)
	if err != nil {
		return err
	}
	saved, err := s.phrases.Save(ctx, id, r.PostForm.Get("phrases"), proofFrom(ctx))
	if err != nil {
		t, gerr := s.tools.Get(ctx, id)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		return s.phrasesRefused(w, r, t, err)
	}
	if !isHTMX(r) {
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return nil
	}
	t, err := s.tools.Get(ctx, id)
	if err != nil {
		return err
	}
	row, err := s.guidedRow(ctx, t)
	if err != nil {
		return err
	}
	row.Voice.Status = "Phrases saved."
	if len(saved.Lines) == 0 {
		row.Voice.Status = "Phrases cleared."
	}
	s.log.Info("phrases saved from the web", "tool", id, "phrases", len(saved.Lines), "by", proofFrom(ctx).Owner())
	s.renderPartial(w, r, http.StatusOK, views.PartialToolRow, row)
	return nil
}

// phrasesRefused answers a save of phrases to row t that err refused, for htmx: the row as it
// is now, with what the owner wrote kept in its box (or below it, when the row no longer takes
// phrases) and why beside it. Nothing was saved. Any other browser gets the error page.
func (s *server) phrasesRefused(w http.ResponseWriter, r *http.Request, t allowlist.Tool, err error) error {
	var changed *allowlist.ShapeChangedError
	var lines *phrases.Error
	status := http.StatusUnprocessableEntity
	var row views.ToolRow
	var rerr error
	switch {
	case !isHTMX(r):
		return err
	case errors.As(err, &changed):
		status = http.StatusConflict
		row, rerr = s.changedRow(r, changed, phrasesNotSaved)
	default:
		row, rerr = s.guidedRow(r.Context(), t)
	}
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	v := &row.Voice
	v.Refused = true
	sent := r.PostForm.Get("phrases")
	if v.Phrasable {
		v.Phrases, v.Rows = sent, boxRows(sent)
	} else if strings.TrimSpace(sent) != "" {
		v.Unsaved = text(sent)
	}
	switch {
	case errors.As(err, &lines):
		v.Status = fmt.Sprintf("Not saved: %d of the lines cannot be used.", len(lines.Lines))
		if len(lines.Lines) == 1 {
			v.Status = "Not saved: a line cannot be used."
		}
		for _, l := range lines.Lines {
			v.LineErrors = append(v.LineErrors, views.LineError{Line: l.Line, Text: text(l.Text), Message: text(l.Err.Error())})
		}
	case errors.Is(err, phrases.ErrTooMany):
		v.Status = fmt.Sprintf("Not saved: a tool takes at most %d phrases.", phrases.MaxLines)
	case errors.Is(err, phrases.ErrNotPhrasable):
		status = http.StatusConflict
		row.Status = fmt.Sprintf("Phrases not saved: only an enabled MCP tool takes phrases, and this one is %s now.", strings.ToLower(stateLabel(t.State)))
	case changed != nil:
		// The row says what changed, and that nothing was saved.
	default:
		return err
	}
	s.renderPartial(w, r, status, views.PartialToolRow, row)
	return nil
}
