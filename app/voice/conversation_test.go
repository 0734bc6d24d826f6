package voice_test

import (
	"strings"
	"testing"

	"maven/app/voice"
)

const echoSchema = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`

// echoWorld is the world with echo on three servers: everything's and legacy's take the words
// after the name (allow_tools), plain's cannot.
func echoWorld(t *testing.T) *world {
	w := newWorld(t)
	for _, server := range []string{"everything", "legacy", "plain"} {
		w.addPhrased(t, server, "echo", echoSchema, true)
	}
	w.allowed["everything_echo"], w.allowed["legacy_echo"] = true, true
	w.voice = w.newVoice(voice.Options{})
	return w
}

func expectReply(t *testing.T, r voice.Reply, outcome voice.Outcome, speech string) {
	t.Helper()
	if r.Outcome != outcome || !strings.Contains(r.Speech, speech) {
		t.Fatalf("%s %q, want %s saying %q", r.Outcome, r.Speech, outcome, speech)
	}
}

// TestWhichOneRemembersTheWords: two enabled rows that share a spoken name are asked about
// (docs/design.md#rule-17), offering only those that can take the words said; the answer names
// one by its server, its whole name or its place, and it runs with the words said first.
func TestWhichOneRemembersTheWords(t *testing.T) {
	const question = "Several tools are called echo. Which one: everything echo or legacy echo?"
	for _, c := range []struct{ answer, ran string }{
		{"everything", "everything_echo"},
		{"legacy", "legacy_echo"},
		{"The first one.", "everything_echo"},
		{"the second", "legacy_echo"},
		{"and the legacy one, please", "legacy_echo"},
		{"um, the last one", "legacy_echo"},
		{"number two", "legacy_echo"},
		{"Everything echo", "everything_echo"},
		{"the one on legacy", "legacy_echo"},
	} {
		t.Run(c.answer, func(t *testing.T) {
			w := echoWorld(t)
			r := w.turn("echo hello there")
			expectReply(t, r, voice.OutcomeAsk, question)
			if !r.ExpectsReply {
				t.Fatal("the question expects no reply")
			}
			expectReply(t, w.turn(c.answer), voice.OutcomeRan, c.ran)
			if got, want := strings.Join(w.runner.calls, "; "), c.ran+` {"message":"hello there"}`; got != want {
				t.Fatalf("ran %s, want %s", got, want)
			}
		})
	}
}

// TestWhichOneOffersOnlyWhatCanTakeTheWords: a row that cannot take the words is not offered;
// with one that can, it is the one; with none, nothing runs. An answer that names no option is
// a new turn, "cancel" cancels, and "what?" asks again.
func TestWhichOneOffersOnlyWhatCanTakeTheWords(t *testing.T) {
	w := echoWorld(t)
	w.allowed["legacy_echo"] = false
	w.voice = w.newVoice(voice.Options{})
	expectReply(t, w.turn("echo hello"), voice.OutcomeRan, "ran everything_echo")
	expectReply(t, w.turn("list tasks today"), voice.OutcomeRefused, "none of them takes the words")

	w = echoWorld(t)
	expectReply(t, w.turn("echo hello"), voice.OutcomeAsk, "Which one")
	expectReply(t, w.turn("what?"), voice.OutcomeAsk, "Several tools are called echo. Which one: everything echo or legacy echo?")
	expectReply(t, w.turn("third"), voice.OutcomeNoMatch, "I do not know a tool by that name")
	expectReply(t, w.turn("echo hello"), voice.OutcomeAsk, "Which one")
	expectReply(t, w.turn("search tasks milk"), voice.OutcomeRan, `{"query":"milk"}`)
	expectReply(t, w.turn("echo hello"), voice.OutcomeAsk, "Which one")
	expectReply(t, w.turn("never mind"), voice.OutcomeCancelled, "nothing ran")
	if got := strings.Join(w.runner.calls, "; "); got != `vikunja_search_tasks {"query":"milk"}` {
		t.Fatalf("ran %s", got)
	}
}

// TestWhichOneIsVoidWhenTheRowChanges: the row picked is read again; a change since the
// question voids the answer.
func TestWhichOneIsVoidWhenTheRowChanges(t *testing.T) {
	w := echoWorld(t)
	expectReply(t, w.turn("echo hello"), voice.OutcomeAsk, "Which one")
	if _, err := w.svc.DisableTool(t.Context(), w.ids["legacy_echo"], "owner"); err != nil {
		t.Fatal(err)
	}
	expectReply(t, w.turn("legacy"), voice.OutcomeRefused, "changed since I asked")
	if n := w.runner.count(); n != 0 {
		t.Fatalf("ran %v", w.runner.calls)
	}
}

// TestWhatRepeatsTheQuestion: "what?", "sorry?" or "pardon?" puts the question waiting again
// instead of answering it; the answer after it still counts.
func TestWhatRepeatsTheQuestion(t *testing.T) {
	w := newWorld(t)
	confirm := w.turn("archive all")
	for _, said := range []string{"What?", "sorry?", "Pardon?"} {
		if r := w.turn(said); r != confirm {
			t.Fatalf("%q: %+v, want the question again: %+v", said, r, confirm)
		}
	}
	expectReply(t, w.turn("yes"), voice.OutcomeRan, "ran vikunja_archive_all")

	expectReply(t, w.turn("search tasks"), voice.OutcomeAsk, "What query?")
	expectReply(t, w.turn("sorry?"), voice.OutcomeAsk, "What query?")
	expectReply(t, w.turn("milk"), voice.OutcomeRan, `{"query":"milk"}`)
	// With nothing waiting, "what?" is a turn like any other.
	expectReply(t, w.turn("what?"), voice.OutcomeNoMatch, "")
}

// TestAnswersDropPleaseArticlesAndAnd: a trailing "please", the articles and a leading "and"
// are no part of an answer or of what is matched; "yep", "yup", "yeah" and "go for it" confirm.
func TestAnswersDropPleaseArticlesAndAnd(t *testing.T) {
	for _, c := range []struct {
		turns []string
		want  voice.Outcome
		ran   string
	}{
		{[]string{"archive all", "yep"}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"archive all", "Yup."}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"archive all", "yeah, go for it"}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"archive all", "yes, but no"}, voice.OutcomeCancelled, ""},
		{[]string{"archive all", "Go for it!"}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"archive all", "ok, do it please"}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"archive all", "and yes please"}, voice.OutcomeRan, "vikunja_archive_all {}"},
		{[]string{"vikunja list tasks please"}, voice.OutcomeRan, "vikunja_list_tasks {}"},
		{[]string{"search tasks milk, please."}, voice.OutcomeRan, `vikunja_search_tasks {"query":"milk"}`},
		{[]string{"and search the tasks milk"}, voice.OutcomeRan, `vikunja_search_tasks {"query":"milk"}`},
		{[]string{"search tasks", "the milk please"}, voice.OutcomeRan, `vikunja_search_tasks {"query":"the milk"}`},
		{[]string{"search tasks", "never mind please"}, voice.OutcomeCancelled, ""},
		{[]string{"what can I say please"}, voice.OutcomeHelp, ""},
	} {
		t.Run(strings.Join(c.turns, " / "), func(t *testing.T) {
			w := newWorld(t)
			var r voice.Reply
			for _, said := range c.turns {
				r = w.turn(said)
			}
			if r.Outcome != c.want || strings.Join(w.runner.calls, "; ") != c.ran {
				t.Fatalf("%s %q, ran %v; want %s and %q", r.Outcome, r.Speech, w.runner.calls, c.want, c.ran)
			}
		})
	}
}

// TestAStrayYesSaysNothingWaits: a yes with no question waiting says so.
func TestAStrayYesSaysNothingWaits(t *testing.T) {
	w := newWorld(t)
	for _, said := range []string{"yes", "Hey Maven, yes please", "yeah"} {
		expectReply(t, w.turn(said), voice.OutcomeNoMatch, "There's nothing waiting for a yes.")
	}
}

// TestAnAskNamesThePropertyByItsDescription: a missing value is asked for by the schema's
// description of it when it reads as a name, else by the property's name.
func TestAnAskNamesThePropertyByItsDescription(t *testing.T) {
	const schema = `{"type":"object","properties":{
		"a":{"type":"number","description":"First number"},
		"b":{"type":"number","description":"Second number."},
		"unit":{"type":"string","enum":["c","f"],"description":"Temperature unit"},
		"loud":{"type":"boolean","description":"Whether to shout"},
		"note":{"type":"string","description":"Enter a note for the sum"},
		"tag":{"type":"string","title":"The tag to file it under"}},
		"required":["a","b","unit","loud","note","tag"]}`
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", schema, true, "add {a}")
	for _, step := range []struct{ said, asked string }{
		{"add 3", "What is the second number? Say a number."},
		{"-4", "Temperature unit: c or f?"},
		{"c", "Whether to shout: yes or no?"},
		{"no", "What note?"},
		{"a note", "What is the tag to file it under?"},
	} {
		if r := w.turn(step.said); r.Outcome != voice.OutcomeAsk || r.Speech != step.asked {
			t.Fatalf("after %q: %s %q, want %q", step.said, r.Outcome, r.Speech, step.asked)
		}
	}
	expectReply(t, w.turn("urgent"), voice.OutcomeRan, `"a":3,"b":-4,`)
}
