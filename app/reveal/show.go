package reveal

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CommandLine shows an argv on one line, the way it is shown everywhere (the tools page, the
// servers card, the approvals of stdio command lines, the CLI): each argument as it is, or
// quoted by Arg.
func CommandLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = Arg(a)
	}
	return strings.Join(parts, " ")
}

// Arg shows one argument (or an environment value, or a directory) so that where it ends is never
// in doubt and nothing in it hides: it is double-quoted, Go style, when it is empty, is not valid
// UTF-8, or holds white space, a quote, a backslash, a character that would not show (see
// Hidden), or one with which a shell would end a word or start another command (; | & < > ( )
// and the backtick). Inside the quotes every hidden character is written as its escape.
func Arg(a string) string {
	if a != "" && utf8.ValidString(a) && !strings.ContainsFunc(a, needsQuotes) {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	writeEscaped(&b, a, func(r rune) bool { return r == '"' || r == '\\' || Hidden(r) || !unicode.IsPrint(r) })
	b.WriteByte('"')
	return b.String()
}

func needsQuotes(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'\\;|&<>()`", r) || Hidden(r) || !unicode.IsPrint(r)
}

// OneLine returns s for a one-line display such as a terminal table: every hidden character, and
// every tab and line break, written as its escape (\u200b, \x1b, \n), the rest as it is. A
// hostile name then cannot move the cursor, recolour the terminal, hide text or break the line.
func OneLine(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return Hidden(r) || r == '\n' || r == '\t' }) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	writeEscaped(&b, s, func(r rune) bool { return Hidden(r) || r == '\n' || r == '\t' })
	return b.String()
}

// writeEscaped writes s to b with each rune for which escape holds, and each byte that is not
// UTF-8, written as a Go escape.
func writeEscaped(b *strings.Builder, s string, escape func(rune) bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case !escape(r):
			b.WriteRune(r)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += size
	}
}

// Cut returns s cut at a character boundary so that, with marker after it, it is at most limit
// bytes; s itself when it fits. ok reports a cut.
func Cut(s string, limit int, marker string) (cut string, ok bool) {
	if len(s) <= limit {
		return s, false
	}
	n := max(limit-len(marker), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + marker, true
}

// CutError keeps at most keep bytes of an error message (at a character boundary), then marks
// the cut with " [cut]": how a server's or an authorization server's error is shown.
func CutError(msg string, keep int) string {
	kept, cut := Cut(msg, keep, "")
	if !cut {
		return msg
	}
	return kept + " [cut]"
}
