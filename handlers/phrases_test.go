package handlers_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
)

// addSchema is a tool that takes two integers, which the positional rule can never fill.
const addSchema = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`

// enabledMCP proposes an MCP row as discovery would and enables it with a step-up, as the
// owner's page would.
func (b *browser) enabledMCP(a *authtest.Authenticator, server, remote, description, schema string) allowlist.Tool {
	f := b.f
	f.t.Helper()
	tool := f.proposeMCP(server, remote, description, schema, true)
	b.mustStepUp(a, enableOf(tool))
	mustOK(f.t, "enable", b.enable(tool))
	return f.mustGet(tool.ID)
}

// phrasesOf is the approval of saving tool's phrases as a page showing it now would ask for it.
func phrasesOf(tool allowlist.Tool) auth.Approval {
	return auth.One(auth.ActionSetPhrases, tool.ID, tool.ApprovalDigest())
}

// savePhrases clicks Save phrases on tool's row as htmx does, from a page that showed shown.
func (b *browser) savePhrases(shown allowlist.Tool, text string) *http.Response {
	return b.htmx(http.MethodPost, "/tools/"+itoa(shown.ID)+"/phrases",
		url.Values{"fingerprint": {shown.ApprovalDigest()}, "phrases": {text}}).Result()
}

// body reads a response's body.
func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// savedLines is what the phrase book holds for id.
func (f *fixture) savedLines(id int64) []string {
	f.t.Helper()
	m, err := f.book.Phrases(f.t.Context(), []int64{id})
	if err != nil {
		f.t.Fatal(err)
	}
	return m[id].Lines
}

// textareaOf is the text of the phrases box in a row's HTML, as a browser reads it.
func textareaOf(t *testing.T, row string) string {
	t.Helper()
	i := strings.Index(row, `name="phrases"`)
	if i < 0 {
		t.Fatalf("no phrases box in the row:\n%s", row)
	}
	open := i + strings.Index(row[i:], ">") + 1
	end := strings.Index(row[open:], "</textarea>")
	// A browser drops the newline that follows the opening tag.
	return html.UnescapeString(strings.TrimPrefix(row[open:open+end], "\n"))
}

// TestSavePhrasesNeedsAStepUpForTheRowAsShown: an enabled MCP row has the phrases box and says
// voice cannot fill its arguments; saving asks for a step-up that names the tool and its
// fingerprint, and its prompt says what the phrases do; once approved they are saved for that
// fingerprint, the row says how to say the tool, and the grant is spent.
func TestSavePhrasesNeedsAStepUpForTheRowAsShown(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "calc", "add", "Adds two numbers.", addSchema)

	row := rowHTML(t, b.get("/tools").Body.String(), tool.ID)
	for _, want := range []string{`<textarea id="phrases-` + itoa(tool.ID) + `" name="phrases"`, ">Save phrases</button>",
		`aria-label="Save phrases for calc_add"`, `aria-label="Disable calc_add"`, "Voice cannot fill its arguments: add a phrase",
		`<span class="visually-hidden"> for calc_add</span>`} {
		if !strings.Contains(row, want) {
			t.Errorf("the enabled row lacks %q:\n%s", want, row)
		}
	}

	res := b.savePhrases(tool, "add {a} and {b}")
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("save without a step-up: %d, want 403", res.StatusCode)
	}
	if got := stepUpTrigger(t, res.Header); !got.Same(phrasesOf(tool)) {
		t.Fatalf("the refusal asks for %+v, want %+v", got, phrasesOf(tool))
	}
	if res.Header.Get("HX-Reswap") != "none" {
		t.Error("a step-up refusal must leave the row, and what the owner typed, in place")
	}
	if got := f.savedLines(tool.ID); got != nil {
		t.Fatalf("saved without a step-up: %q", got)
	}

	begin := b.beginStepUp(phrasesOf(tool))
	for _, want := range []string{"“calc_add”", "calc", shortFP(tool.Fingerprint), "fill its arguments"} {
		if !strings.Contains(begin.Prompt, want) {
			t.Errorf("the step-up prompt %q lacks %q", begin.Prompt, want)
		}
	}
	b.mustStepUp(a, phrasesOf(tool))
	res = b.savePhrases(tool, "add {a} and {b}\n\n(what is | sum) {a} plus {b}")
	text := body(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("save with its step-up: %d %s", res.StatusCode, text)
	}
	for _, want := range []string{"Phrases saved.", "Say: ‘add 3 and 4’ or ‘what is 3 plus 4’"} {
		if !strings.Contains(html.UnescapeString(text), want) {
			t.Errorf("the saved row lacks %q:\n%s", want, text)
		}
	}
	if got := textareaOf(t, text); got != "add {a} and {b}\n(what is | sum) {a} plus {b}" {
		t.Errorf("the box after saving holds %q", got)
	}
	saved, err := f.book.Phrases(t.Context(), []int64{tool.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := saved[tool.ID]; len(got.Lines) != 2 || got.Fingerprint != tool.Fingerprint {
		t.Fatalf("saved %+v", got)
	}
	// The grant is spent: the next save asks again.
	if res := b.savePhrases(tool, ""); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a second save on the same step-up: %d", res.StatusCode)
	}
}

func shortFP(fp string) string { return fp[:len("sha256:")+4] }

// TestPhrasesForAShapeNoLongerShownAreRefusedWithTheDiff: the owner stepped up for the shape
// the page showed; the far end redefines the tool. The save is refused with 409 and what
// changed, asks for no passkey, saves nothing, and keeps what the owner wrote: in the box
// when the row, enabled again, still takes phrases, below the row when it does not. The grant
// for the old shape can never save phrases for the new one.
func TestPhrasesForAShapeNoLongerShownAreRefusedWithTheDiff(t *testing.T) {
	const (
		seen = "Adds two numbers."
		now  = "Adds two numbers and mails the result to everyone."
		sent = "add {a} and {b}"
	)
	for _, reEnabled := range []bool{false, true} {
		name := map[bool]string{false: "redefined, so proposed", true: "redefined and enabled again"}[reEnabled]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a := authtest.New(testOrigin)
			b := f.signUp(a)
			shown := b.enabledMCP(a, "calc", "add", seen, addSchema)
			b.mustStepUp(a, phrasesOf(shown))
			cur := f.redefine(shown, now, true)
			if reEnabled {
				b.mustStepUp(a, enableOf(cur))
				mustOK(t, "enable again", b.enable(cur))
				cur = f.mustGet(cur.ID)
			}

			res := b.savePhrases(shown, sent)
			text := body(t, res)
			if res.StatusCode != http.StatusConflict {
				t.Fatalf("save for the shape shown: %d %s, want 409", res.StatusCode, text)
			}
			for _, want := range []string{"the phrases were not saved", "so its phrases were not saved", seen, now,
				`data-fingerprint="` + cur.ApprovalDigest() + `"`} {
				if !strings.Contains(html.UnescapeString(text), want) {
					t.Errorf("the refusal lacks %q:\n%s", want, text)
				}
			}
			if reEnabled {
				if got := textareaOf(t, text); got != sent {
					t.Errorf("the box holds %q, want what the owner wrote", got)
				}
			} else if !strings.Contains(text, "Your phrases, not saved:") || !strings.Contains(text, "<pre>add {a} and {b}</pre>") {
				t.Errorf("what the owner wrote is lost:\n%s", text)
			}
			if res.Header.Get("HX-Trigger") != "" {
				t.Errorf("a changed row must not ask for the passkey: %q", res.Header.Get("HX-Trigger"))
			}
			if got := f.savedLines(shown.ID); got != nil {
				t.Fatalf("saved for a shape the owner did not see: %q", got)
			}
			if !reEnabled {
				return
			}
			// The unspent grant for the old shape does not open a save of the new one.
			res = b.savePhrases(cur, sent)
			if res.StatusCode != http.StatusForbidden || !stepUpTrigger(t, res.Header).Same(phrasesOf(cur)) {
				t.Fatalf("save of the new shape on the old shape's grant: %d", res.StatusCode)
			}
			b.mustStepUp(a, phrasesOf(cur))
			if res := b.savePhrases(cur, sent); res.StatusCode != http.StatusOK {
				t.Fatalf("save of the shape now shown: %d %s", res.StatusCode, body(t, res))
			}
		})
	}
}

// TestBadPhraseLinesAreNamedBeforeThePasskey: lines that cannot be used are refused with 422
// before any passkey is asked for, each named with its line number in the box and what is
// wrong (hidden characters spelled out); the box keeps exactly what the owner wrote; nothing is
// saved, and the grant the owner holds is still good for the corrected text. Too many lines
// and a row that no longer takes phrases are refused as plainly.
func TestBadPhraseLinesAreNamedBeforeThePasskey(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "calc", "add", "Adds two numbers.", addSchema)
	b.mustStepUp(a, phrasesOf(tool))

	sent := "add {a} and {b}\r\nadd {c} to {a}\n\nplus {a\n<b>{a\u200b}</b> and {b}"
	res := b.savePhrases(tool, sent)
	text := body(t, res)
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad lines: %d %s, want 422", res.StatusCode, text)
	}
	if res.Header.Get("HX-Trigger") != "" {
		t.Error("bad lines asked for the passkey")
	}
	for _, want := range []string{
		"Not saved: 3 of the lines cannot be used.", `aria-invalid="true"`,
		"Line 2, <code>add {c} to {a}</code>: {c} is not a property of add (it takes a and b)",
		"Line 4, <code>plus {a</code>", "Line 5, <code>&lt;b&gt;{a", `<mark class="hidden-char"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "<b>{a") {
		t.Error("a phrase reached the page unescaped")
	}
	if got := textareaOf(t, text); got != sent {
		t.Errorf("the box holds %q, want %q", got, sent)
	}
	if got := f.savedLines(tool.ID); got != nil {
		t.Fatalf("bad lines saved %q", got)
	}

	// Without htmx (a plain form post) the error page says the same, in general.
	plain := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/phrases",
		strings.NewReader(url.Values{"fingerprint": {tool.ApprovalDigest()}, "phrases": {sent}}.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if plain.Code != http.StatusUnprocessableEntity || !strings.Contains(plain.Body.String(), "Some of the phrases cannot be used") {
		t.Fatalf("bad lines from a plain form: %d %s", plain.Code, plain.Body.String())
	}

	many := strings.Repeat("add {a} and {b}\n", 21)
	res = b.savePhrases(tool, many)
	if text := body(t, res); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text, "at most 20 phrases") || textareaOf(t, text) != many {
		t.Fatalf("21 phrases: %d %s", res.StatusCode, text)
	}

	// The grant the owner got was never spent: the corrected text saves with it.
	if res := b.savePhrases(tool, "add {a} and {b}"); res.StatusCode != http.StatusOK {
		t.Fatalf("the corrected text: %d %s", res.StatusCode, body(t, res))
	}

	// Disabled in another tab: the row no longer takes phrases, and says so.
	mustOK(t, "disable", b.htmx(http.MethodPost, "/tools/"+itoa(tool.ID)+"/disable", nil))
	res = b.savePhrases(tool, "sum {a} {b} please")
	text = body(t, res)
	if res.StatusCode != http.StatusConflict || !strings.Contains(text, "only an enabled MCP tool takes phrases, and this one is disabled now") ||
		!strings.Contains(text, "sum {a} {b} please") {
		t.Fatalf("save to a disabled row: %d %s", res.StatusCode, text)
	}
	if got := f.savedLines(tool.ID); len(got) != 1 || got[0] != "add {a} and {b}" {
		t.Fatalf("the saved phrases changed: %q", got)
	}
}

// TestRedefinitionVoidsPhrases: a row whose phrases were saved for a shape it no longer has
// says so; once enabled again, its box holds the old phrases for the owner to check, and voice
// does not use them until they are saved again.
func TestRedefinitionVoidsPhrases(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := b.enabledMCP(a, "calc", "add", "Adds two numbers.", addSchema)
	b.mustStepUp(a, phrasesOf(tool))
	if res := b.savePhrases(tool, "add {a} and {b}"); res.StatusCode != http.StatusOK {
		t.Fatalf("save: %d", res.StatusCode)
	}
	cur := f.redefine(tool, "Adds two numbers, now differently.", true)

	row := html.UnescapeString(rowHTML(t, b.get("/tools").Body.String(), tool.ID))
	if !strings.Contains(row, "once you enable it, check them and save them again") || strings.Contains(row, `name="phrases"`) {
		t.Errorf("the proposed row of a redefined tool:\n%s", row)
	}
	b.mustStepUp(a, enableOf(cur))
	mustOK(t, "enable again", b.enable(cur))
	row = rowHTML(t, b.get("/tools").Body.String(), tool.ID)
	if !strings.Contains(html.UnescapeString(row), "Its phrases were for the earlier shape of this tool; check them and save them again.") ||
		!strings.Contains(row, "Voice cannot fill its arguments: add a phrase") || textareaOf(t, row) != "add {a} and {b}" {
		t.Errorf("the enabled row with void phrases:\n%s", row)
	}
}
