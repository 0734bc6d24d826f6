package voice

import (
	"slices"
	"strings"

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
var affirmatives = []string{"yes", "yes please", "sure", "ok", "okay", "do it", "go ahead", "confirm", "yeah"}

// cancellations end a question for a missing value without running anything.
var cancellations = []string{"cancel", "stop", "never mind", "nevermind", "forget it", "nothing", "no"}

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

// afterWords is text from word i on, as said ("" when no word is left).
func afterWords(text string, words []phrases.Word, i int) string {
	if i >= len(words) {
		return ""
	}
	return text[words[i].Start:]
}

// heardAs is the utterance's words joined by single spaces: how it is compared with fixed
// answers.
func heardAs(text string) string { return phrases.Join(phrases.Words(text)) }
