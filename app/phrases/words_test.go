package phrases

import (
	"strings"
	"testing"
)

// TestWordsFoldNothingIntoASCII: letters beyond ASCII are words, lower-cased, but none becomes
// an ASCII letter, so a Kelvin sign reaches no phrase that "kill" reaches.
func TestWordsFoldNothingIntoASCII(t *testing.T) {
	for in, want := range map[string]string{
		"Lösche die LISTE": "lösche die liste",
		"\u212aill switch": "\u212aill switch",
		"\u0130stanbul":    "\u0130stanbul",
		"ÄÖ and Ω":         "äö and ω",
	} {
		if got := Join(Words(in)); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
	tpl, err := Parse("kill switch")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tpl.Match("\u212aill switch", Words("\u212aill switch")); ok {
		t.Error(`"\u212aill switch" matched the phrase "kill switch"`)
	}
}

// TestFirstWordsStopsAtItsBound: the words past the bound are not read.
func TestFirstWordsStopsAtItsBound(t *testing.T) {
	text := strings.Repeat("um ", 16000) + "echo"
	words, more := FirstWords(text, 64)
	if len(words) != 64 || !more || words[63].End != 64*3-1 {
		t.Fatalf("%d words, more %v", len(words), more)
	}
	if words, more := FirstWords("a b", 2); len(words) != 2 || more {
		t.Fatalf("%d words, more %v", len(words), more)
	}
}
