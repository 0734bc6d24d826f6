package handlers_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
)

// thermostatSchema is a tool with a bounded number, a server's enum and a free string.
const thermostatSchema = `{"type":"object","properties":{"temperature":{"type":"number","minimum":5,"maximum":35},` +
	`"mode":{"type":"string","enum":["heat","cool","off"]},"unit":{"type":"string"},"tags":{"type":"array"}},"required":["temperature"]}`

// limitsForm is the limits form as the page sends it: each property's kind ("" for no limit)
// and its fields, as fieldsOf names them.
func limitsForm(shown allowlist.Tool, fields map[string]string, unasked bool) url.Values {
	form := url.Values{"fingerprint": {shown.ApprovalDigest()}, "kind:temperature": {""}, "kind:mode": {""}, "kind:unit": {""}}
	for k, v := range fields {
		form[k] = strings.Split(v, "\x00")
	}
	if unasked {
		form.Set("run_without_asking", "1")
	}
	return form
}

// warmForm limits temperature to 17–23 and mode to heat or cool.
func warmForm(shown allowlist.Tool, unasked bool) url.Values {
	return limitsForm(shown, map[string]string{"kind:temperature": "range", "min:temperature": "17", "max:temperature": "23",
		"kind:mode": "values", "values:mode": `"heat"` + "\x00" + `"cool"`}, unasked)
}

// saveLimits clicks Save limits on shown's row as htmx does.
func (b *browser) saveLimits(shown allowlist.Tool, form url.Values) *http.Response {
	return b.htmx(http.MethodPost, "/tools/"+itoa(shown.ID)+"/limits", form).Result()
}

// mustAskForLimits saves form on shown's row without a step-up, as the page's first click
// does: Maven answers that it needs one for want, and remembers what its prompt says.
func (b *browser) mustAskForLimits(shown allowlist.Tool, form url.Values, want auth.Approval) {
	t := b.f.t.(*testing.T)
	t.Helper()
	res := b.saveLimits(shown, form)
	if res.StatusCode != http.StatusForbidden || !stepUpTrigger(t, res.Header).Same(want) {
		t.Fatalf("save without a step-up: %d %s, want 403 asking for %+v", res.StatusCode, body(t, res), want)
	}
}

// limitsOf is the approval of saving set on tool as a page showing it now would ask for it.
func limitsOf(t *testing.T, tool allowlist.Tool, set string) auth.Approval {
	t.Helper()
	var s limits.Set
	if err := json.Unmarshal([]byte(set), &s); err != nil {
		t.Fatal(err)
	}
	d, err := limits.Digest(tool.ApprovalDigest(), s)
	if err != nil {
		t.Fatal(err)
	}
	return auth.One(auth.ActionSetLimits, tool.ID, d)
}

const warmSet = `{"properties":{"temperature":{"minimum":17,"maximum":23},"mode":{"enum":["heat","cool"]}},"run_without_asking":false}`

// savedLimits is what the limits service holds for id.
func (f *fixture) savedLimits(id int64) (limits.Saved, bool) {
	f.t.Helper()
	m, err := f.limits.Limits(f.t.Context(), []int64{id})
	if err != nil {
		f.t.Fatal(err)
	}
	s, ok := m[id]
	return s, ok
}

// TestSaveLimitsNeedsAStepUpNamingThem: an enabled MCP row's details hold the limits form, a
// kind per property of its schema (none for one that takes no limit), "Within these limits, run
// without asking" unticked. Saving asks for a step-up naming these limits on this fingerprint,
// whose prompt says them; approved, they are saved, the row says "limits: temperature 17–23"
// with its details open, and the grant is spent. A grant for other limits saves nothing.
func TestSaveLimitsNeedsAStepUpNamingThem(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "home", "set_temperature", "Sets the thermostat.", thermostatSchema)

	row := rowHTML(t, b.get("/tools").Body.String(), tool.ID)
	for _, want := range []string{`name="kind:temperature"`, `<option value="range">Range</option>`, `name="values:mode" value="&#34;cool&#34;"`,
		`name="pattern:unit"`, "Takes no limit: it is an array.", `aria-label="Save limits for home_set_temperature"`,
		`<input type="checkbox" name="run_without_asking" value="1" aria-describedby`, "Within these limits, run without asking"} {
		if !strings.Contains(row, want) {
			t.Errorf("the enabled row lacks %q:\n%s", want, row)
		}
	}
	if strings.Contains(row, "limits:") || strings.Contains(row, `<details class="more" open>`) {
		t.Errorf("a row without limits says it has some, or opens its details:\n%s", row)
	}

	res := b.saveLimits(tool, warmForm(tool, false))
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("save without a step-up: %d %s, want 403", res.StatusCode, body(t, res))
	}
	want := limitsOf(t, tool, warmSet)
	if got := stepUpTrigger(t, res.Header); !got.Same(want) {
		t.Fatalf("the refusal asks for %+v, want %+v", got, want)
	}
	if _, ok := f.savedLimits(tool.ID); ok {
		t.Fatal("saved without a step-up")
	}
	begin := b.beginStepUp(want)
	for _, w := range []string{"save these limits for “home_set_temperature”", shortFP(tool.Fingerprint),
		"mode: heat, cool; temperature 17–23", "refused and never sent"} {
		if !strings.Contains(begin.Prompt, w) {
			t.Errorf("the step-up prompt %q lacks %q", begin.Prompt, w)
		}
	}
	if strings.Contains(begin.Prompt, "without asking") {
		t.Errorf("the prompt %q says calls run without asking", begin.Prompt)
	}

	// A grant for other limits does not save these.
	b.mustStepUp(a, want)
	wider := limitsForm(tool, map[string]string{"kind:temperature": "range", "min:temperature": "17", "max:temperature": "30"}, false)
	if res := b.saveLimits(tool, wider); res.StatusCode != http.StatusForbidden {
		t.Fatalf("other limits on the grant for these: %d", res.StatusCode)
	}
	res = b.saveLimits(tool, warmForm(tool, false))
	text := html.UnescapeString(body(t, res))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("save with its step-up: %d %s", res.StatusCode, text)
	}
	for _, w := range []string{"Limits saved.", "limits: mode: heat, cool; temperature 17–23", `<details class="more" open>`,
		`<option value="range" selected>Range</option>`, `value="17"`, `value="23"`, `value=""cool"" checked`} {
		if !strings.Contains(text, w) {
			t.Errorf("the saved row lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "runs without asking you") {
		t.Error("the row says it runs without asking")
	}
	saved, ok := f.savedLimits(tool.ID)
	if !ok || saved.Fingerprint != tool.Fingerprint || saved.Set.RunUnasked || len(saved.Set.Props) != 2 || saved.SavedBy == "" {
		t.Fatalf("saved %+v", saved)
	}
	if res := b.saveLimits(tool, warmForm(tool, false)); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a second save on the same step-up: %d", res.StatusCode)
	}

	// The list shows them too, and the feed records the save with the limits in words.
	if row := html.UnescapeString(rowHTML(t, b.get("/tools").Body.String(), tool.ID)); !strings.Contains(row, "limits: mode: heat, cool; temperature 17–23") {
		t.Errorf("/tools does not show the limits:\n%s", row)
	}
	if page := html.UnescapeString(b.get("/activity").Body.String()); !strings.Contains(page, "Limits saved") ||
		!strings.Contains(page, "mode: heat, cool; temperature 17–23") {
		t.Errorf("/activity does not show the save:\n%s", page)
	}
}

// TestRunWithoutAskingIsShownPlainly: ticked and saved, the row says on its face that calls
// within its limits run without asking, the prompt said so, and the box stays ticked; saved
// with every limit off, the limits are cleared.
func TestRunWithoutAskingIsShownPlainly(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "home", "set_temperature", "Sets the thermostat.", thermostatSchema)
	set := strings.Replace(warmSet, `"run_without_asking":false`, `"run_without_asking":true`, 1)
	b.mustAskForLimits(tool, warmForm(tool, true), limitsOf(t, tool, set))
	if begin := b.beginStepUp(limitsOf(t, tool, set)); !strings.Contains(begin.Prompt, "a call within them runs without asking you") {
		t.Errorf("the prompt %q does not say calls run without asking", begin.Prompt)
	}
	b.mustStepUp(a, limitsOf(t, tool, set))
	res := b.saveLimits(tool, warmForm(tool, true))
	text := body(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(text, "Within these limits it runs without asking you.") ||
		!strings.Contains(text, `name="run_without_asking" value="1" checked`) {
		t.Fatalf("saved to run without asking: %d %s", res.StatusCode, text)
	}
	if saved, _ := f.savedLimits(tool.ID); !saved.Set.RunUnasked {
		t.Fatalf("saved %+v", saved)
	}

	none := limitsForm(tool, nil, false)
	cleared := limitsOf(t, tool, `{"properties":{},"run_without_asking":false}`)
	b.mustAskForLimits(tool, none, cleared)
	if begin := b.beginStepUp(cleared); !strings.Contains(begin.Prompt, "clear the limits of “home_set_temperature”") {
		t.Errorf("the prompt %q does not say the limits are cleared", begin.Prompt)
	}
	b.mustStepUp(a, cleared)
	res = b.saveLimits(tool, none)
	text = body(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(text, "Limits cleared.") || strings.Contains(text, "limits:") ||
		strings.Contains(text, "runs without asking you") {
		t.Fatalf("cleared: %d %s", res.StatusCode, text)
	}
}

// TestLimitsTheSchemaContradictsAreRefusedBesideTheField: before any passkey, a range wider than
// the server's own, a pattern that does not compile, running unasked with no limit and a
// property the schema does not have are each refused with 422 and the reason beside the field
// at fault, which is marked invalid; every field keeps what the owner wrote; nothing is saved.
func TestLimitsTheSchemaContradictsAreRefusedBesideTheField(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "home", "set_temperature", "Sets the thermostat.", thermostatSchema)

	form := limitsForm(tool, map[string]string{"kind:temperature": "range", "min:temperature": "0", "max:temperature": "23",
		"kind:mode": "fixed", "value:mode": `"heat"`, "kind:unit": "pattern", "pattern:unit": "(celsius"}, true)
	res := b.saveLimits(tool, form)
	text := body(t, res)
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("limits the schema contradicts: %d %s, want 422", res.StatusCode, text)
	}
	if res.Header.Get("HX-Trigger") != "" {
		t.Error("refused limits asked for the passkey")
	}
	plain := html.UnescapeString(text)
	temp := fieldsetOf(t, plain, "temperature")
	for _, w := range []string{"the server's own range is 5–35: a limit may only narrow it", `value="0" autocomplete="off" aria-invalid="true"`,
		`value="23" autocomplete="off" aria-invalid="true"`, `<option value="range" selected>`} {
		if !strings.Contains(temp, w) {
			t.Errorf("temperature's fieldset lacks %q:\n%s", w, temp)
		}
	}
	if unit := fieldsetOf(t, plain, "unit"); !strings.Contains(unit, `value="(celsius"`) || !strings.Contains(unit, "missing closing )") {
		t.Errorf("unit's fieldset:\n%s", unit)
	}
	if mode := fieldsetOf(t, plain, "mode"); !strings.Contains(mode, `<option value=""heat"" selected>`) || strings.Contains(mode, "aria-invalid") {
		t.Errorf("mode's fieldset, which is fine, lost its value or is marked invalid:\n%s", mode)
	}
	for _, w := range []string{"Not saved: 2 of the limits cannot be used", `name="run_without_asking" value="1" checked`, `<details class="more" open>`} {
		if !strings.Contains(plain, w) {
			t.Errorf("the refusal lacks %q:\n%s", w, plain)
		}
	}
	if _, ok := f.savedLimits(tool.ID); ok {
		t.Fatal("refused limits were saved")
	}

	res = b.saveLimits(tool, limitsForm(tool, nil, true))
	text = html.UnescapeString(body(t, res))
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text, "to run calls without asking, set at least one limit") ||
		!strings.Contains(text, `limits-problems-`+itoa(tool.ID)+`" aria-invalid="true"`) {
		t.Fatalf("running unasked with no limit: %d %s", res.StatusCode, text)
	}

	// A property the schema does not have (a page of another shape, or a hand-made form).
	res = b.saveLimits(tool, limitsForm(tool, map[string]string{"kind:nope": "fixed", "value:nope": "x"}, false))
	text = html.UnescapeString(body(t, res))
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text, "nope: not a property of this tool") {
		t.Fatalf("a property the schema does not have: %d %s", res.StatusCode, text)
	}

	// Without htmx (a plain form post) the error page says the same, in general.
	plainPost := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/limits", strings.NewReader(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if plainPost.Code != http.StatusUnprocessableEntity || !strings.Contains(plainPost.Body.String(), "Some of the limits cannot be used") {
		t.Fatalf("refused limits from a plain form: %d %s", plainPost.Code, plainPost.Body.String())
	}
}

// fieldsetOf is the limits form's fieldset of property name in a row's HTML.
func fieldsetOf(t *testing.T, row, name string) string {
	t.Helper()
	i := strings.Index(row, `<legend><code>`+name+`</code>`)
	if i < 0 {
		t.Fatalf("no fieldset of %s in:\n%s", name, row)
	}
	end := strings.Index(row[i:], `<fieldset class="limit-prop"`)
	if end < 0 {
		end = strings.Index(row[i:], `class="unasked-field"`)
	}
	return row[i : i+end]
}

// TestARedefinitionVoidsTheLimitsOnTheRow: limits saved for a shape the tool no longer has are
// no longer shown in force; the proposed row says the new shape starts with none, and once it is
// enabled again its form holds none, nor the run-without-asking choice, and says why.
func TestARedefinitionVoidsTheLimitsOnTheRow(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "home", "set_temperature", "Sets the thermostat.", thermostatSchema)
	set := strings.Replace(warmSet, `"run_without_asking":false`, `"run_without_asking":true`, 1)
	b.mustAskForLimits(tool, warmForm(tool, true), limitsOf(t, tool, set))
	b.mustStepUp(a, limitsOf(t, tool, set))
	mustOK(t, "save limits", b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/limits", warmForm(tool, true)))

	cur := f.redefine(tool, "Sets the thermostat, and the boiler.", true)
	row := html.UnescapeString(rowHTML(t, b.get("/tools").Body.String(), tool.ID))
	if !strings.Contains(row, "once you enable it, it starts with none") || strings.Contains(row, "limits:") || strings.Contains(row, `name="kind:temperature"`) {
		t.Errorf("the proposed row of a redefined tool:\n%s", row)
	}
	b.mustStepUp(a, enableOf(cur))
	mustOK(t, "enable again", b.enable(cur))
	row = html.UnescapeString(rowHTML(t, b.get("/tools").Body.String(), tool.ID))
	if !strings.Contains(row, "Its limits were for the earlier shape of this tool and no longer apply") || strings.Contains(row, "limits:") ||
		strings.Contains(row, "runs without asking you") || strings.Contains(row, " selected>Range") || strings.Contains(row, `value="1" checked`) {
		t.Errorf("the enabled row with void limits:\n%s", row)
	}
}
