package voice

import (
	"slices"
	"strings"

	"maven/app/allowlist"
	"maven/app/phrases"
)

// People do not speak in commands: they open with a wake word, a politeness or a hesitation
// ("hey maven, could you please echo hello"). Those lead-ins are dropped one by one, and each
// shorter utterance is tried in turn, so a tool whose own name starts with such a word
// ("ok_google") still matches first.

// fillers are lead-ins dropped before matching, longest first where one extends another.
var fillers = wordLists(
	"i would like you to", "i would like to", "i want you to", "i want to", "i d like to",
	"can you", "could you", "would you", "will you", "would you mind",
	"please", "hey", "hi", "hello", "ok", "okay", "alright", "um", "umm", "uh", "uhm", "er", "erm",
	"hmm", "so", "just", "now", "then", "and", "well", "oh",
)

// disfluencies are dropped before a spoken answer is read as a value ("um, twenty three").
var disfluencies = wordLists("um", "umm", "uh", "uhm", "er", "erm", "hmm")

// affirmatives confirm a pending run (docs/design.md#rule-18); anything else cancels it.
var affirmatives = []string{"yes", "yes please", "sure", "ok", "okay", "do it", "go ahead", "confirm", "yeah", "yep", "yup",
	"go for it"}

// cancellations end a question for a missing value without running anything.
var cancellations = []string{"cancel", "stop", "never mind", "nevermind", "forget it", "nothing", "no"}

// repeats ask for the question waiting to be put again, rather than answering it.
var repeats = []string{"what", "sorry", "pardon", "pardon me", "come again", "say again", "say that again", "repeat",
	"repeat that", "what was that", "excuse me"}

// answerForms returns the words of an answer from each of starts on (leadIns), each as a fixed
// answer is compared: without a leading "and", the articles or a trailing "please" ("and the
// second one, please" is "second one").
func answerForms(words []phrases.Word, starts []int) []string {
	forms := make([]string, 0, len(starts))
	for _, i := range starts {
		var kept []string
		for j, w := range words[i:] {
			if j == 0 && w.Text == "and" || allowlist.IsArticle(w.Text) {
				continue
			}
			kept = append(kept, w.Text)
		}
		for len(kept) > 0 && kept[len(kept)-1] == "please" {
			kept = kept[:len(kept)-1]
		}
		forms = append(forms, strings.Join(kept, " "))
	}
	return forms
}

// saysOneOf reports whether an answer, after any filler, is one of fixed.
func saysOneOf(text string, fixed []string) bool {
	words := phrases.Words(text)
	return slices.ContainsFunc(answerForms(words, leadIns(words, fillers)), func(f string) bool { return slices.Contains(fixed, f) })
}

// answerValue is an answer read as a value, as said: from after any hesitation up to any
// "please" that ends it ("um, twenty three please" is "twenty three").
func answerValue(text string) string {
	words := phrases.Words(text)
	start, end := 0, len(text)
	if n := leadIn(words, disfluencies); n > 0 {
		start = len(text)
		if n < len(words) {
			start = words[n].Start
		}
	}
	if n := withoutPlease(words); n < len(words) {
		end = 0
		if n > 0 {
			end = words[n-1].End
		}
	}
	if start >= end {
		return ""
	}
	return text[start:end]
}

// withoutPlease is how many of words are left once the "please"s ending them are dropped.
func withoutPlease(words []phrases.Word) int {
	n := len(words)
	for n > 0 && words[n-1].Text == "please" {
		n--
	}
	return n
}

// helpQuestions ask what voice can do.
var helpQuestions = []string{"what can i say", "what can you do", "what can i ask", "help", "what are my options"}

// A turn hears at most MaxWords words after the lead-ins it opens with, of which it drops at
// most maxLeadIns; an utterance that says more is refused unmatched. Whatever is posted, the
// work of matching one turn is bounded (docs/design.md#rule-17).
const (
	MaxWords   = 64
	maxLeadIns = 8
)

// DefaultWakeWords is what a config without voice.wake_words uses.
var DefaultWakeWords = []string{"maven"}

func wordLists(phrases ...string) [][]string {
	out := make([][]string, len(phrases))
	for i, p := range phrases {
		out[i] = strings.Fields(p)
	}
	// Longest first, so "can you" is not cut short by a shorter filler that starts it.
	slices.SortStableFunc(out, func(a, b []string) int { return len(b) - len(a) })
	return out
}

// leadIns returns the word indexes at which the utterance may start once its lead-ins are
// dropped: 0, then after each wake word or filler in turn, at most maxLeadIns of them.
func leadIns(words []phrases.Word, lists ...[][]string) []int {
	starts := []int{0}
	for i := 0; i < len(words) && len(starts) <= maxLeadIns; {
		n := leadIn(words[i:], lists...)
		if n == 0 {
			break
		}
		i += n
		starts = append(starts, i)
	}
	return starts
}

// longest is the most words one entry of lists holds.
func longest(lists ...[][]string) int {
	n := 0
	for _, list := range lists {
		for _, p := range list {
			n = max(n, len(p))
		}
	}
	return n
}

// leadIn returns how many words at the start of words one wake word or filler covers.
func leadIn(words []phrases.Word, lists ...[][]string) int {
	for _, list := range lists {
		for _, p := range list {
			if startsWith(words, p) {
				return len(p)
			}
		}
	}
	return 0
}

func startsWith(words []phrases.Word, p []string) bool {
	if len(p) == 0 || len(words) < len(p) {
		return false
	}
	for i, w := range p {
		if words[i].Text != w {
			return false
		}
	}
	return true
}

// heardAs is the utterance's words joined by single spaces: how it is compared with fixed
// answers.
func heardAs(text string) string { return phrases.Join(phrases.Words(text)) }
