package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
)

// /tools?state=S shows only the rows in state S, with a link and a count per state; fifty
// proposals no longer push every enabled row to a second page.
func TestStateFiltersShowOnlyTheirState(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	for i := range 60 {
		f.propose("proposal_" + itoa(int64(100+i)))
	}
	on := f.propose("enabled_one")
	b.mustStepUp(a, enableOf(on))
	mustOK(t, "enable", b.enable(on))

	body := b.get("/tools?state=enabled").Body.String()
	if strings.Count(body, `data-state="enabled"`) != 1 || strings.Contains(body, `data-state="proposed"`) {
		t.Fatalf("?state=enabled does not show only the enabled row:\n%s", body)
	}
	for _, want := range []string{
		`<a href="/tools?state=enabled" hx-get="/tools?state=enabled"`, `aria-current="page">Enabled <span class="n">1</span>`,
		`>Proposed <span class="n">60</span>`, `>All <span class="n">61</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("?state=enabled lacks %q", want)
		}
	}
	proposed := b.get("/tools?state=proposed").Body.String()
	if strings.Count(proposed, `data-state="proposed"`) != 50 || !strings.Contains(proposed, `href="/tools?page=2&amp;state=proposed"`) {
		t.Error("?state=proposed: want 50 rows and a next page of the same filter")
	}
	// An unknown state shows every state rather than nothing.
	if all := b.get("/tools?state=bogus").Body.String(); !strings.Contains(all, `aria-current="page">All`) {
		t.Error("an unknown state is not read as all")
	}
}

// Enabling a row in a view that no longer shows it leaves a note saying where it went; in a
// view that still shows it, the row stays in place and says what was done. The counts follow.
func TestActionSaysWhereTheRowWent(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")
	other := f.propose("reboot_nas")
	b.mustStepUp(a, enableOf(tool))
	from := func(view string) http.Header {
		return http.Header{"Hx-Request": {"true"}, "Content-Type": {"application/x-www-form-urlencoded"}, "Hx-Current-Url": {testOrigin + view}}
	}
	form := url.Values{"fingerprint": {tool.ApprovalDigest()}}
	r := b.do(http.MethodPost, "/tools/"+itoa(tool.ID)+"/enable", strings.NewReader(form.Encode()), from("/tools?state=proposed"))
	mustOK(t, "enable", r)
	body := r.Body.String()
	for _, want := range []string{
		`id="moved-` + itoa(tool.ID) + `"`, "<code>restart_router</code>: Enabled. It is now under",
		`href="/tools?q=restart_router&amp;state=enabled"`, `id="tool-filters" class="filters" aria-label="Show tools by state" hx-swap-oob="true"`,
		`>Enabled <span class="n">1</span>`, `>Proposed <span class="n">1</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the answer lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `id="tool-`+itoa(tool.ID)+`"`) {
		t.Error("a row that left the view is still rendered in it")
	}

	r = b.do(http.MethodPost, "/tools/"+itoa(other.ID)+"/disable", nil, from("/tools"))
	mustOK(t, "reject", r)
	if body := r.Body.String(); !strings.Contains(body, `id="tool-`+itoa(other.ID)+`"`) || !strings.Contains(body, ">Rejected.</span>") {
		t.Errorf("in the All view the row stays and says what was done:\n%s", body)
	}
}

// The servers card's poll tells the list on the page when the allowlist changed since it was
// rendered, and says nothing when it did not.
func TestServersPollTellsTheListOfNewTools(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	f.servers.set(mcp.ServerStatus{Name: "tasks", State: mcp.StateConnected, Tools: 2})
	f.propose("one")
	page := b.get("/tools").Body.String()
	const seenAttr = `id="tools-seen" name="seen" value="`
	i := strings.Index(page, seenAttr)
	if i < 0 || !strings.Contains(page, `hx-include="#tools-seen"`) {
		t.Fatal("the list does not carry what it was rendered from, or the card does not send it")
	}
	seen := page[i+len(seenAttr) : i+len(seenAttr)+strings.Index(page[i+len(seenAttr):], `"`)]
	if card := b.htmx(http.MethodGet, "/tools/servers?seen="+url.QueryEscape(seen), nil).Body.String(); strings.Contains(card, "tools-news") {
		t.Fatalf("news without a change:\n%s", card)
	}
	f.proposeMCP("tasks", "a", "A.", `{"type":"object"}`, true)
	f.proposeMCP("tasks", "b", "B.", `{"type":"object"}`, true)
	card := b.htmx(http.MethodGet, "/tools/servers?seen="+url.QueryEscape(seen), nil).Body.String()
	// The notice names the list it compared with, so a page swaps it in only while it shows that
	// list (static/pages.js): a poll sent before the list was shown again answers for the old one.
	if !strings.Contains(card, `<div id="tools-news" hx-swap-oob="innerHTML"><p data-seen="`+seen+`">2 new tools to review.`) || !strings.Contains(card, `data-action="show-news"`) {
		t.Fatalf("no news of two new proposals:\n%s", card)
	}
}

// A stdio server whose command line changed shows it against the approved one, line by line.
func TestChangedCommandLineIsADiff(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	ctx := context.Background()
	first := f.pendingCommand("notes", "npx -y notes-server@1.0\nTOKEN=${secret:notes}")
	b.mustStepUp(a, auth.One(auth.ActionAddServer, first, ""))
	mustOK(t, "approve", b.approveCommand(first))
	if ok, err := f.commands.Check(ctx, "notes", "npx -y notes-server@2.0\nTOKEN=${secret:notes}", "sha256:notes2"); err != nil || ok {
		t.Fatalf("Check = %v, %v", ok, err)
	}
	f.servers.set(waiting("notes"))
	card := b.htmx(http.MethodGet, "/tools/servers", nil).Body.String()
	for _, want := range []string{
		"Its command line changed since you approved it",
		`<span class="line was"><span class="tag">was </span>npx -y notes-server@1.0</span>`,
		`<span class="line now"><span class="tag">now </span>npx -y notes-server@2.0</span>`,
		`<span class="line same"><span class="tag">    </span>TOKEN=${secret:notes}</span>`,
	} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
}
