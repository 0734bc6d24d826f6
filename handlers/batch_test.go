package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
)

// selection is the form a page sends for the rows it showed and the owner ticked.
func selection(tools ...allowlist.Tool) url.Values {
	v := url.Values{}
	for _, t := range tools {
		v.Add("tool", itoa(t.ID)+":"+t.ApprovalDigest())
	}
	return v
}

// batchOf is the approval of enabling tools as a page showing them now asks for it.
func batchOf(tools ...allowlist.Tool) auth.Approval {
	a := auth.Approval{Action: auth.ActionEnableTool}
	for _, t := range tools {
		a.Items = append(a.Items, auth.Item{Target: t.ID, Digest: t.ApprovalDigest()})
	}
	return a
}

// Several rows ticked on the page are enabled with one step-up that names each and its
// fingerprint; one redefined between the page and the click is refused for itself alone, shown
// with what changed, and the others are enabled in the same answer.
func TestBatchEnableWithOneStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	list := f.proposeMCP("tasks", "list_tasks", "Lists tasks.", `{"type":"object"}`, true)
	search := f.proposeMCP("tasks", "search_tasks", "Searches tasks.", `{"type":"object"}`, true)
	notes := f.proposeMCP("notes", "read_notes", "Reads notes.", `{"type":"object"}`, true)
	form := selection(list, search, notes)

	page := b.get("/tools").Body.String()
	for _, want := range []string{`id="tool-batch"`, `hx-post="/tools/enable"`, `>Enable selected</button>`,
		`name="tool" value="` + itoa(list.ID) + `:` + list.ApprovalDigest() + `"`, `aria-label="Select tasks_list_tasks"`} {
		if !strings.Contains(page, want) {
			t.Errorf("/tools lacks %q", want)
		}
	}

	r := b.htmx(http.MethodPost, "/tools/enable", form)
	if r.Code != http.StatusForbidden {
		t.Fatalf("batch without a step-up: %d", r.Code)
	}
	if got := stepUpTrigger(t, r.Header()); !got.Same(batchOf(list, search, notes)) {
		t.Fatalf("the step-up asked for %+v, want all three as shown", got)
	}
	begin := b.beginStepUp(batchOf(list, search, notes))
	for _, want := range []string{"these 3 tools", "tasks_list_tasks", "tasks_search_tasks", "notes_read_notes", "sha256:test"} {
		if !strings.Contains(begin.Prompt, want) {
			t.Errorf("prompt %q does not name %q", begin.Prompt, want)
		}
	}
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "step-up", b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil))

	// search_tasks changes after the page showed it and before the click is retried.
	f.redefine(search, "Searches tasks and deletes what it finds.", true)
	r = b.do(http.MethodPost, "/tools/enable", strings.NewReader(form.Encode()), http.Header{
		"Hx-Request": {"true"}, "Content-Type": {"application/x-www-form-urlencoded"}, "Hx-Current-Url": {testOrigin + "/tools?state=proposed"},
	})
	mustOK(t, "batch enable", r)
	if f.state(list.ID) != allowlist.StateEnabled || f.state(notes.ID) != allowlist.StateEnabled {
		t.Fatal("the unchanged rows were not enabled")
	}
	if f.state(search.ID) != allowlist.StateProposed {
		t.Fatal("the redefined row was enabled")
	}
	body := r.Body.String()
	for _, want := range []string{
		"Enabled 2 tools:", "<code>tasks_list_tasks</code>", "<code>notes_read_notes</code>",
		"Not enabled: <code>tasks_search_tasks</code>: it changed since this page showed it",
		`href="/tools?state=enabled"`, // where the enabled rows went
		"Changed since this page showed it: nothing was enabled", "Searches tasks and deletes what it finds.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the answer lacks %q:\n%s", want, body)
		}
	}
	// The answer is the page's view (proposed): the enabled rows left it, the refused one is
	// there with its diff.
	if strings.Contains(body, `id="tool-`+itoa(list.ID)+`"`) || !strings.Contains(body, `id="tool-`+itoa(search.ID)+`"`) {
		t.Error("the list is not the page's view")
	}

	// The grant was for one use.
	if r := b.htmx(http.MethodPost, "/tools/enable", selection(f.mustGet(search.ID))); r.Code != http.StatusForbidden {
		t.Fatalf("a spent grant enabled again: %d", r.Code)
	}
}

// A step-up for some rows cannot enable others, or the same rows shown otherwise.
func TestBatchStepUpCoversExactlyItsItems(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	one, two, three := f.propose("one"), f.propose("two"), f.propose("three")
	b.mustStepUp(a, batchOf(one, two))
	if r := b.htmx(http.MethodPost, "/tools/enable", selection(one, two, three)); r.Code != http.StatusForbidden {
		t.Fatalf("a step-up for two enabled three: %d", r.Code)
	}
	for _, tool := range []allowlist.Tool{one, two, three} {
		if f.state(tool.ID) != allowlist.StateProposed {
			t.Fatalf("%s enabled", tool.Name)
		}
	}
	for name, form := range map[string]url.Values{
		"nothing":      {},
		"no digest":    {"tool": {itoa(one.ID)}},
		"not a number": {"tool": {"x:sha256:1"}},
	} {
		if r := b.htmx(http.MethodPost, "/tools/enable", form); r.Code == http.StatusForbidden || r.Code == http.StatusOK {
			t.Errorf("%s: %d, want refused before any step-up", name, r.Code)
		}
	}
	if r := b.htmx(http.MethodPost, "/tools/enable", url.Values{}); !strings.Contains(r.Body.String(), "Nothing is selected") {
		t.Errorf("an empty selection is not explained: %s", r.Body.String())
	}
}

// Several command lines are approved with one step-up, and each server is started.
func TestBatchApproveCommandLines(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	notes, files := f.pendingCommand("notes", "notes-server"), f.pendingCommand("files", "files-server --root /srv")
	f.servers.set(waiting("notes"), waiting("files"))
	card := b.htmx(http.MethodGet, "/tools/servers", nil).Body.String()
	for _, want := range []string{`id="command-batch"`, "Approve and start selected", `name="command" value="` + itoa(notes) + `"`} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q", want)
		}
	}
	form := url.Values{"command": {itoa(notes), itoa(files)}}
	r := b.htmx(http.MethodPost, "/servers/commands/approve", form)
	want := auth.Approval{Action: auth.ActionAddServer, Items: []auth.Item{{Target: notes}, {Target: files}}}
	if r.Code != http.StatusForbidden || !stepUpTrigger(t, r.Header()).Same(want) {
		t.Fatalf("batch approve without a step-up: %d", r.Code)
	}
	b.mustStepUp(a, want)
	mustOK(t, "approve both", b.htmx(http.MethodPost, "/servers/commands/approve", form))
	if !f.approved("notes") || !f.approved("files") {
		t.Fatal("not both approved")
	}
	if got := f.waker.list(); !slices.Equal(got, []string{"notes", "files"}) {
		t.Errorf("woken %v", got)
	}
}

func (f *fixture) mustGet(id int64) allowlist.Tool {
	f.t.Helper()
	t, err := f.tools.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}
