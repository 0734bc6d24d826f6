package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/mcp/mcptest"
)

// deleteTaskSpec is the destructive tool an agent asks for in these tests: it deletes a task
// by id, and the scripted server counts its calls.
var deleteTaskSpec = mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task.", Text: "deleted",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string"}},"required":["id"]}`)}

// approvalsJourney is a daemon whose one server "tasks" offers deleteTaskSpec, enabled by the
// owner, with the agents block's ttl; an agent connected with a static token; and the owner's
// browser on dev.
type approvalsJourney struct {
	m     *mavenProc
	up    *scriptedHTTP
	owner *tab
	agent *sdk.ClientSession
}

func startApprovalsJourney(t *testing.T, dev device, ttl string) approvalsJourney {
	t.Helper()
	j := approvalsJourney{up: startScripted(t, deleteTaskSpec)}
	cfg, err := json.Marshal(map[string]any{
		"refresh_interval": "1s",
		"mcpServers":       map[string]any{"tasks": map[string]any{"type": "http", "url": j.up.URL}},
		// The agent is answered at once, as an owner who is not quick: these tests approve later.
		"agents": map[string]any{"approval_wait": "1s", "approval_ttl": ttl},
	})
	check(t, err, "the config")
	j.m = startMaven(t, mavenOptions{Config: string(cfg)})
	j.owner = newBrowser(t, dev)
	registerOwner(t, j.m, j.owner)
	del := waitTool(t, j.m, "tasks_delete_task", "proposed")
	j.owner.Goto(j.m.URL("/tools"))
	check(t, button(row(j.owner, del.ID), "Enable").Click(), "enable delete_task")
	check(t, j.owner.Expect.Locator(row(j.owner, del.ID)).ToHaveAttribute("data-state", "enabled"), "enabled")
	j.agent = connectAgent(t, j.m, strings.TrimSpace(j.m.CLI("client", "add", "kitchen")))
	return j
}

// bearerTransport sends an agent's static token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectAgent connects go-sdk's client to the daemon's /mcp with a static token.
func connectAgent(t *testing.T, m *mavenProc, token string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-agent", Version: "test"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: m.URL("/mcp"),
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	check(t, err, "connect the agent")
	t.Cleanup(func() { cs.Close() })
	return cs
}

// deleteTask has the agent call tasks_delete_task with id, and returns what it was told.
func (j approvalsJourney) deleteTask(t *testing.T, id int) string {
	t.Helper()
	res, err := j.agent.CallTool(context.Background(), &sdk.CallToolParams{Name: "tasks_delete_task", Arguments: map[string]any{"id": id}})
	check(t, err, "the agent's call")
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// approvalJSON is one call of `maven approvals --json`.
type approvalJSON struct {
	ID     int64  `json:"id"`
	State  string `json:"state"`
	Tool   string `json:"tool"`
	Client string `json:"client"`
	Args   any    `json:"args"`
	Reason string `json:"reason"`
	URL    string `json:"url"`
}

// approvals is `maven approvals --json`, by the id argument of each call.
func approvals(t *testing.T, m *mavenProc) map[int]approvalJSON {
	t.Helper()
	var calls []approvalJSON
	out := m.CLI("approvals", "--json")
	if err := json.Unmarshal([]byte(out), &calls); err != nil {
		t.Fatalf("maven approvals --json: %v\n%s", err, out)
	}
	byArg := map[int]approvalJSON{}
	for _, c := range calls {
		if args, ok := c.Args.(map[string]any); ok {
			if id, ok := args["id"].(float64); ok {
				byArg[int(id)] = c
			}
		}
	}
	return byArg
}

// waitCall waits for the call with argument id to reach state, and returns it.
func waitCall(t *testing.T, m *mavenProc, id int, state string) approvalJSON {
	t.Helper()
	var c approvalJSON
	waitFor(t, pollTimeout, "the call of task "+itoa(int64(id))+" "+state, func() bool {
		c = approvals(t, m)[id]
		return c.State == state
	})
	return c
}

// bindingOn reads the binding Approve's form carries on the call's page, as the page shows it.
func bindingOn(t *testing.T, tb *tab, m *mavenProc, call int64) string {
	t.Helper()
	tb.Goto(m.URL("/approvals/" + itoa(call)))
	v, err := tb.Page.Locator(`input[name="binding"]`).GetAttribute("value")
	check(t, err, "the binding of call "+itoa(call))
	if !strings.HasPrefix(v, "sha256:") {
		t.Fatalf("call %d's binding %q", call, v)
	}
	return v
}

// stepUpResult is what approveStepUpFromPage did: the finish's status, and with replay a second
// finish of the same assertion.
type stepUpResult struct {
	Begin  int    `json:"begin"`
	Status int    `json:"status"`
	Replay int    `json:"replay"`
	Error  string `json:"error"`
}

// approveStepUpFromPage performs, from the page, a step-up approving the call with that
// binding (begin, the virtual passkey, finish) as maven.js does; with replay it posts the same
// assertion to finish a second time.
const approveStepUpFromPage = `async ([id, binding, replay]) => {
	const toB64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
		.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
	const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")
		+ "=".repeat((4 - s.length % 4) % 4)), (c) => c.charCodeAt(0));
	const post = (url, body) => fetch(url, {method: "POST", credentials: "same-origin",
		headers: {"Content-Type": "application/json", "Accept": "application/json"},
		body: body, signal: AbortSignal.timeout(10000)});
	const begin = await post("/step-up/begin", JSON.stringify({action: "approve_call", items: [{id: id, fingerprint: binding}]}));
	if (!begin.ok) return {begin: begin.status};
	const pk = (await begin.json()).options.publicKey;
	pk.challenge = fromB64u(pk.challenge);
	pk.allowCredentials = (pk.allowCredentials || []).map((c) => ({...c, id: fromB64u(c.id)}));
	let cred;
	try {
		cred = await navigator.credentials.get({publicKey: pk, signal: AbortSignal.timeout(10000)});
	} catch (e) {
		return {begin: 200, error: e.name + ": " + e.message};
	}
	const r = cred.response;
	const body = JSON.stringify({credential: {
		id: cred.id, rawId: toB64u(cred.rawId), type: cred.type,
		response: {
			clientDataJSON: toB64u(r.clientDataJSON),
			authenticatorData: toB64u(r.authenticatorData),
			signature: toB64u(r.signature),
			userHandle: r.userHandle ? toB64u(r.userHandle) : undefined,
		},
		clientExtensionResults: {},
	}});
	const finish = await post("/step-up/finish", body);
	const again = replay ? (await post("/step-up/finish", body)).status : 0;
	return {begin: 200, status: finish.status, replay: again};
}`

// approveStepUp performs approveStepUpFromPage and fails unless the step-up succeeded.
func approveStepUp(t *testing.T, tb *tab, call int64, binding string, replay bool) stepUpResult {
	t.Helper()
	var res stepUpResult
	evalJSON(t, tb.Page, approveStepUpFromPage, []any{int(call), binding, replay}, &res)
	if res.Error != "" || res.Status != http.StatusOK {
		t.Fatalf("the step-up approving call %d: %+v", call, res)
	}
	return res
}

// approveFrom posts Approve of call from the page with binding, as its form does.
func approveFrom(t *testing.T, tb *tab, call int64, binding string) fetchResult {
	t.Helper()
	return postFrom(t, tb, "/approvals/"+itoa(call)+"/approve", map[string]any{"binding": binding})
}

// TestApproveAnAgentsCallOnAPhone: an agent asks to delete task 12 and is answered within the
// wait with what waits and where; on a 390 px phone in dark mode, /approvals lists the call
// with the notifications card, and its page shows the client, the server, the description
// and the argument; Approve with passkey is one passkey gesture, after which the page shows
// the result; the agent's same call then gets the result, and the tool ran once. Both pages
// are axe-clean and fit the screen (docs/design.md#rule-30, #rule-31).
func TestApproveAnAgentsCallOnAPhone(t *testing.T) {
	t.Parallel()
	j := startApprovalsJourney(t, phone.inDark(), "5m")
	m, owner := j.m, j.owner
	said := j.deleteTask(t, 12)
	if !strings.Contains(said, "I've asked for your approval on your phone to run tasks delete task with id 12") {
		t.Fatalf("the agent was told %q", said)
	}
	call := waitCall(t, m, 12, "pending")
	if call.Client != "kitchen" || !strings.HasSuffix(call.URL, "/approvals/"+itoa(call.ID)) {
		t.Errorf("maven approvals: %+v", call)
	}

	owner.Goto(m.URL("/approvals"))
	item := owner.Page.Locator("#approval-" + itoa(call.ID))
	check(t, owner.Expect.Locator(item).ToHaveAttribute("data-state", "pending"), "the call on /approvals")
	check(t, owner.Expect.Locator(owner.Page.Locator("#push h2")).ToHaveText("Notifications"), "the notifications card")
	checkAxe(t, owner, "phone dark approvals")
	assertNoSidewaysOverflow(t, owner, phone.width)

	check(t, item.Locator("h3 a").Click(), "open the call")
	card := owner.Page.Locator("#approval-" + itoa(call.ID))
	check(t, owner.Expect.Locator(card.Locator(".facts")).ToContainText("kitchen"), "the client")
	check(t, owner.Expect.Locator(card.Locator(".facts")).ToContainText("Deletes a task."), "the approved description")
	check(t, owner.Expect.Locator(card.Locator(".args")).ToContainText("12"), "the argument")
	check(t, owner.Expect.Locator(card.Locator(".absent")).ToContainText("note"), "what is sent absent")
	check(t, owner.Expect.Locator(card.Locator(".time-left")).ToContainText("left"), "the time left")
	checkAxe(t, owner, "phone dark approval")
	assertNoSidewaysOverflow(t, owner, phone.width)
	if n := j.up.Calls("delete_task"); n != 0 {
		t.Fatalf("the tool ran %d times before the approval", n)
	}

	check(t, button(card, "Approve with passkey").Click(), "approve")
	check(t, owner.Expect.Locator(card).ToHaveAttribute("data-state", "ran"), "it ran")
	check(t, owner.Expect.Locator(card.Locator("pre.result")).ToHaveText("deleted"), "the result on the page")
	check(t, owner.Expect.Locator(card.Locator("[data-focus]")).ToBeFocused(), "what the approval did, focused")
	owner.Screenshot("approved")
	if said := j.deleteTask(t, 12); said != "deleted" {
		t.Errorf("the agent's same call after the approval: %q", said)
	}
	if n := j.up.Calls("delete_task"); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	owner.Goto(m.URL("/approvals"))
	check(t, owner.Expect.Locator(owner.Page.Locator(".recent #approval-"+itoa(call.ID))).ToHaveAttribute("data-state", "ran"), "among the recent calls")
}

// TestWhatRunsNothingOnThePhone: a step-up from another pending call, a replayed assertion, a
// second approval of a call that ran, and an approval after the call's row was redefined each
// run nothing: the upstream server counts one call, the one approval in time.
func TestWhatRunsNothingOnThePhone(t *testing.T) {
	t.Parallel()
	j := startApprovalsJourney(t, phone, "5m")
	m, owner := j.m, j.owner
	for _, id := range []int{1, 2, 3} {
		j.deleteTask(t, id)
	}
	one, two, three := waitCall(t, m, 1, "pending"), waitCall(t, m, 2, "pending"), waitCall(t, m, 3, "pending")
	bindOne, bindTwo, bindThree := bindingOn(t, owner, m, one.ID), bindingOn(t, owner, m, two.ID), bindingOn(t, owner, m, three.ID)

	// A step-up from another pending call: approving call one does not approve call two.
	approveStepUp(t, owner, one.ID, bindOne, false)
	if res := approveFrom(t, owner, two.ID, bindTwo); res.Status != http.StatusForbidden {
		t.Errorf("call two with call one's step-up: %+v", res)
	}
	if res := approveFrom(t, owner, two.ID, bindOne); res.Status != http.StatusForbidden {
		t.Errorf("call two naming call one's binding: %+v", res)
	}
	if n := j.up.Calls("delete_task"); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}

	// A replayed assertion is refused; the one step-up approves call two once, and a second
	// approval of it (a replay, a post without a grant) runs nothing.
	if res := approveStepUp(t, owner, two.ID, bindTwo, true); res.Replay == http.StatusOK {
		t.Errorf("a replayed assertion was accepted: %+v", res)
	}
	if res := approveFrom(t, owner, two.ID, bindTwo); res.Type != "opaqueredirect" {
		t.Fatalf("approve call two: %+v", res)
	}
	waitCall(t, m, 2, "ran")
	var res stepUpResult
	evalJSON(t, owner.Page, approveStepUpFromPage, []any{int(two.ID), bindTwo, false}, &res)
	if res.Begin != http.StatusConflict {
		t.Errorf("a step-up for the call that ran: %+v", res)
	}
	if res := approveFrom(t, owner, two.ID, bindTwo); res.Status != http.StatusForbidden {
		t.Errorf("a second approval of call two: %+v", res)
	}
	if n := j.up.Calls("delete_task"); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}

	// A step-up for call three, then its server redefines the tool: the call is void, and the
	// grant runs nothing.
	approveStepUp(t, owner, three.ID, bindThree, false)
	j.up.Redefine(mcptest.ToolSpec{Name: "delete_task", Description: "Deletes every task.", Text: "all gone", InputSchema: deleteTaskSpec.InputSchema})
	waitTool(t, m, "tasks_delete_task", "proposed")
	if c := waitCall(t, m, 3, "void"); !strings.Contains(c.Reason, "redefined") {
		t.Errorf("voided because %q", c.Reason)
	}
	// The grant is spent, and the answer is the call's page, which says what became of it.
	if res := approveFrom(t, owner, three.ID, bindThree); res.Type != "opaqueredirect" {
		t.Errorf("call three after the redefinition: %+v", res)
	}
	owner.Goto(m.URL("/approvals/" + itoa(three.ID)))
	check(t, owner.Expect.Locator(owner.Page.Locator("#approval-"+itoa(three.ID))).ToHaveAttribute("data-state", "void"), "void on its page")
	check(t, owner.Expect.Locator(pageButton(owner.Page, "Approve with passkey")).ToHaveCount(0), "with nothing to approve")
	checkAxe(t, owner, "phone, a void call's page")
	if n := j.up.Calls("delete_task"); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// TestAnApprovalAfterTheExpiryRunsNothing: a step-up made while the call waited, spent after
// it expired, runs nothing; the call's page says it expired, and the agent asking again is
// asked for a new approval.
func TestAnApprovalAfterTheExpiryRunsNothing(t *testing.T) {
	t.Parallel()
	j := startApprovalsJourney(t, phone, "10s")
	m, owner := j.m, j.owner
	j.deleteTask(t, 7)
	call := waitCall(t, m, 7, "pending")
	binding := bindingOn(t, owner, m, call.ID)
	approveStepUp(t, owner, call.ID, binding, false)
	waitFor(t, pollTimeout, "the call's expiry", func() bool { return approvals(t, m)[7].State == "expired" })
	// The grant is spent, and the answer is the call's page, which says it expired.
	if res := approveFrom(t, owner, call.ID, binding); res.Type != "opaqueredirect" {
		t.Errorf("an approval after the expiry: %+v", res)
	}
	owner.Goto(m.URL("/approvals/" + itoa(call.ID)))
	check(t, owner.Expect.Locator(owner.Page.Locator("#approval-"+itoa(call.ID))).ToHaveAttribute("data-state", "expired"), "expired on its page")
	if said := j.deleteTask(t, 7); !strings.Contains(said, "I've asked for your approval") {
		t.Errorf("the agent asking again: %q", said)
	}
	if n := j.up.Calls("delete_task"); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
}
