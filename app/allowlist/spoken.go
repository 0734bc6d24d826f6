package allowlist

import "strings"

// Flatten lower-cases s and turns every run of characters outside [a-z0-9] into one "_",
// trimmed at both ends. It is how a name is read everywhere: the local names of
// docs/design.md#rule-11 (mcp.LocalName) and, through SpokenWords, the spoken names the voice
// matcher knows and the words it hears (docs/design.md#rule-17). Only ASCII letters are
// lower-cased: Unicode case mapping would let "\u212aill" (Kelvin sign) become "kill", and a
// name must not be reachable by lookalikes; every byte of a character beyond ASCII separates
// words.
func Flatten(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; ; {
		w, end, ok := nextWord(s, i)
		if !ok {
			return b.String()
		}
		if b.Len() > 0 {
			b.WriteByte('_')
		}
		b.WriteString(w)
		i = end
	}
}

// SpokenWords is the words of Flatten(s): how the matcher hears a name or an utterance.
func SpokenWords(s string) []string {
	var out []string
	for i := 0; ; {
		w, end, ok := nextWord(s, i)
		if !ok {
			return out
		}
		out = append(out, w)
		i = end
	}
}

// nextWord returns the next word of s at or after byte i, lower-cased (a run of ASCII letters
// and digits), and the byte offset just past it: the one reading behind Flatten and
// SpokenWords.
func nextWord(s string, i int) (word string, end int, ok bool) {
	for i < len(s) && !isWordByte(s[i]) {
		i++
	}
	if i == len(s) {
		return "", len(s), false
	}
	start := i
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return lowerASCII(s[start:i]), i, true
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// lowerASCII lower-cases the ASCII letters of a word, without an allocation when it has none.
func lowerASCII(w string) string {
	for i := 0; i < len(w); i++ {
		if 'A' <= w[i] && w[i] <= 'Z' {
			b := []byte(w)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return w
}
