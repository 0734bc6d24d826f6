package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"maven/app/allowlist"
	"maven/app/auth"
	arglimits "maven/app/limits" // handlers' own limits are rate limits (limits.go)
	"maven/views"
)

// ArgumentLimits keeps the owner's limits on enabled MCP rows' arguments (*limits.Service,
// docs/design.md#rule-33).
type ArgumentLimits interface {
	// Limits returns the saved limits of the rows with the given ids, in force or not.
	Limits(ctx context.Context, ids []int64) (map[int64]arglimits.Saved, error)
	// Save needs a step-up for auth.ActionSetLimits on id naming limits.Digest(shown, set); it
	// fails as limits.Service.Save does, and then saves nothing.
	Save(ctx context.Context, id int64, shown string, set arglimits.Set, proof auth.StepUp) (arglimits.Saved, error)
}

// maxLimitsForm bounds the limits form: a few properties' worth of limits.MaxValues values of
// limits.MaxValueLen bytes, form-encoded; a larger form is refused whole.
const maxLimitsForm = 256 << 10

// fieldUnasked is the form's "run without asking" box.
const fieldUnasked = "run_without_asking"

// What a row says of its saved limits when they no longer apply.
const (
	limitsVoidEnabled  = "Its limits were for the earlier shape of this tool and no longer apply; set them again if you still want them."
	limitsVoidProposed = "Its limits were for the earlier shape of this tool; once you enable it, it starts with none."
)

var limitsNotSaved = refusal{"Changed since this page showed it: the limits were not saved",
	"This tool changed after the page showed it, so its limits were not saved. Check what it declares now."}

// limitsKey carries the set limitsSaveable read to the step-up and the save.
type limitsKey struct{}

// fieldsOf names the form fields of property name: "kind:temperature", "min:temperature".
func fieldsOf(name string) views.LimitFields {
	return views.LimitFields{Kind: "kind:" + name, Value: "value:" + name, Values: "values:" + name,
		Min: "min:" + name, Max: "max:" + name, Pattern: "pattern:" + name}
}

// draftFrom reads the limits form as the owner wrote it: every property it sends a kind for
// (a kind of "" is no limit), each field as typed, the allowed values one a line or one per
// box ticked.
func draftFrom(form url.Values) arglimits.Draft {
	d := arglimits.Draft{Props: map[string]arglimits.DraftLimit{}, RunUnasked: form.Get(fieldUnasked) != ""}
	for key := range form {
		name, ok := strings.CutPrefix(key, "kind:")
		if !ok {
			continue
		}
		f := fieldsOf(name)
		dl := arglimits.DraftLimit{Kind: arglimits.Kind(form.Get(f.Kind)), Value: form.Get(f.Value),
			Min: form.Get(f.Min), Max: form.Get(f.Max), Pattern: form.Get(f.Pattern)}
		for _, v := range form[f.Values] {
			for line := range strings.Lines(v) {
				dl.Values = append(dl.Values, strings.TrimRight(line, "\r\n"))
			}
		}
		d.Props[name] = dl
	}
	return d
}

// addLimits adds to a row's view its limits in force, or that saved ones no longer apply, and
// the form of a row that takes limits, holding the saved ones. saved is the row's, if has.
func addLimits(row *views.ToolRow, t allowlist.Tool, saved arglimits.Saved, has bool) {
	l := views.Limits{}
	inForce := has && saved.InForce(t)
	switch {
	case inForce:
		l.Summary, l.RunUnasked = text(limitsSummary(saved.Set)), saved.Set.RunUnasked
	case has && !saved.Set.Empty() && (saved.Void || saved.Fingerprint != t.Fingerprint):
		// Void limits of an enabled row were saved for another fingerprint; a row that shows a
		// diff was redefined since. A row merely disabled keeps its limits for when it returns.
		switch {
		case t.State == allowlist.StateEnabled:
			l.Void = limitsVoidEnabled
		case row.Diff != nil:
			l.Void = limitsVoidProposed
		}
	}
	if schema, ok := limitable(t); ok {
		d := arglimits.Draft{}
		if inForce {
			d = arglimits.DraftOf(schema, saved.Set)
		}
		l.Editable, l.Unasked = true, d.RunUnasked
		l.Props, _ = limitsForm(t.ID, schema, d, nil)
	}
	row.Limits = l
}

// limitable returns the input schema of a row that has the limits form: an enabled MCP row
// with properties to limit.
func limitable(t allowlist.Tool) (arglimits.Schema, bool) {
	if !arglimits.Takes(t) {
		return arglimits.Schema{}, false
	}
	schema, err := arglimits.ReadSchema(t.InputSchema)
	return schema, err == nil && len(schema.Names) > 0
}

// limitsSummary is a set in short, as the row and the step-up prompt say it: "temperature
// 17–23; mode: heat, cool".
func limitsSummary(set arglimits.Set) string {
	parts := make([]string, 0, len(set.Props))
	for _, name := range set.Names() {
		parts = append(parts, set.Props[name].Summary(name))
	}
	return strings.Join(parts, "; ")
}

// limitsForm is the form's view of schema's properties with the fields as d has them, and each
// problem beside the property it names; the problems of the set as a whole are returned apart.
func limitsForm(rowID int64, schema arglimits.Schema, d arglimits.Draft, problems []arglimits.Problem) ([]views.LimitProp, []views.Text) {
	byProp := map[string][]string{}
	var general []views.Text
	for _, p := range problems {
		if _, ok := schema.Props[p.Property]; !ok {
			msg := p.Err.Error()
			if p.Property != "" {
				msg = p.Property + ": " + msg
			}
			general = append(general, text(msg))
			continue
		}
		byProp[p.Property] = append(byProp[p.Property], p.Err.Error())
	}
	props := make([]views.LimitProp, 0, len(schema.Names))
	for i, name := range schema.Names {
		p, dl := schema.Props[name], d.Props[name]
		v := views.LimitProp{ID: fmt.Sprintf("limit-%d-%d", rowID, i), Name: name, NameText: text(name),
			Holds: p.Words(), Required: p.Required, Kind: string(dl.Kind), Fields: fieldsOf(name),
			Value: dl.Value, Values: strings.Join(dl.Values, "\n"), Min: dl.Min, Max: dl.Max, Pattern: dl.Pattern,
			String: p.Type == arglimits.TypeString,
			Error:  text(strings.Join(byProp[name], "; "))}
		if p.Type == "" {
			v.Holds, v.Unlimitable = "", p.Unlimitable
		}
		for _, k := range p.Kinds() {
			v.Kinds = append(v.Kinds, views.Option{Value: string(k), Label: k.Words(), Selected: k == dl.Kind})
			v.TakesBounds = v.TakesBounds || k == arglimits.KindRange || k == arglimits.KindLength
			v.TakesPattern = v.TakesPattern || k == arglimits.KindPattern
		}
		for _, c := range p.Choices() {
			value := arglimits.ChoiceText(c)
			v.Choices = append(v.Choices, views.Choice{Value: value, Label: text(arglimits.Text(c)),
				Fixed: value == dl.Value, Allowed: slices.Contains(dl.Values, value)})
		}
		props = append(props, v)
	}
	return props, general
}

// limitsSaveable reads a save of a row's limits (form fields "kind:NAME" and the rest of each
// property's, "run_without_asking" and "fingerprint") and refuses one that cannot succeed before
// the passkey is asked for: the row changed since its page showed it (409, with what changed),
// it no longer takes limits (409), or a limit cannot be read or the schema contradicts it (422,
// the reason beside its field, what the owner wrote kept). The set it read goes on to the
// step-up and the save, which checks it all again.
func (s *server) limitsSaveable(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		t, shown, err := s.shownRow(w, r, maxLimitsForm)
		if err != nil {
			return err
		}
		set, err := arglimits.Prepare(t, shown, draftFrom(r.PostForm))
		if err != nil {
			return s.limitsRefused(w, r, t, err)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), limitsKey{}, set)))
		return nil
	})
}

// limitsAsShown approves saving the limits limitsSaveable read on the route's row as the page
// showed it: limits.Digest of the fingerprint shown and the set. What the prompt says of them
// is kept with the digest.
func (s *server) limitsAsShown(_ http.ResponseWriter, r *http.Request) (auth.Approval, error) {
	id, err := idParam(r)
	if err != nil {
		return auth.Approval{}, err
	}
	set, ok := r.Context().Value(limitsKey{}).(arglimits.Set)
	if !ok {
		return auth.Approval{}, fmt.Errorf("%w: limits not read", errBadRequest)
	}
	shown := r.PostForm.Get("fingerprint")
	digest, err := arglimits.Digest(shown, set)
	if err != nil {
		return auth.Approval{}, err
	}
	t, err := s.tools.Get(r.Context(), id)
	if err != nil {
		return auth.Approval{}, err
	}
	s.offers.put(digest, limitsWords(t, shown, set))
	return auth.One(auth.ActionSetLimits, id, digest), nil
}

// limitsWords say what a step-up saving set on t approves, to follow "Confirm with your
// passkey to".
func limitsWords(t allowlist.Tool, shown string, set arglimits.Set) string {
	tool := fmt.Sprintf("“%s” (from MCP server “%s”, fingerprint %s)", t.Name, t.Server(), shortDigest(shown))
	if len(set.Props) == 0 {
		return fmt.Sprintf("clear the limits of %s: agents and voice may then send it any arguments its schema allows", tool)
	}
	words := fmt.Sprintf("save these limits for %s: %s. A call outside them is refused and never sent", tool, limitsSummary(set))
	if set.RunUnasked {
		words += "; a call within them runs without asking you"
	}
	return words
}

// toolLimitsPost saves a row's limits; requireStepUp has spent the session's grant for exactly
// these limits on this row as the page showed it. The row comes back in place, its details
// open, saying what was saved, or, refused, with what the owner wrote kept.
func (s *server) toolLimitsPost(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, err := idParam(r)
	if err != nil {
		return err
	}
	set, _ := ctx.Value(limitsKey{}).(arglimits.Set)
	saved, err := s.limits.Save(ctx, id, r.PostForm.Get("fingerprint"), set, proofFrom(ctx))
	if err != nil {
		t, gerr := s.tools.Get(ctx, id)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		return s.limitsRefused(w, r, t, err)
	}
	s.log.Info("limits saved from the web", "tool", id, "limits", limitsSummary(saved.Set),
		"run_without_asking", saved.Set.RunUnasked, "by", proofFrom(ctx).Owner())
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
	row.Limits.Status, row.Limits.Open = "Limits saved.", true
	if len(saved.Set.Props) == 0 {
		row.Limits.Status = "Limits cleared."
	}
	s.renderPartial(w, r, http.StatusOK, views.PartialToolRow, row)
	return nil
}

// limitsRefused answers a save of limits to row t that err refused, for htmx: the row as it is
// now, its details open, the form holding what the owner wrote and each reason beside its
// field. Nothing was saved. Any other browser gets the error page.
func (s *server) limitsRefused(w http.ResponseWriter, r *http.Request, t allowlist.Tool, err error) error {
	var changed *allowlist.ShapeChangedError
	var problems *arglimits.Error
	var row views.ToolRow
	var rerr error
	switch {
	case !isHTMX(r):
		return err
	case errors.As(err, &changed):
		row, rerr = s.changedRow(r, changed, limitsNotSaved)
	default:
		row, rerr = s.guidedRow(r.Context(), t)
	}
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	l := &row.Limits
	l.Refused, l.Open = true, true
	status := http.StatusConflict
	switch {
	case errors.As(err, &problems):
		status = http.StatusUnprocessableEntity
		schema, _ := limitable(t)
		d := draftFrom(r.PostForm)
		l.Props, l.Problems = limitsForm(t.ID, schema, d, problems.Problems)
		l.Unasked = d.RunUnasked
		l.Status = refusedWords(problems)
	case errors.Is(err, arglimits.ErrNotLimitable):
		row.Status = fmt.Sprintf("Limits not saved: only an enabled MCP tool takes limits, and this one is %s now.", strings.ToLower(stateLabel(t.State)))
	case changed != nil:
		// The row says what changed, and that nothing was saved.
	default:
		return err
	}
	s.renderPartial(w, r, status, views.PartialToolRow, row)
	return nil
}

// limitsProblem maps the errors of saving limits (limits').
func limitsProblem(err error) (problem, bool) {
	switch {
	case errors.As(err, new(*arglimits.Error)):
		return problem{http.StatusUnprocessableEntity, "Some of the limits cannot be used, so none were saved. The tools page says why beside each.", slog.LevelInfo}, true
	case errors.Is(err, arglimits.ErrNotLimitable):
		return problem{http.StatusConflict, "Only an enabled MCP tool takes limits; none were saved.", slog.LevelInfo}, true
	}
	return problem{}, false
}

// refusedWords say how many of the limits cannot be saved.
func refusedWords(e *arglimits.Error) string {
	props := map[string]bool{}
	for _, p := range e.Problems {
		props[p.Property] = true
	}
	switch n := len(props); {
	case n == 1 && props[""]:
		return "Not saved: see why beside “Within these limits, run without asking”."
	case n == 1:
		return "Not saved: a limit cannot be used; the reason is beside it."
	default:
		return fmt.Sprintf("Not saved: %d of the limits cannot be used; each reason is beside its field.", n)
	}
}

// limitsFact writes the limits a save recorded as the row says them, and whether calls within
// them run without asking; what does not read as limits is shown as its JSON.
func limitsFact(v any) string {
	b, err := json.Marshal(v)
	var set arglimits.Set
	if err != nil || json.Unmarshal(b, &set) != nil {
		return valueText(v)
	}
	if len(set.Props) == 0 {
		return "none (cleared)"
	}
	if set.RunUnasked {
		return limitsSummary(set) + "; calls within them run without asking"
	}
	return limitsSummary(set)
}
