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

// Words splits text the way the voice matcher hears it (allowlist.SpokenWords): runs of letters
// and digits are words, everything else separates them.
func Words(text string) []Word {
	var out []Word
	start := -1
	for i, r := range text {
		isWord := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case isWord && start < 0:
			start = i
		case !isWord && start >= 0:
			out = append(out, Word{Text: lower(text[start:i]), Start: start, End: i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, Word{Text: lower(text[start:]), Start: start, End: len(text)})
	}
	return out
}

// Join returns the lower-case words joined by single spaces.
func Join(words []Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

// lower avoids an allocation for words that are already lower-case ASCII.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(w)
		}
	}
	return w
}
