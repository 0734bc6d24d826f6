package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/playwright-community/playwright-go"

	"maven/app/mcp/mcptest"
)

// agentCall calls tool as an agent does and returns the text of its answer and whether it is a
// tool error.
func agentCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}

// TestLimitsSavedOnTheToolsPageHoldAgents: the owner opens an enabled destructive row's details
// and limits temperature with a range wider than the server's own: it is refused beside the
// field, keeping what was typed, without a passkey prompt. Corrected, the limits save with one
// passkey gesture and the row says "limits: temperature 17–23". An agent (go-sdk's client, with a
// static client's token) is shown the narrowed schema; its call outside the limits is a tool
// error naming the limit and never reaches the server, and /activity names the limit; within
// them it needs the owner until the owner ticks "Within these limits, run without asking",
// which the row then says plainly, and then it runs. No page reports a CSP violation; the page
// passes axe at 1280 and 390 px, in light and dark mode, and nothing overflows a phone's width.
func TestLimitsSavedOnTheToolsPageHoldAgents(t *testing.T) {
	t.Parallel()
	mcpServer := startScripted(t, mcptest.ToolSpec{Name: "set_temperature", Description: "Sets the thermostat.", Echo: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number","minimum":5,"maximum":35},` +
			`"mode":{"type":"string","enum":["heat","cool","off"]},"room":{"type":"string"}},"required":["temperature"]}`)})
	m := startMaven(t, mavenOptions{Config: configFor("5m", mcpServer.URL)})
	tb := newBrowser(t)
	reportCSP(t, tb)
	authID := registerOwner(t, m, tb)
	thermo := waitTool(t, m, "tasks_set_temperature", "proposed")
	tb.Goto(m.URL("/tools"))
	r := row(tb, thermo.ID)
	check(t, button(r, "Enable").Click(), "click Enable")
	check(t, tb.Expect.Locator(r).ToHaveAttribute("data-state", "enabled"), "row enabled")

	check(t, r.Locator("details.more > summary").Click(), "open the details")
	temp := r.GetByRole(*playwright.AriaRoleGroup, playwright.LocatorGetByRoleOptions{Name: regexpOf(`^temperature`)})
	byLabel := func(in playwright.Locator, label string) playwright.Locator {
		return in.GetByLabel(label, playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(true)})
	}
	_, err := byLabel(temp, "Limit of temperature").SelectOption(playwright.SelectOptionValues{Values: &[]string{"range"}})
	check(t, err, "choose a range")
	minimum, maximum := byLabel(temp, "Minimum of temperature"), byLabel(temp, "Maximum of temperature")
	check(t, tb.Expect.Locator(minimum).ToBeVisible(), "the range's fields appear")
	check(t, tb.Expect.Locator(byLabel(temp, "Pattern of temperature")).ToHaveCount(0), "a number offers no pattern")
	check(t, tb.Expect.Locator(byLabel(temp, "Value of temperature")).Not().ToBeVisible(), "nor the fixed value's field")
	check(t, minimum.Fill("0"), "type a minimum below the server's")
	check(t, maximum.Fill("23"), "type the maximum")
	before := signCount(t, tb, authID)
	check(t, button(r, "Save limits").Click(), "click Save limits")
	check(t, tb.Expect.Locator(temp.Locator(".limit-error")).ToHaveText("the server's own range is 5–35: a limit may only narrow it"), "the reason beside the field")
	check(t, tb.Expect.Locator(minimum).ToHaveValue("0"), "what was typed is kept")
	check(t, tb.Expect.Locator(maximum).ToHaveValue("23"), "all of it")
	check(t, tb.Expect.Locator(minimum).ToHaveAttribute("aria-invalid", "true"), "the field is marked invalid")
	check(t, tb.Expect.Locator(minimum).ToBeFocused(), "focus is on the field at fault")
	if after := signCount(t, tb, authID); after != before {
		t.Fatalf("refused limits cost a passkey gesture: sign count %d → %d", before, after)
	}
	checkAxe(t, tb, "tools with limits refused")

	check(t, minimum.Fill("17"), "correct the minimum")
	check(t, button(r, "Save limits").Click(), "click Save limits again")
	check(t, tb.Expect.Locator(r.Locator(".limits-feedback")).ToHaveText("Limits saved."), "saved, said beside the button")
	check(t, tb.Expect.Locator(r.Locator(".limits-line")).ToHaveText("limits: temperature 17–23"), "the row says its limits")
	if after := signCount(t, tb, authID); after != before+1 {
		t.Fatalf("sign count %d → %d: want exactly one passkey gesture for the save", before, after)
	}
	check(t, tb.Expect.Locator(r.GetByLabel("Within these limits, run without asking")).Not().ToBeChecked(), "run without asking is off")

	token := strings.TrimSpace(m.CLI("client", "add", "thermostat", "--tools", thermo.Name))
	ctx := context.Background()
	cs := connectAgent(t, m, token)
	list, err := cs.ListTools(ctx, nil)
	check(t, err, "list the tools")
	shown, _ := json.Marshal(list.Tools[0].InputSchema)
	if !strings.Contains(string(shown), `"maximum":23`) || !strings.Contains(string(shown), `"minimum":17`) {
		t.Errorf("the agent is shown %s, not the schema narrowed by the limits", shown)
	}
	text, isErr := agentCall(t, cs, thermo.Name, map[string]any{"temperature": 30})
	if !isErr || !strings.Contains(text, "temperature must be between 17 and 23 (the owner's limit), not 30") {
		t.Errorf("a call outside the limits answers %q (error %v)", text, isErr)
	}
	if text, isErr := agentCall(t, cs, thermo.Name, map[string]any{"temperature": 20}); !isErr || !strings.Contains(text, "I've asked for your approval on your phone") {
		t.Errorf("a call within them, not yet let run unasked: %q (error %v)", text, isErr)
	}
	if n := mcpServer.Calls("set_temperature"); n != 0 {
		t.Fatalf("the server was called %d times", n)
	}

	check(t, r.GetByLabel("Within these limits, run without asking").Check(), "tick run without asking")
	check(t, button(r, "Save limits").Click(), "save again")
	check(t, tb.Expect.Locator(r.Locator(".limits-feedback")).ToHaveText("Limits saved."), "saved")
	check(t, tb.Expect.Locator(r.Locator(".limits-line.unasked")).ToHaveText("Within these limits it runs without asking you."), "the row says so plainly")
	// Last on this page: a screenshot leaves style="" on its inputs, which htmx's next swap of
	// the row would copy, a CSP violation of the test's own making.
	tb.Screenshot("tools-limits")
	waitFor(t, pollTimeout, "the call within the limits to run", func() bool {
		text, isErr := agentCall(t, cs, thermo.Name, map[string]any{"temperature": 20})
		return !isErr && text == `{"temperature":20}`
	})
	if text, isErr := agentCall(t, cs, thermo.Name, map[string]any{"temperature": 24}); !isErr || !strings.Contains(text, "temperature must be between 17 and 23") {
		t.Errorf("outside the limits that run unasked: %q (error %v)", text, isErr)
	}
	if n := mcpServer.Calls("set_temperature"); n != 1 {
		t.Errorf("the server was called %d times, want once", n)
	}

	// A call's entry is written just after its answer (activity.Batcher), so the page is read
	// again until the last refusal is on it (CI once loaded it a moment before).
	refused := tb.Page.Locator(`.entry[data-action="agent_call"][data-outcome="outside_limits"]`)
	waitFor(t, pollTimeout, "the refusal of 24 on /activity", func() bool {
		tb.Goto(m.URL("/activity"))
		text, err := refused.First().TextContent()
		return err == nil && strings.Contains(text, "not 24")
	})
	check(t, tb.Expect.Locator(refused.First()).ToContainText("temperature must be between 17 and 23 (the owner's limit), not 24"), "the refused call names the limit")
	check(t, tb.Expect.Locator(tb.Page.Locator(`.entry[data-action="limits_set"]`).First()).ToContainText("temperature 17–23; calls within them run without asking"), "the save of the limits")
	checkAxe(t, tb, "activity with a call outside the limits")
	if got := cspReports(tb); len(got) > 0 {
		t.Fatalf("CSP violations:\n%s", strings.Join(got, "\n"))
	}

	for _, dev := range []device{phone, phone.inDark(), desktop.inDark()} {
		other := newBrowser(t, dev)
		tb.shareSession(other, m.BaseURL)
		other.Goto(m.URL("/tools"))
		or := row(other, thermo.ID)
		check(t, or.Locator("details.more > summary").Click(), "open the details on "+dev.name)
		check(t, other.Expect.Locator(or.Locator(".limits")).ToBeVisible(), "the form on "+dev.name)
		var width int
		evalJSON(t, other.Page, `() => document.documentElement.scrollWidth`, nil, &width)
		if width > dev.width {
			t.Errorf("on %s the page is %d px wide, over the viewport's %d", dev.name, width, dev.width)
		}
		other.Screenshot("tools-limits-" + dev.name)
		checkAxe(t, other, dev.name+" tools with limits")
	}
}
