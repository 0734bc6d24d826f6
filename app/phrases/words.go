package phrases

import (
	"strings"
	"unicode"
)

// Word is one spoken word of an utterance: lower case, and where it stands in the text as said,
// so a slot can take the words it covers with their punctuation ("Hello, World").
type Word struct {
	Text       string // lower case
	Start, End int    // byte offsets in the utterance
}

// Words splits text the way voice hears an utterance: runs of letters and digits are words,
// everything else separates them. Unlike a tool's spoken name (allowlist.SpokenWords), a word
// may hold letters beyond ASCII: the owner's phrases and answers are in any language.
func Words(text string) []Word {
	words, _ := FirstWords(text, -1)
	return words
}

// FirstWords is Words, stopping after n words (n < 0: all of them); more reports that text
// holds more. Its work is bounded by n, not by the length of text.
func FirstWords(text string, n int) (words []Word, more bool) {
	start := -1
	for i, r := range text {
		isWord := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case isWord && start < 0:
			if len(words) == n {
				return words, true
			}
			start = i
		case !isWord && start >= 0:
			words = append(words, Word{Text: lower(text[start:i]), Start: start, End: i})
			start = -1
		}
	}
	if start >= 0 {
		words = append(words, Word{Text: lower(text[start:]), Start: start, End: len(text)})
	}
	return words, false
}

// Join returns the lower-case words joined by single spaces.
func Join(words []Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// lower lower-cases a word, without an allocation when it is already lower-case ASCII. A
// character beyond ASCII never becomes an ASCII letter: "\u212aill" (Kelvin sign) is not
// "kill", as allowlist.Flatten reads it.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.Map(func(r rune) rune {
				if l := unicode.ToLower(r); r <= unicode.MaxASCII || l > unicode.MaxASCII {
					return l
				}
				return r
			}, w)
		}
	}
	return w
}
