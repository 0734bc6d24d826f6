package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/agents/agentstest"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
	"maven/app/mcp/mcptest"
	"maven/app/pending"
	"maven/handlers"
)

// bindingOf reads the binding Approve's form carries from a call's page.
func bindingOf(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="binding" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no Approve form:\n%s", page)
	}
	return m[1]
}

// onlyCall is the one call the world holds.
func onlyCall(t *testing.T, w *agentstest.World) pending.Call {
	t.Helper()
	l, err := w.Pending.List(context.Background())
	if err != nil || len(l.Open) != 1 {
		t.Fatalf("open calls %+v (%v), want one", l.Open, err)
	}
	return l.Open[0]
}

// callWith calls name with args as an agent, and returns its text.
func callWith(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError
}

// TestACallIsApprovedOnItsPageWithAStepUpNamingIt: an agent's destructive call waits; /approvals
// lists it and its page shows the client, the server, the approved description, its arguments
// and the time left. Approve without a step-up asks for one naming the call's binding (the
// challenge is bound to it), with one it runs once and the page shows the result, and the
// agent's next identical call gets that result without running the tool again. A second
// approval, with a fresh step-up, runs nothing (docs/design.md#rule-30, #rule-31).
func TestACallIsApprovedOnItsPageWithAStepUpNamingIt(t *testing.T) {
	w, s := agentsWorld(t, agentstest.Options{})
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	cs, _ := af.connect(t, eras[0], "token-a")
	if text, isErr := callText(t, cs, "s_write"); !isErr || !strings.Contains(text, "asked for your approval on your phone") {
		t.Fatalf("the agent's call: %q", text)
	}
	c := onlyCall(t, w)
	id := itoa(c.ID)
	a := authtest.New(testOrigin)
	owner := af.signUp(a)

	list := owner.get("/approvals")
	mustOK(t, "/approvals", list)
	for _, want := range []string{`id="approval-` + id + `"`, `data-state="pending"`, `href="/approvals/` + id + `"`, "Home Assistant", `id="push"`} {
		if !strings.Contains(list.Body.String(), want) {
			t.Errorf("/approvals lacks %q", want)
		}
	}
	page := owner.get("/approvals/" + id)
	mustOK(t, "the call's page", page)
	body := page.Body.String()
	for _, want := range []string{"<dt>Asked by</dt><dd>Home Assistant</dd>", "<strong>s</strong>", "Writes.", "it can change things",
		"min", "left", "Approve with passkey", "Deny"} {
		if !strings.Contains(body, want) {
			t.Errorf("the call's page lacks %q", want)
		}
	}
	binding := bindingOf(t, body)
	if binding != pending.Binding(c) {
		t.Fatalf("the page's binding %s, the call's %s", binding, pending.Binding(c))
	}

	approve := url.Values{"binding": {binding}}
	r := owner.htmx(http.MethodPost, "/approvals/"+id+"/approve", approve)
	if r.Code != http.StatusForbidden || !strings.Contains(r.Header().Get("HX-Trigger"), `"action":"approve_call"`) ||
		!strings.Contains(r.Header().Get("HX-Trigger"), binding) {
		t.Fatalf("Approve without a step-up: %d %v", r.Code, r.Header())
	}
	begin := owner.beginStepUp(auth.One(auth.ActionApproveCall, c.ID, binding))
	if !strings.Contains(begin.Prompt, "“s_write” on MCP server “s”") || !strings.Contains(begin.Prompt, "for Home Assistant") {
		t.Errorf("the prompt: %q", begin.Prompt)
	}
	owner.mustStepUp(a, auth.One(auth.ActionApproveCall, c.ID, binding))
	r = owner.htmx(http.MethodPost, "/approvals/"+id+"/approve", approve)
	mustOK(t, "Approve", r)
	if b := r.Body.String(); !strings.Contains(b, `data-state="ran"`) || !strings.Contains(b, "wrote it") || !strings.Contains(b, "it ran once") {
		t.Errorf("the approved call:\n%s", b)
	}
	if text, isErr := callText(t, cs, "s_write"); isErr || text != "wrote it" {
		t.Errorf("the agent's call again: %q (error %v)", text, isErr)
	}
	if n := s.Calls("write"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}

	// A second approval: no passkey is asked for a call that ran, the grant was spent, and the
	// service refuses a proof for it all the same.
	if r := owner.postJSON("/step-up/begin", auth.One(auth.ActionApproveCall, c.ID, binding), nil); r.Code != http.StatusConflict ||
		!strings.Contains(r.Body.String(), "it ran") {
		t.Errorf("a step-up for the call that ran: %d %s", r.Code, r.Body.String())
	}
	if r := owner.htmx(http.MethodPost, "/approvals/"+id+"/approve", approve); r.Code != http.StatusForbidden {
		t.Errorf("a second approval with the spent grant: %d %s", r.Code, r.Body.String())
	}
	if _, err := w.Pending.Approve(context.Background(), c.ID, authtest.Proof(t, auth.One(auth.ActionApproveCall, c.ID, binding))); !errors.Is(err, pending.ErrNotPending) {
		t.Errorf("a second approval with a proof: %v", err)
	}
	if n := s.Calls("write"); n != 1 {
		t.Errorf("after a second approval the tool ran %d times", n)
	}
}

// TestAStepUpForAnotherCallOrAnotherShapeRunsNothing: a step-up naming one call does not
// approve another; a binding the page did not show (other arguments, or a call that changed)
// is refused before any passkey is asked for; a replayed assertion is refused; Deny needs no
// step-up and runs nothing.
func TestAStepUpForAnotherCallOrAnotherShapeRunsNothing(t *testing.T) {
	w, s := agentsWorld(t, agentstest.Options{}, mcptest.ToolSpec{Name: "remove", Description: "Removes a thing.", Text: "removed",
		InputSchema: []byte(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)})
	w.Enable(t, "s_remove")
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	cs, _ := af.connect(t, eras[0], "token-a")
	callWith(t, cs, "s_remove", map[string]any{"id": 1})
	callWith(t, cs, "s_remove", map[string]any{"id": 2})
	l, err := w.Pending.List(context.Background())
	if err != nil || len(l.Open) != 2 {
		t.Fatalf("open calls %+v (%v)", l.Open, err)
	}
	one, two := l.Open[0], l.Open[1]
	a := authtest.New(testOrigin)
	owner := af.signUp(a)

	// A step-up for call one, spent on call two.
	owner.mustStepUp(a, auth.One(auth.ActionApproveCall, one.ID, pending.Binding(one)))
	r := owner.htmx(http.MethodPost, "/approvals/"+itoa(two.ID)+"/approve", url.Values{"binding": {pending.Binding(one)}})
	if r.Code != http.StatusForbidden {
		t.Errorf("call two approved with call one's binding: %d %s", r.Code, r.Body.String())
	}
	// A page showing other arguments, or an out-of-date page: refused before the passkey.
	shifted := two
	shifted.Args = []byte(`{"id":1}`)
	if r := owner.postJSON("/step-up/begin", auth.One(auth.ActionApproveCall, two.ID, pending.Binding(shifted)), nil); r.Code != http.StatusConflict {
		t.Errorf("a step-up naming another shape of call two: %d %s", r.Code, r.Body.String())
	}
	// A replayed assertion: the step-up for call two, finished once, then again.
	replay, fin := owner.stepUp(a, auth.One(auth.ActionApproveCall, two.ID, pending.Binding(two)))
	mustOK(t, "the step-up for call two", fin)
	again := owner.do(http.MethodPost, "/step-up/finish", strings.NewReader(string(replay)), http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json"}})
	if again.Code == http.StatusOK {
		t.Errorf("a replayed assertion was accepted: %s", again.Body.String())
	}
	// Deny needs none, and the grant left over approves nothing once the call is denied.
	r = owner.htmx(http.MethodPost, "/approvals/"+itoa(two.ID)+"/deny", url.Values{})
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `data-state="denied"`) || !strings.Contains(r.Body.String(), "Denied. Nothing ran.") {
		t.Errorf("Deny: %d %s", r.Code, r.Body.String())
	}
	r = owner.htmx(http.MethodPost, "/approvals/"+itoa(two.ID)+"/approve", url.Values{"binding": {pending.Binding(two)}})
	if !strings.Contains(r.Body.String(), "Nothing was done: this call denied.") {
		t.Errorf("approving a denied call: %d %s", r.Code, r.Body.String())
	}
	if n := s.Calls("remove"); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
	if text, _ := callWith(t, cs, "s_remove", map[string]any{"id": 2}); !strings.Contains(text, "asked for your approval") {
		t.Errorf("the denied call asked again is a new call: %q", text)
	}
}

// TestTheCallsPageRevealsWhatItShows: an argument's invisible and confusable characters are
// spelled out (docs/design.md#rule-25), a long value is folded, the properties sent absent are
// named, and a call no notification reached says so on /approvals, on its page and on
// /activity, whose entries link to the call.
func TestTheCallsPageRevealsWhatItShows(t *testing.T) {
	w, _ := agentsWorld(t, agentstest.Options{}, mcptest.ToolSpec{Name: "note", Description: "Writes a note.", Text: "noted",
		InputSchema: []byte(`{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"},"tag":{"type":"string"}},"required":["title"]}`)})
	w.Enable(t, "s_note")
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	cs, _ := af.connect(t, eras[0], "token-a")
	long := strings.Repeat("a long body ", 40)
	text, _ := callWith(t, cs, "s_note", map[string]any{"title": "pay\u200bpal", "body": long})
	if !strings.Contains(text, "you may not know") {
		t.Errorf("no notifier is configured, and the agent hears: %q", text)
	}
	c := onlyCall(t, w)
	if _, err := w.Pending.AwaitNotified(context.Background(), c.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	owner := af.signUp(authtest.New(testOrigin))
	body := owner.get("/approvals/" + itoa(c.ID)).Body.String()
	for _, want := range []string{`<code class="value">pay<mark class="hidden-char"`, "<summary>A long value: show it</summary>", "Sent without: <code>tag</code>.",
		"No notification reached you for this call", "no browser is subscribed"} {
		if !strings.Contains(body, want) {
			t.Errorf("the call's page lacks %q", want)
		}
	}
	if list := owner.get("/approvals").Body.String(); !strings.Contains(list, "No notification reached you for this call.") {
		t.Errorf("/approvals does not say the call's notice reached nothing:\n%s", list)
	}
	feed := owner.get("/activity?kind=approvals").Body.String()
	for _, want := range []string{"Pending call", "asked for approval", "Not notified", `href="/approvals/` + itoa(c.ID) + `"`} {
		if !strings.Contains(feed, want) {
			t.Errorf("/activity lacks %q", want)
		}
	}
}

// TestTheListsPollSwapsOnlyWhatChanged: the list's poll answers 204 while it shows what the
// page shows, and the list once a call is decided; a call page's poll answers its status, and
// the whole call in its place once its state changed.
func TestTheListsPollSwapsOnlyWhatChanged(t *testing.T) {
	w, _ := agentsWorld(t, agentstest.Options{})
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	cs, _ := af.connect(t, eras[0], "token-a")
	callText(t, cs, "s_write")
	c := onlyCall(t, w)
	owner := af.signUp(authtest.New(testOrigin))
	page := owner.get("/approvals").Body.String()
	m := regexp.MustCompile(`hx-get="/approvals/list\?shown=([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the list does not poll:\n%s", page)
	}
	if r := owner.htmx(http.MethodGet, "/approvals/list?shown="+m[1], nil); r.Code != http.StatusNoContent {
		t.Errorf("the poll of an unchanged list: %d", r.Code)
	}
	status := fmt.Sprintf("/approvals/%d/status?shown=pending", c.ID)
	if r := owner.htmx(http.MethodGet, status, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `class="time-left"`) ||
		r.Header().Get("HX-Retarget") != "" {
		t.Errorf("the status of a waiting call: %d %v %s", r.Code, r.Header(), r.Body.String())
	}
	if _, err := w.Pending.Deny(context.Background(), c.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	if r := owner.htmx(http.MethodGet, "/approvals/list?shown="+m[1], nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "Nothing waits for your approval.") {
		t.Errorf("the poll once the call was denied: %d %s", r.Code, r.Body.String())
	}
	r := owner.htmx(http.MethodGet, status, nil)
	if r.Code != http.StatusOK || r.Header().Get("HX-Retarget") != fmt.Sprintf("#approval-%d", c.ID) || !strings.Contains(r.Body.String(), `data-state="denied"`) {
		t.Errorf("the status once denied: %d %v %s", r.Code, r.Header(), r.Body.String())
	}
	if r := af.browser().get("/approvals"); r.Code == http.StatusOK {
		t.Errorf("/approvals answered a signed-out browser")
	}
}

// TestHowARowIsConfirmedIsSetBehindAStepUp: an enabled destructive row offers its Confirm
// setting on /tools; saving "on my phone" needs a step-up naming the setting and the row's
// shape, and /activity records it (docs/design.md#rule-32). A read-only row offers none.
func TestHowARowIsConfirmedIsSetBehindAStepUp(t *testing.T) {
	w, _ := agentsWorld(t, agentstest.Options{})
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	row := w.Row(t, "s_write", func(allowlist.Tool) bool { return true })
	read := w.Row(t, "s_read", func(allowlist.Tool) bool { return true })
	a := authtest.New(testOrigin)
	owner := af.signUp(a)
	tools := owner.get("/tools").Body.String()
	if !strings.Contains(tools, `action="/tools/`+itoa(row.ID)+`/confirm"`) || strings.Contains(tools, `action="/tools/`+itoa(read.ID)+`/confirm"`) {
		t.Fatalf("the Confirm settings on /tools:\n%s", tools)
	}
	form := url.Values{"confirm": {"phone"}, "fingerprint": {row.ApprovalDigest()}}
	if r := owner.htmx(http.MethodPost, "/tools/"+itoa(row.ID)+"/confirm", form); r.Code != http.StatusForbidden ||
		!strings.Contains(r.Header().Get("HX-Trigger"), `"action":"set_confirm"`) {
		t.Fatalf("saving without a step-up: %d %v", r.Code, r.Header())
	}
	approval := auth.One(auth.ActionSetConfirm, row.ID, allowlist.ConfirmDigest(row, allowlist.ConfirmPhone))
	if p := owner.beginStepUp(approval).Prompt; !strings.Contains(p, "confirmed on my phone") {
		t.Errorf("the prompt: %q", p)
	}
	owner.mustStepUp(a, approval)
	r := owner.htmx(http.MethodPost, "/tools/"+itoa(row.ID)+"/confirm", form)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "Saved: voice calls of it are confirmed on my phone.") {
		t.Fatalf("saving with the step-up: %d %s", r.Code, r.Body.String())
	}
	if got := w.Row(t, "s_write", func(allowlist.Tool) bool { return true }); !got.OnPhone() {
		t.Errorf("the row is confirmed %q", got.Confirm)
	}
	if feed := owner.get("/activity?kind=changes").Body.String(); !strings.Contains(feed, "Confirmation set") || !strings.Contains(feed, "<dd>on my phone</dd>") {
		t.Errorf("/activity does not say how the row is confirmed now")
	}
}

// TestTheCallsPageSaysTheLimitsItIsWithin: a call of a row with the owner's limits in force
// shows them on its page, which the call is within (docs/design.md#rule-33).
func TestTheCallsPageSaysTheLimitsItIsWithin(t *testing.T) {
	w, _ := agentsWorld(t, agentstest.Options{}, mcptest.ToolSpec{Name: "set_temperature", Description: "Sets the thermostat.", Text: "set",
		InputSchema: []byte(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`)})
	w.Enable(t, "s_set_temperature")
	var set limits.Set
	if err := json.Unmarshal([]byte(`{"properties":{"temperature":{"minimum":17,"maximum":23}},"run_without_asking":false}`), &set); err != nil {
		t.Fatal(err)
	}
	w.SetLimits(t, "s_set_temperature", set)
	af := newAgentsFixture(t, w, handlers.AgentLimits{}, nil)
	cs, _ := af.connect(t, eras[0], "token-a")
	if text, isErr := callWith(t, cs, "s_set_temperature", map[string]any{"temperature": 20}); !isErr || !strings.Contains(text, "asked for your approval") {
		t.Fatalf("a call within the limits of a destructive row: %q (error %v)", text, isErr)
	}
	owner := af.signUp(authtest.New(testOrigin))
	body := owner.get("/approvals/" + itoa(onlyCall(t, w).ID)).Body.String()
	if want := `<dt>Your limits</dt><dd class="limits-line">temperature 17–23 (the arguments below are within them)</dd>`; !strings.Contains(body, want) {
		t.Errorf("the call's page lacks %q:\n%s", want, body)
	}
}
