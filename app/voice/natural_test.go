package voice_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/runner"
	"maven/app/voice"
)

func TestLeadInsAreDropped(t *testing.T) {
	for _, c := range []struct {
		said string
		wake []string
		want voice.Outcome
	}{
		{"please search tasks milk", nil, voice.OutcomeRan},
		{"hey maven search tasks milk", nil, voice.OutcomeRan},
		{"Hey Maven, could you please search tasks milk?", nil, voice.OutcomeRan},
		{"OK maven, um, vikunja list tasks", nil, voice.OutcomeRan},
		{"can you restart router", nil, voice.OutcomeConfirm},
		{"computer, search tasks milk", []string{"computer", "hey computer"}, voice.OutcomeRan},
		{"hey computer search tasks milk", []string{"computer", "hey computer"}, voice.OutcomeRan},
		{"maven search tasks milk", []string{"computer"}, voice.OutcomeNoMatch},
		{"please do the thing", nil, voice.OutcomeNoMatch},
	} {
		t.Run(c.said, func(t *testing.T) {
			w := newWorld(t)
			w.voice = w.newVoice(voice.Options{WakeWords: c.wake})
			r := w.turn(c.said)
			if r.Outcome != c.want {
				t.Fatalf("%s %q, want %s", r.Outcome, r.Speech, c.want)
			}
			if c.want == voice.OutcomeRan && w.runner.calls[0] != `vikunja_search_tasks {"query":"milk"}` && !strings.HasPrefix(w.runner.calls[0], "vikunja_list_tasks") {
				t.Fatalf("ran %v", w.runner.calls)
			}
		})
	}
}

func TestOnlyLeadInsIsAnInvitation(t *testing.T) {
	w := newWorld(t)
	r := w.turn("Hey Maven!")
	if r.Outcome != voice.OutcomeNoMatch || !r.ExpectsReply || !strings.Contains(r.Speech, "listening") {
		t.Fatalf("%+v", r)
	}
}

func TestAffirmativesConfirmAnythingElseCancels(t *testing.T) {
	for _, c := range []struct {
		answer string
		runs   bool
	}{
		{"yes", true}, {"Yes please.", true}, {"sure", true}, {"OK", true}, {"okay!", true},
		{"do it", true}, {"Go ahead.", true}, {"confirm", true}, {"OK, do it", true}, {"um, yes", true},
		{"no", false}, {"nope", false}, {"yes, but not now", false}, {"please", false},
		{"sure, later", false}, {"restart router", false},
	} {
		t.Run(c.answer, func(t *testing.T) {
			w := newWorld(t)
			if r := w.turn("archive all"); r.Outcome != voice.OutcomeConfirm {
				t.Fatalf("%+v", r)
			}
			r := w.turn(c.answer)
			if c.runs {
				if r.Outcome != voice.OutcomeRan || w.runner.count() != 1 {
					t.Fatalf("%s %q, runs %d", r.Outcome, r.Speech, w.runner.count())
				}
				return
			}
			if r.Outcome != voice.OutcomeCancelled || r.Speech != "Cancelled; nothing ran." || w.runner.count() != 0 {
				t.Fatalf("%s %q, runs %d", r.Outcome, r.Speech, w.runner.count())
			}
		})
	}
}

func TestAMissingValueIsAskedForUntilItFits(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	r := w.turn("please search tasks")
	if r.Outcome != voice.OutcomeAsk || !r.ExpectsReply || r.Speech != "What query?" || r.Tool != "vikunja_search_tasks" {
		t.Fatalf("%+v", r)
	}
	// Another conversation is not the answer.
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "other", Text: "milk"}); r.Outcome != voice.OutcomeNoMatch {
		t.Fatalf("other conversation: %+v", r)
	}
	if r := w.turn("Um, oat milk."); r.Outcome != voice.OutcomeRan || w.runner.calls[0] != `vikunja_search_tasks {"query":"oat milk"}` {
		t.Fatalf("%+v %v", r, w.runner.calls)
	}
}

func TestHelpListsWhatCanBeSaid(t *testing.T) {
	w := newWorld(t)
	r := w.turn("Hey Maven, what can I say?")
	if r.Outcome != voice.OutcomeHelp {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"You can say: ", "archive all", "list tasks", "restart router", "search tasks followed by the query"} {
		if !strings.Contains(r.Speech, want) {
			t.Errorf("speech %q lacks %q", r.Speech, want)
		}
	}
	for _, never := range []string{"delete task", "get task", "find project"} {
		if strings.Contains(r.Speech, never) {
			t.Errorf("speech %q offers %q, which voice cannot fill", r.Speech, never)
		}
	}
	if !strings.Contains(r.Output, "search tasks ⟨query⟩ (search tasks on vikunja)") {
		t.Errorf("output %q", r.Output)
	}
}

// TestHelpReadsPhrasesAsSaid: "what can I say" reads a phrase as a person says it.
func TestHelpReadsPhrasesAsSaid(t *testing.T) {
	w := newWorld(t)
	w.addPhrased(t, "everything", "get-sum", sumSchema, true, "(what is | sum) {a} plus {b} [please]")
	r := w.turn("what can I say")
	if !strings.Contains(r.Output, "\nwhat is 3 plus 4 please (get sum on everything)") || strings.ContainsAny(r.Speech+r.Output, "{}[]|") {
		t.Fatalf("%+v", r)
	}
}

func TestTheLockedReplyKeepsTheAddressOutOfSpeech(t *testing.T) {
	w := newWorld(t)
	w.lock.locked = true
	r := w.turn("search tasks milk")
	if r.Outcome != voice.OutcomeLocked || strings.Contains(r.Speech, "http") || !strings.Contains(r.Speech, "phone") {
		t.Fatalf("speech %q", r.Speech)
	}
	if !strings.Contains(r.Output, "https://maven.example/unlock") {
		t.Fatalf("output %q", r.Output)
	}
}

// TestTheLockedReplySaysWhatWorksHere: the locked reply offers only the ways to unlock this
// configuration's origins allow (docs/design.md#rule-19): the phone at an https name, else a
// browser on the server or an SSH tunnel to it.
func TestTheLockedReplySaysWhatWorksHere(t *testing.T) {
	for _, c := range []struct {
		name          string
		origins       []string
		says, saysNot []string
		output        []string
	}{
		{"localhost", []string{"http://localhost:8080"}, []string{"in a browser on the Maven server", "SSH tunnel"}, []string{"phone", "http"},
			[]string{"at http://localhost:8080/unlock in a browser on the Maven server", "ssh -L 8080:localhost:8080"}},
		{"localhost over TLS", []string{"https://localhost:8443"}, []string{"browser on the Maven server"}, []string{"phone"},
			[]string{"https://localhost:8443/unlock", "ssh -L 8443:localhost:8443"}},
		{"an https name", []string{"https://maven.home.example:8443"}, []string{"on your phone", "maven.home.example"}, []string{"tunnel", "http"},
			[]string{"at https://maven.home.example:8443/unlock."}},
		{"both", []string{"http://localhost:8080", "https://maven.example"}, []string{"on your phone", "at maven.example"}, []string{"tunnel"},
			[]string{"https://maven.example/unlock"}},
		{"none known", []string{}, []string{"Unlock it with your passkey."}, []string{"phone", "tunnel"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.voice = w.newVoice(voice.Options{Origins: c.origins})
			w.lock.locked = true
			r := w.turn("search tasks milk")
			if r.Outcome != voice.OutcomeLocked {
				t.Fatalf("%+v", r)
			}
			for _, s := range c.says {
				if !strings.Contains(r.Speech, s) {
					t.Errorf("speech %q lacks %q", r.Speech, s)
				}
			}
			for _, s := range c.saysNot {
				if strings.Contains(r.Speech, s) {
					t.Errorf("speech %q says %q", r.Speech, s)
				}
			}
			for _, s := range c.output {
				if !strings.Contains(r.Output, s) {
					t.Errorf("output %q lacks %q", r.Output, s)
				}
			}
		})
	}
}

func TestJSONResultsAreSummarised(t *testing.T) {
	for _, c := range []struct{ name, out, speech string }{
		{"a list of objects", `[{"id":1,"title":"Buy milk"},{"id":2,"title":"Call mum"},{"id":3,"title":"Fix bike"},{"id":4,"title":"Pay rent"}]`,
			"4 items: Buy milk, Call mum, Fix bike and 1 more."},
		{"a short list", `["a","b"]`, "2 items: a and b."},
		{"an empty list", `[]`, "No items."},
		{"an object holding a list", `{"tasks":[{"name":"one"}],"total":1}`, "1 task: one."},
		{"plain fields", `{"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65, "raining": false}`,
			"Conditions Partly cloudy, humidity 65, raining no, temperature 22.5."},
		{"nested fields", `{"entities":[1,2],"relations":[],"meta":{"a":1,"b":2}}`, "Entities: 2, meta: 2 fields, relations: 0."},
		{"not JSON", `The sum of 3 and 4 is 7.`, "The sum of 3 and 4 is 7."},
		{"JSON followed by text", `{"a":1} and more`, `{"a":1} and more`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.runner.res = runner.Result{Output: c.out}
			r := w.turn("vikunja list tasks")
			if r.Outcome != voice.OutcomeRan || r.Speech != c.speech || r.Output != c.out {
				t.Fatalf("speech %q output %q", r.Speech, r.Output)
			}
		})
	}
}

func TestTurnsWithoutARowAreRecorded(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.voice.Turn(ctx, voice.Request{Conversation: "c9", Text: "open the pod bay doors", UserID: "ha-user-1"})
	w.lock.locked = true
	w.voice.Turn(ctx, voice.Request{Conversation: "c9", Text: "search tasks milk"})
	p, err := w.feed.Query(ctx, activity.Filter{Action: activity.ActionVoiceTurn})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 || p.Entries[0].Outcome != "locked" || p.Entries[1].Outcome != "no_match" || !p.Entries[1].At.Equal(w.clock.Now()) {
		t.Fatalf("%+v", p.Entries)
	}
	var d map[string]string
	if err := json.Unmarshal(p.Entries[1].Detail, &d); err != nil || d["utterance"] != "open the pod bay doors" || d["user_id"] != "ha-user-1" || d["conversation"] != "c9" {
		t.Fatalf("%s", p.Entries[1].Detail)
	}
}

func TestTurnsOverTheRateAreRefused(t *testing.T) {
	w := newWorld(t)
	slow := voice.New(voice.Deps{Rows: w.svc, Binder: allowBinder{}, Runner: w.runner, Lock: w.lock},
		voice.Options{TurnsPerSecond: 1, Burst: 2, Now: w.clock.Now})
	defer slow.CancelPending()
	ctx := context.Background()
	var outcomes []voice.Outcome
	for range 3 {
		outcomes = append(outcomes, slow.Turn(ctx, voice.Request{Conversation: "r", Text: "vikunja list tasks"}).Outcome)
	}
	if outcomes[0] != voice.OutcomeRan || outcomes[1] != voice.OutcomeRan || outcomes[2] != voice.OutcomeRefused {
		t.Fatalf("%v", outcomes)
	}
	w.clock.Advance(time.Second)
	if r := slow.Turn(ctx, voice.Request{Conversation: "r", Text: "vikunja list tasks"}); r.Outcome != voice.OutcomeRan {
		t.Fatalf("after a second: %+v", r)
	}
	if w.runner.count() != 3 {
		t.Fatalf("runs %d", w.runner.count())
	}
}

// TestALongUtteranceIsRefusedUnheard: a turn hears at most voice.MaxWords words after its
// lead-ins (docs/design.md#rule-17). 16,000 filler words before a command are refused before any
// matching, a question waiting meanwhile still waits, and the feed keeps 500 characters of it.
// Exactly MaxWords words after the lead-ins are heard whole.
func TestALongUtteranceIsRefusedUnheard(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	expectOutcome := func(r voice.Reply, want voice.Outcome, says string) {
		t.Helper()
		if r.Outcome != want || !strings.Contains(r.Speech, says) {
			t.Fatalf("%s %q, want %s saying %q", r.Outcome, r.Speech, want, says)
		}
	}
	expectOutcome(w.turn("archive all"), voice.OutcomeConfirm, "Say yes")
	expectOutcome(w.turn(strings.Repeat("um ", 16000)+"search tasks milk"), voice.OutcomeRefused, "at most 64 words")
	if n := w.runner.count(); n != 0 {
		t.Fatalf("ran %v", w.runner.calls)
	}
	expectOutcome(w.turn("yes"), voice.OutcomeRan, "archive_all")

	query := strings.TrimSpace(strings.Repeat("milk ", voice.MaxWords-2))
	expectOutcome(w.turn("Hey Maven, um, could you please search tasks "+query), voice.OutcomeRan, query)
	expectOutcome(w.turn("search tasks "+query+" now"), voice.OutcomeRefused, "at most 64 words")
	p, err := w.feed.Query(ctx, activity.Filter{Outcome: string(voice.OutcomeRefused)})
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Utterance string }
	if err := json.Unmarshal(p.Entries[len(p.Entries)-1].Detail, &d); err != nil || len([]rune(d.Utterance)) != 501 {
		t.Fatalf("recorded %d characters, want 500 and a mark: %v", len([]rune(d.Utterance)), err)
	}
}
