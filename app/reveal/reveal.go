// Package reveal finds characters a person cannot see, or could mistake for others, in text that
// the owner is asked to approve (docs/design.md#rule-25), and splits such text so the page can show
// each of them as a visible code point instead. It is the one place that decides what counts as
// hidden; the tool list, the passkey names and the tests all ask it.
package reveal

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is invisible or confusable when shown as text: control, format
// (zero-width, bidi controls, tags, …), private-use and surrogate characters, every space that
// is not U+0020, line and paragraph separators, variation selectors, the other default-ignorable
// code points (Hangul fillers, …) and bytes that are not valid UTF-8. Tab and newline are not
// hidden: descriptions use them and the page shows them as layout.
func Hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r == ' ':
		return false
	case r < 0x7f:
		return r < 0x20 // the C0 controls; ASCII is otherwise safe
	case r == utf8.RuneError:
		return true
	case r >= 0xE0000 && r <= 0xE007F: // Unicode tag characters, assigned or not
		return true
	case r == 0x2800: // braille pattern blank renders as a space
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zs, unicode.Zl,
		unicode.Zp, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// Contains reports whether s holds any hidden character.
func Contains(s string) bool {
	for _, r := range s {
		if Hidden(r) {
			return true
		}
	}
	return false
}

// InJSON reports whether the JSON document raw holds a hidden character in its text, or in any
// key or string value once decoded: a schema can smuggle U+200B as the escape "\u200b".
// A document that does not decode is judged by its text alone.
func InJSON(raw []byte) bool {
	if Contains(string(raw)) {
		return true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false
	}
	return anyHidden(v)
}

func anyHidden(v any) bool {
	switch v := v.(type) {
	case string:
		return Contains(v)
	case []any:
		for _, e := range v {
			if anyHidden(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if Contains(k) || anyHidden(e) {
				return true
			}
		}
	}
	return false
}

// Segment is a run of plain text, or one hidden character spelled out.
type Segment struct {
	// Text is the text itself, or for a hidden character its code point ("U+200B"), or
	// "invalid byte 0xff" for a byte that is not UTF-8.
	Text string
	// Hidden marks a spelled-out hidden character.
	Hidden bool
	// Why says what the hidden character is ("zero-width space", "bidi control", …).
	Why string
}

// Split cuts s into visible runs and spelled-out hidden characters, in order. Text without hidden
// characters is one segment (none for "").
func Split(s string) []Segment {
	var out []Segment
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !Hidden(r) {
			i += size
			continue
		}
		if start < i {
			out = append(out, Segment{Text: s[start:i]})
		}
		seg := Segment{Text: fmt.Sprintf("U+%04X", r), Hidden: true, Why: Describe(r)}
		if r == utf8.RuneError && size == 1 {
			seg.Text, seg.Why = fmt.Sprintf("invalid byte 0x%02x", s[i]), "not valid UTF-8"
		}
		out = append(out, seg)
		i += size
		start = i
	}
	if start < len(s) {
		out = append(out, Segment{Text: s[start:]})
	}
	return out
}

// Describe names the kind of a hidden character in a few words, for a tooltip.
func Describe(r rune) string {
	switch {
	case r == 0x200B:
		return "zero-width space"
	case r == 0x200C:
		return "zero-width non-joiner"
	case r == 0x200D:
		return "zero-width joiner"
	case r == 0x2060:
		return "word joiner"
	case r == 0xFEFF:
		return "zero-width no-break space"
	case r == 0x00AD:
		return "soft hyphen"
	case r == 0x00A0 || r == 0x202F:
		return "no-break space"
	case r == 0x200E || r == 0x200F || r == 0x061C:
		return "bidi mark"
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return "bidi control"
	case r >= 0xE0000 && r <= 0xE007F:
		return "tag character"
	case r == utf8.RuneError:
		return "replacement character"
	case unicode.Is(unicode.Cc, r):
		return "control character"
	case unicode.Is(unicode.Co, r):
		return "private-use character"
	case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp) || r == 0x2800:
		return "unusual space"
	case unicode.Is(unicode.Variation_Selector, r):
		return "variation selector"
	}
	return "invisible character"
}

// MixedScripts reports whether the letters of s come from more than one writing system (Latin
// with Cyrillic, say), the classic way to make one name look like another. Han, Hiragana and
// Katakana count as one, since Japanese mixes them.
func MixedScripts(s string) bool {
	first := ""
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		sc := scriptOf(r)
		if first == "" {
			first = sc
		} else if sc != first {
			return true
		}
	}
	return false
}

// scriptOf names the writing system of a letter, as far as look-alikes go.
func scriptOf(r rune) string {
	switch {
	case unicode.Is(unicode.Latin, r):
		return "Latin"
	case unicode.Is(unicode.Greek, r):
		return "Greek"
	case unicode.Is(unicode.Cyrillic, r):
		return "Cyrillic"
	case unicode.Is(unicode.Armenian, r):
		return "Armenian"
	case unicode.Is(unicode.Cherokee, r):
		return "Cherokee"
	case unicode.Is(unicode.Hebrew, r):
		return "Hebrew"
	case unicode.Is(unicode.Arabic, r):
		return "Arabic"
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
		return "CJK"
	case unicode.Is(unicode.Hangul, r):
		return "Hangul"
	case unicode.Is(unicode.Georgian, r):
		return "Georgian"
	case unicode.Is(unicode.Devanagari, r):
		return "Devanagari"
	case unicode.Is(unicode.Thai, r):
		return "Thai"
	}
	return "other"
}
