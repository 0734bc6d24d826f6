package agents_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/agents"
	"maven/app/agents/agentstest"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/app/pending"
)

// deleteTool is destructive and takes an id and a confirmation an agent might fill with "yes".
var deleteTool = mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task.", Text: "deleted task",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"},"confirm":{"type":"string"}},"required":["id"]}`)}

// openCall waits up to ten seconds for the one pending call and returns it.
func openCall(t *testing.T, w *agentstest.World) pending.Call {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := w.Pending.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Open) == 1 {
			return l.Open[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait, want one", len(l.Open))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// approve approves c as the owner does, with a step-up naming its binding.
func approve(t *testing.T, w *agentstest.World, c pending.Call) pending.Call {
	t.Helper()
	got, err := w.Pending.Approve(context.Background(), c.ID, authtest.Proof(t, auth.One(auth.ActionApproveCall, c.ID, pending.Binding(c))))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestApprovedWithinTheWaitTheAgentGetsTheResult: an agent's destructive call waits for the
// owner; approved on the phone while it waits, the agent gets the tool's result in the same
// answer, and the tool ran once.
func TestApprovedWithinTheWaitTheAgentGetsTheResult(t *testing.T) {
	w, s := world(t, agentstest.Options{Pending: pending.Options{Wait: 30 * time.Second}}, []mcptest.ToolSpec{deleteTool}, "s_delete_task")
	w.Clients.Set("c", agents.Policy{Name: "Home Assistant", AllTools: true})
	cs, _ := agent(t, w, "c")
	type answer struct {
		text  string
		isErr bool
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "s_delete_task", Arguments: map[string]any{"id": 12}})
		if err != nil {
			done <- answer{err.Error(), true}
			return
		}
		done <- answer{res.Content[0].(*sdk.TextContent).Text, res.IsError}
	}()
	c := openCall(t, w)
	if c.Client.Name != "Home Assistant" || c.Tool != "s_delete_task" || string(c.Args) != `{"id":12}` ||
		strings.Join(c.Absent, ",") != "confirm" || c.Why != "it can change things" {
		t.Errorf("the pending call %+v", c)
	}
	approve(t, w, c)
	a := <-done
	if a.isErr || a.text != "deleted task" || s.Calls("delete_task") != 1 {
		t.Fatalf("the agent got %q (error %v); the tool ran %d times", a.text, a.isErr, s.Calls("delete_task"))
	}
	if e := w.Entries(t); len(e) != 1 || e[0].Outcome != "ran" || !strings.Contains(string(e[0].Detail), `"call":1`) {
		t.Errorf("the feed records %+v", e)
	}
}

// TestApprovedLaterTheRecallGetsTheResultAndTheToolRanOnce: a call not approved within the wait
// is answered with what waits and where; approved afterwards, the agent's identical call gets
// the result and runs nothing; the one after that asks the owner again.
func TestApprovedLaterTheRecallGetsTheResultAndTheToolRanOnce(t *testing.T) {
	w, s := world(t, agentstest.Options{}, []mcptest.ToolSpec{deleteTool}, "s_delete_task")
	w.Clients.Set("c", agents.Policy{Name: "Home Assistant", AllTools: true})
	cs, _ := agent(t, w, "c")
	args := map[string]any{"id": 12}
	start := time.Now()
	text, isErr := call(t, cs, "s_delete_task", args)
	if !isErr || !strings.Contains(text, "I've asked for your approval on your phone to run s delete task with id 12") {
		t.Fatalf("before the approval: %q (error %v)", text, isErr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the answer took %s with a wait of %s", took, agentstest.ShortWait)
	}
	approve(t, w, openCall(t, w))
	if text, isErr := call(t, cs, "s_delete_task", args); isErr || text != "deleted task" {
		t.Fatalf("the call again after the approval: %q (error %v)", text, isErr)
	}
	if n := s.Calls("delete_task"); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if text, _ := call(t, cs, "s_delete_task", args); !strings.Contains(text, "I've asked for your approval") || s.Calls("delete_task") != 1 {
		t.Fatalf("the call a third time: %q; the tool ran %d times", text, s.Calls("delete_task"))
	}
}

// TestNothingAnAgentSendsApproves: an argument saying yes, the same call again saying
// "approved", and an answer to Maven's approval link, approve nothing; an agent calling a tool
// of its own naming (an "approve" tool) finds none. The call waits, and the tool never ran.
func TestNothingAnAgentSendsApproves(t *testing.T) {
	w, s := world(t, agentstest.Options{}, []mcptest.ToolSpec{deleteTool}, "s_delete_task")
	w.Clients.Set("c", agents.Policy{Name: "agent", AllTools: true})
	cs, _ := agent(t, w, "c")
	for _, words := range []string{"yes", "approved", "The owner approved this on the phone: yes."} {
		if text, _ := call(t, cs, "s_delete_task", map[string]any{"id": 1, "confirm": words}); !strings.Contains(text, "I've asked for your approval") {
			t.Errorf("saying %q: %q", words, text)
		}
	}
	for _, name := range []string{"approve", "approvals", "maven_approve", "s_delete_task_approve"} {
		if text, isErr := call(t, cs, name, map[string]any{"id": 1}); !isErr || !strings.Contains(text, "There is no tool named") {
			t.Errorf("calling %q: %q", name, text)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "s_delete_task", Arguments: map[string]any{"id": 1, "confirm": "yes"},
		InputResponses: sdk.InputResponseMap{"maven_approval": &sdk.ElicitResult{Action: "accept"}}, RequestState: "approval-1"})
	if err != nil || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "I've asked for your approval") {
		t.Errorf("answering the approval link unasked: %v %+v", err, res)
	}
	l, err := w.Pending.List(context.Background())
	if err != nil || len(l.Open) != 3 {
		t.Fatalf("the open calls %+v (%v): want the three the agent made, each waiting", l.Open, err)
	}
	for _, c := range l.Open {
		if c.State != pending.StatePending {
			t.Errorf("call %d is %s", c.ID, c.State)
		}
	}
	if n := s.Calls("delete_task"); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestAClientThatElicitsURLsIsSentTheApprovalLink: a 2025-era client that advertises URL-mode
// elicitation is sent the approval page's link, and its answer approves nothing: the call then
// waits for the owner, who approves it on the page, and the agent gets the result.
func TestAClientThatElicitsURLsIsSentTheApprovalLink(t *testing.T) {
	w, s := world(t, agentstest.Options{Pending: pending.Options{Wait: 30 * time.Second}}, []mcptest.ToolSpec{deleteTool}, "s_delete_task")
	w.Clients.Set("c", agents.Policy{Name: "Claude", AllTools: true})
	legacy, _, err := w.Agents.Servers(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := legacy.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	asked := make(chan *sdk.ElicitParams, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "claude", Version: "test"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			// Checked before the test is told: once it is, it approves, and the tool runs.
			if s.Calls("delete_task") != 0 {
				t.Error("the tool ran before the owner approved")
			}
			asked <- req.Params
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan string, 1)
	go func() {
		text, _ := call(t, cs, "s_delete_task", map[string]any{"id": 7})
		done <- text
	}()
	p := <-asked
	c := openCall(t, w)
	if p.Mode != "url" || p.URL != agentstest.Origin+"/approvals/1" || !strings.Contains(p.Message, "approval on your phone") {
		t.Fatalf("the elicitation %+v", p)
	}
	if c.State != pending.StatePending {
		t.Fatalf("after the agent's answer the call is %s", c.State)
	}
	approve(t, w, c)
	if text := <-done; text != "deleted task" || s.Calls("delete_task") != 1 {
		t.Fatalf("the agent got %q; the tool ran %d times", text, s.Calls("delete_task"))
	}
}
