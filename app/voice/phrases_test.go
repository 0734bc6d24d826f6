package voice_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/app/voice"
	"maven/db"
)

const (
	sumSchema   = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`
	eventSchema = `{"type":"object","properties":{"title":{"type":"string"},"hour":{"type":"integer"},
		"loud":{"type":"boolean"},"notes":{"type":"string"},"tags":{"type":"array"}},"required":["title","hour"]}`
)

// addPhrased enables an MCP row and saves phrases for it, as the owner does on /tools.
func (w *world) addPhrased(t *testing.T, server, tool, schema string, readOnly bool, lines ...string) allowlist.Tool {
	t.Helper()
	w.enable(t, allowlist.Proposal{Name: server + "_" + tool, Cmd: []string{"mcp", server, tool}, Scope: allowlist.MCPScope(server),
		ReadOnly: readOnly, Destructive: !readOnly, InputSchema: json.RawMessage(schema), Fingerprint: "sha256:" + tool,
		Declared: "{}", Source: allowlist.SourceDiscovery})
	row, err := w.svc.Get(context.Background(), w.ids[server+"_"+tool])
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		if _, err := w.phrases.Save(context.Background(), row.ID, strings.Join(lines, "\n"),
			authtest.Proof(t, auth.One(auth.ActionSetPhrases, row.ID, row.ApprovalDigest()))); err != nil {
			t.Fatal(err)
		}
	}
	return row
}

func TestAPhraseBindsSeveralArguments(t *testing.T) {
	for _, c := range []struct{ said, ran string }{
		{"add 3 and 4", `everything_get-sum {"a":3,"b":4}`},
		{"Hey Maven, please add three point five and twenty.", `everything_get-sum {"a":3.5,"b":20}`},
		{"what is -2 plus one hundred", `everything_get-sum {"a":-2,"b":100}`},
	} {
		t.Run(c.said, func(t *testing.T) {
			w := newWorld(t)
			w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a} and {b}", "what is {a} plus {b}")
			r := w.turn(c.said)
			if r.Outcome != voice.OutcomeRan || w.runner.count() != 1 || w.runner.calls[0] != c.ran {
				t.Fatalf("%s %q, ran %v", r.Outcome, r.Speech, w.runner.calls)
			}
		})
	}
}

func TestASlotThatDoesNotFitIsAskedAgain(t *testing.T) {
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a} and {b}")
	r := w.turn("add 3 and banana")
	if r.Outcome != voice.OutcomeAsk || r.Speech != "B must be a number. What b? Say a number." {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("a lot"); r.Outcome != voice.OutcomeAsk || !strings.HasPrefix(r.Speech, "B must be a number.") {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("seven"); r.Outcome != voice.OutcomeRan || w.runner.calls[0] != `everything_get-sum {"a":3,"b":7}` {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
	// A value is asked for three times at most.
	if r = w.turn("add pears and apples"); r.Speech != "A must be a number. What a? Say a number." {
		t.Fatalf("%+v", r)
	}
	w.turn("pears")
	w.turn("apples")
	if r = w.turn("plums"); r.Outcome != voice.OutcomeCancelled || !strings.Contains(r.Speech, "nothing ran") || w.runner.count() != 1 {
		t.Fatalf("%+v", r)
	}
}

// TestNoAnswersAYesOrNoQuestion: asked for a boolean, "no" is the value false, not a
// cancellation; "cancel" still ends the turn.
func TestNoAnswersAYesOrNoQuestion(t *testing.T) {
	const schema = `{"type":"object","properties":{"title":{"type":"string"},"loud":{"type":"boolean"}},"required":["title","loud"]}`
	w := newWorld(t)
	w.addPhrased(t, "notes", "remind", schema, true, "remind me to {title}")
	if r := w.turn("remind me to water the plants"); r.Outcome != voice.OutcomeAsk {
		t.Fatalf("%+v", r)
	}
	if r := w.turn("no"); r.Outcome != voice.OutcomeRan || w.runner.count() != 1 || w.runner.calls[0] != `notes_remind {"loud":false,"title":"water the plants"}` {
		t.Fatalf("%+v, ran %v", r, w.runner.calls)
	}
	w.turn("remind me to call mum")
	if r := w.turn("cancel"); r.Outcome != voice.OutcomeCancelled || w.runner.count() != 1 {
		t.Fatalf("%+v, ran %v", r, w.runner.calls)
	}
}

// TestAnAskRecordsTheArgumentsAsAsked: the activity entry of a turn that asked for a missing
// slot keeps the arguments it had then, although the next turn fills the slot before the feed
// writes the entry.
func TestAnAskRecordsTheArgumentsAsAsked(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a}")
	if r := w.turn("add 3"); r.Outcome != voice.OutcomeAsk {
		t.Fatalf("%+v", r)
	}
	if r := w.turn("four"); r.Outcome != voice.OutcomeRan {
		t.Fatalf("%+v", r)
	}
	p, err := w.feed.Query(ctx, activity.Filter{Action: activity.ActionVoiceTurn})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, e := range p.Entries {
		var d struct{ Args json.RawMessage }
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		args[e.Outcome] = string(d.Args)
	}
	if args["ask"] != `{"a":3}` || args["ran"] != `{"a":3,"b":4}` {
		t.Fatalf("recorded arguments %v", args)
	}
}

func TestAMutatingPhraseConfirmsWithEveryArgumentReadBack(t *testing.T) {
	w := newWorld(t)
	w.addPhrased(t, "calendar", "create_event", eventSchema, false,
		"new [loud] event {title} at {hour} [loud {loud}]", "remind me to {title}")
	r := w.turn("new event Dentist, Dr. Who at nine loud yes")
	want := "Run create event on calendar with hour 9, loud yes and title Dentist, Dr. Who? It goes without notes or tags. Say yes to confirm."
	if r.Outcome != voice.OutcomeConfirm || r.Speech != want {
		t.Fatalf("got  %q\nwant %q", r.Speech, want)
	}
	if r = w.turn("yes"); r.Outcome != voice.OutcomeRan || w.runner.calls[0] != `calendar_create_event {"hour":9,"loud":true,"title":"Dentist, Dr. Who"}` {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
	// A phrase without a required property asks for it, then confirms.
	if r = w.turn("remind me to call mum"); r.Outcome != voice.OutcomeAsk || r.Speech != "What hour? Say a number." {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("eleven"); r.Outcome != voice.OutcomeConfirm || !strings.Contains(r.Speech, "with hour 11 and title call mum? It goes without loud, notes or tags.") {
		t.Fatalf("%+v", r)
	}
	if r = w.turn("no"); r.Outcome != voice.OutcomeCancelled || w.runner.count() != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestPhrasesAreVoidAfterARedefinition(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	row := w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a} and {b}")
	if r := w.turn("add 1 and 2"); r.Outcome != voice.OutcomeRan {
		t.Fatalf("%+v", r)
	}
	err := w.svc.Update(ctx, func(tx *allowlist.Tx) error {
		_, err := tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{Fingerprint: "sha256:redefined", Declared: "{}",
			InputSchema: json.RawMessage(sumSchema), ReadOnly: true, ChangedFields: []string{"description"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.enable(t, allowlist.Proposal{Name: row.Name, Cmd: row.Cmd, Scope: row.Scope, ReadOnly: true, InputSchema: json.RawMessage(sumSchema),
		Fingerprint: "sha256:redefined", Declared: "{}", Source: allowlist.SourceDiscovery})
	if r := w.turn("add 1 and 2"); r.Outcome != voice.OutcomeNoMatch || w.runner.count() != 1 {
		t.Fatalf("a phrase outlived the redefinition: %+v", r)
	}
	row, _ = w.svc.Get(ctx, row.ID)
	guides, err := w.voice.Guides(ctx, []allowlist.Tool{row})
	if err != nil || !guides[row.ID].Void || guides[row.ID].Phrases[0] != "add {a} and {b}" ||
		guides[row.ID].HowToSay != "voice cannot fill its arguments: add a phrase" {
		t.Fatalf("%+v %v", guides, err)
	}
}

func TestAPhraseThatFitsTwoToolsIsNotGuessed(t *testing.T) {
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a} and {b}")
	w.addPhrased(t, "calc", "get-sum", sumSchema, true, "add {a} and {b}")
	if r := w.turn("add 1 and 2"); r.Outcome != voice.OutcomeRefused || !strings.Contains(r.Speech, "get sum on calc or get sum on everything") || w.runner.count() != 0 {
		t.Fatalf("%+v", r)
	}
}

// weatherSchema has a string with a default, an enum and a bounded integer.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string","default":"Paris"},
	"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":5,"maximum":14}},"required":["city"]}`

// TestHowToSay: the tools page's "Say:" line reads each phrase as a person would say it, slots
// filled with an example of their type (or the schema's own), optional words kept and the first
// of each choice: never the template's syntax.
func TestHowToSay(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", sumSchema, true, "add {a} and {b}", "(what is | sum) {a} plus {b}")
	w.addPhrased(t, "calendar", "create_event", eventSchema, false, "new [loud] event {title} at {hour} [loud {loud}]")
	w.addPhrased(t, "weather", "forecast", weatherSchema, true, "[the] weather in {city} [in {unit}] for {days} day[s]")
	rows, err := w.svc.List(ctx, allowlist.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	guides, err := w.voice.Guides(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"everything_get-sum":    "Say: ‘add 3 and 4’ or ‘what is 3 plus 4’",
		"calendar_create_event": "Say: ‘new loud event ⟨title⟩ at 3 loud yes’",
		"weather_forecast":      "Say: ‘the weather in Paris in celsius for 5 days’",
		"vikunja_search_tasks":  "Say: ‘search tasks ⟨query⟩’",
		"vikunja_list_tasks":    "Say: ‘list tasks’",
		"restart_router":        "Say: ‘restart router’",
		"vikunja_delete_task":   "voice cannot fill its arguments: add a phrase",
		"vikunja_get_task":      "voice cannot fill its arguments: add a phrase",
	}
	for _, row := range rows {
		if w, ok := want[row.Name]; ok && guides[row.ID].HowToSay != w {
			t.Errorf("%s: %q, want %q", row.Name, guides[row.ID].HowToSay, w)
		}
	}
}

// TestPhrasesAgainstARealServer runs a phrase with two required numbers through the MCP manager
// to a go-sdk server over streamable HTTP, which echoes the arguments it received.
func TestPhrasesAgainstARealServer(t *testing.T) {
	ctx := context.Background()
	live := newLiveTool(t, "everything", mcptest.ToolSpec{Name: "get-sum", Description: "Adds two numbers",
		InputSchema: json.RawMessage(sumSchema), ReadOnly: true, Echo: true})
	rows, manager, row := live.rows, live.manager, live.row
	said := phrases.NewService(db.NewPhrasesStore(live.db), rows, time.Now)
	if _, err := said.Save(ctx, row.ID, "add {a} and {b}", authtest.Proof(t, auth.One(auth.ActionSetPhrases, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	v := voice.New(voice.Deps{Rows: rows, Binder: manager, Runner: runner.New(rows, manager, runner.Options{}), Lock: &lockFlag{}, Phrases: said}, voice.Options{})
	defer v.CancelPending()
	r := v.Turn(ctx, voice.Request{Conversation: "c", Text: "add twenty three and 4.5"})
	if r.Outcome != voice.OutcomeRan || r.Output != `{"a":23,"b":4.5}` || r.Speech != "A 23, b 4.5." {
		t.Fatalf("%+v", r)
	}
}
