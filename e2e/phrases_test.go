package e2e

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

// TestPhrasesLetVoiceFillEveryArgument: a scripted server offers a read-only add(a, b), which
// voice cannot fill by position, and its row says so. The owner writes phrases with a mistake:
// it is refused beside the box, naming the line, keeping what was written, without a passkey
// prompt. Corrected, the phrases save with exactly one passkey gesture, and the row says how to
// say the tool. Then "add 3 and 4" on the voice webhook runs it with both arguments bound, and
// /activity shows that turn with them.
func TestPhrasesLetVoiceFillEveryArgument(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "add", Description: "Adds two numbers.", ReadOnly: true, Echo: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)})
	var mu sync.Mutex
	var calls []string
	mcpServer.OnCall = func(name string, args json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, name+" "+string(args))
	}
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	authID := registerOwner(t, m, tb)
	add := waitTool(t, m, "tasks_add", "proposed")
	tb.Goto(m.URL("/tools"))
	r := row(tb, add.ID)
	check(t, button(r, "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled")
	check(t, tb.Expect.Locator(r.Locator(".say")).ToHaveText("Voice cannot fill its arguments: add a phrase"), "the row says voice cannot fill it")

	box := r.GetByRole(*playwright.AriaRoleTextbox, playwright.LocatorGetByRoleOptions{Name: "Phrases for tasks_add"})
	before := signCount(t, tb, authID)
	mistaken := "add {a} and {b}\nwhat is {a} plus {c}"
	check(t, box.Fill(mistaken), "write phrases")
	check(t, button(r, "Save phrases").Click(), "click Save phrases")
	errors := r.Locator(".line-errors")
	check(t, tb.Expect.Locator(errors).ToContainText("Line 2"), "the bad line is named")
	check(t, tb.Expect.Locator(errors).ToContainText("{c} is not a property of add (it takes a and b)"), "and what is wrong with it")
	check(t, tb.Expect.Locator(box).ToHaveValue(mistaken), "nothing is lost from the box")
	check(t, tb.Expect.Locator(box).ToHaveAttribute("aria-invalid", "true"), "the box is marked invalid")
	check(t, tb.Expect.Locator(box).ToBeFocused(), "focus is back in the box")
	if after := signCount(t, tb, authID); after != before {
		t.Fatalf("a refused line cost a passkey gesture: sign count %d → %d", before, after)
	}

	check(t, box.Fill("add {a} and {b}\n(what is | sum) {a} plus {b}"), "correct the phrases")
	check(t, button(r, "Save phrases").Click(), "click Save phrases again")
	check(t, tb.Expect.Locator(r.Locator(".phrases-feedback")).ToHaveText("Phrases saved."), "saved, said beside the button")
	check(t, tb.Expect.Locator(r.Locator(".say")).ToHaveText("Say: ‘add 3 and 4’ or ‘what is 3 plus 4’"), "the row says how to say it")
	check(t, tb.Expect.Locator(r.Locator(".line-errors")).ToHaveCount(0), "no line errors left")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Fatalf("sign count %d → %d: want exactly one passkey gesture for the save", before, after)
	}
	tb.Screenshot("tools-phrases")

	token := voiceToken(t, m)
	reply := say(t, m, token, "add 3 and 4")
	if reply.Outcome != "ran" || reply.Tool != "tasks_add" {
		t.Fatalf("add 3 and 4: %+v", reply)
	}
	mu.Lock()
	got := append([]string(nil), calls...)
	mu.Unlock()
	if len(got) != 1 || got[0] != `add {"a":3,"b":4}` {
		t.Fatalf("the server was called with %q, want add with a=3 and b=4", got)
	}

	waitForTurn(t, m, "add 3 and 4")
	tb.Goto(m.URL("/activity"))
	turn := tb.Page.Locator(`.entry[data-action="voice_turn"][data-outcome="ran"]`)
	check(t, tb.Expect.Locator(turn.Locator(".utterance")).ToHaveText("“add 3 and 4”"), "the turn's words")
	check(t, tb.Expect.Locator(turn.Locator("dl.args")).ToHaveText(regexpOf(`^\s*a\s*3\s*b\s*4\s*$`)), "the turn's bound arguments")
	check(t, tb.Expect.Locator(tb.Page.Locator(`.entry[data-action="phrases_set"]`)).ToContainText("add {a} and {b}"), "the save of the phrases")
}
