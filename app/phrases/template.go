package phrases

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The template syntax is the part of Home Assistant's (hassil) that has a meaning here:
//
//	words           matched as spoken: case and punctuation are ignored
//	(a | b)         one of the alternatives
//	[a | b]         optional: one of the alternatives, or nothing
//	{property}      a slot: the words said there fill that input property
//	a | b           alternatives at the top level, as hassil reads a sentence
//	\(              a delimiter taken literally
//
// Text glued to a group joins it, so "light[s]" is "light" or "lights". Expansion rules
// (<rule>), slot lists ({list:slot}) and permutations ((a; b)) have nothing to refer to here
// and are refused.

// Limits on what one phrase may be.
const (
	MaxLineLen  = 200 // bytes in one template
	MaxVariants = 256 // ways of saying one template once its groups are expanded
	MaxLines    = 20  // templates per tool
)

// Template is one parsed phrase.
type Template struct {
	Text     string    // as the owner wrote it
	Slots    []string  // the properties it names, in order of first appearance
	variants [][]token // every way of saying it
}

// token is a literal word or a slot; exactly one of the two is set.
type token struct {
	word string
	slot string
}

// piece is one element of a parsed template: literal text (spaces included), a slot, or a
// group of alternatives.
type piece struct {
	text  string
	slot  string
	group [][]piece
}

// Parse reads one template. Its error says what is wrong in words the owner can act on.
func Parse(line string) (Template, error) {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return Template{}, errors.New("the phrase is empty")
	case len(line) > MaxLineLen:
		return Template{}, fmt.Errorf("the phrase is longer than %d characters", MaxLineLen)
	case !utf8.ValidString(line):
		return Template{}, errors.New("the phrase is not valid text")
	}
	p := &parser{src: line}
	alts, err := p.alternatives(0)
	if err != nil {
		return Template{}, err
	}
	expanded, err := expandGroup(alts)
	if err != nil {
		return Template{}, err
	}
	t := Template{Text: line}
	seen := map[string]bool{}
	for _, parts := range expanded {
		toks, err := tokenize(parts)
		if err != nil {
			return Template{}, err
		}
		for _, tk := range toks {
			if tk.slot != "" && !seen[tk.slot] {
				seen[tk.slot] = true
				t.Slots = append(t.Slots, tk.slot)
			}
		}
		t.variants = append(t.variants, toks)
	}
	return t, nil
}

// parser is a recursive-descent reader of one template.
type parser struct {
	src string
	pos int
}

// closers maps an opening delimiter to its closing one.
var closers = map[rune]rune{'(': ')', '[': ']'}

// alternatives reads pieces up to the closing delimiter end (0 at the top level), split at '|'.
func (p *parser) alternatives(end rune) ([][]piece, error) {
	alts := [][]piece{nil}
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			alts[len(alts)-1] = append(alts[len(alts)-1], piece{text: text.String()})
			text.Reset()
		}
	}
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		switch r {
		case '\\':
			if p.pos >= len(p.src) {
				return nil, errors.New(`the phrase ends with a lone "\"`)
			}
			r, size = utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += size
			text.WriteRune(r)
		case '(', '[':
			flush()
			inner, err := p.alternatives(closers[r])
			if err != nil {
				return nil, err
			}
			if r == '[' {
				inner = append(inner, nil) // optional: nothing is one of the choices
			}
			alts[len(alts)-1] = append(alts[len(alts)-1], piece{group: inner})
		case ')', ']':
			if r != end {
				return nil, fmt.Errorf("\"%c\" has no matching opening bracket", r)
			}
			flush()
			return alts, nil
		case '|':
			flush()
			alts = append(alts, nil)
		case '{':
			flush()
			name, err := p.slot()
			if err != nil {
				return nil, err
			}
			alts[len(alts)-1] = append(alts[len(alts)-1], piece{slot: name})
		case '}':
			return nil, errors.New(`"}" has no matching "{"`)
		case '<', '>':
			return nil, errors.New("expansion rules such as <name> are not supported; write the words out")
		case ';':
			if end != 0 {
				return nil, errors.New("permutations such as (a; b) are not supported; list the orders as (a b | b a)")
			}
			text.WriteRune(r)
		default:
			text.WriteRune(r)
		}
	}
	if end != 0 {
		return nil, fmt.Errorf("a \"%c\" is never closed", map[rune]rune{')': '(', ']': '['}[end])
	}
	flush()
	return alts, nil
}

// slot reads a slot name after its '{'.
func (p *parser) slot() (string, error) {
	i := strings.IndexByte(p.src[p.pos:], '}')
	if i < 0 {
		return "", errors.New(`a "{" is never closed`)
	}
	name := strings.TrimSpace(p.src[p.pos : p.pos+i])
	p.pos += i + 1
	switch {
	case name == "":
		return "", errors.New("a slot {} names no property")
	case strings.ContainsAny(name, "{([|])<>"):
		return "", fmt.Errorf("the slot {%s} holds a bracket or a '|'", name)
	case strings.Contains(name, ":"):
		return "", fmt.Errorf("slot lists such as {%s} are not supported; write {property}", name)
	}
	return name, nil
}

// part is a piece of one expansion: literal text or a slot.
type part struct {
	text string
	slot string
}

// expandGroup returns every way of saying a group of alternatives.
func expandGroup(alts [][]piece) ([][]part, error) {
	var out [][]part
	for _, seq := range alts {
		e, err := expandSeq(seq)
		if err != nil {
			return nil, err
		}
		out = append(out, e...)
		if len(out) > MaxVariants {
			return nil, errTooManyVariants
		}
	}
	return out, nil
}

var errTooManyVariants = fmt.Errorf("the phrase has more than %d ways of saying it; use fewer optional parts", MaxVariants)

// expandSeq returns every way of saying a sequence of pieces: the product of its groups.
func expandSeq(seq []piece) ([][]part, error) {
	out := [][]part{nil}
	for _, pc := range seq {
		var choices [][]part
		switch {
		case pc.group != nil:
			var err error
			if choices, err = expandGroup(pc.group); err != nil {
				return nil, err
			}
		case pc.slot != "":
			choices = [][]part{{{slot: pc.slot}}}
		default:
			choices = [][]part{{{text: pc.text}}}
		}
		if len(out)*len(choices) > MaxVariants {
			return nil, errTooManyVariants
		}
		next := make([][]part, 0, len(out)*len(choices))
		for _, prefix := range out {
			for _, c := range choices {
				next = append(next, append(append([]part(nil), prefix...), c...))
			}
		}
		out = next
	}
	return out, nil
}

// tokenize turns one expansion into words and slots. Text that meets across parts is joined
// first, so "light" + "s" is the word "lights".
func tokenize(parts []part) ([]token, error) {
	var toks []token
	var text strings.Builder
	slots := map[string]bool{}
	lastSlot := ""
	flush := func() {
		for _, w := range Words(text.String()) {
			toks = append(toks, token{word: w.Text})
		}
		text.Reset()
	}
	for i, pt := range parts {
		if pt.slot == "" {
			text.WriteString(pt.text)
			continue
		}
		if glued(text.String(), true) || (i+1 < len(parts) && glued(parts[i+1].text, false)) {
			return nil, fmt.Errorf("the slot {%s} must stand apart from the words beside it", pt.slot)
		}
		flush()
		if slots[pt.slot] {
			return nil, fmt.Errorf("the slot {%s} appears twice in one way of saying the phrase", pt.slot)
		}
		if len(toks) > 0 && toks[len(toks)-1].slot != "" {
			return nil, fmt.Errorf("the slots {%s} and {%s} need a word between them", lastSlot, pt.slot)
		}
		slots[pt.slot] = true
		lastSlot = pt.slot
		toks = append(toks, token{slot: pt.slot})
	}
	flush()
	words := 0
	for _, tk := range toks {
		if tk.word != "" {
			words++
		}
	}
	if words == 0 {
		return nil, errors.New("every way of saying the phrase needs at least one word besides its slots")
	}
	return toks, nil
}

// glued reports whether text touches a slot without a separator: at its end (before the slot)
// or at its start (after it).
func glued(text string, atEnd bool) bool {
	if text == "" {
		return false
	}
	var r rune
	if atEnd {
		r, _ = utf8.DecodeLastRuneInString(text)
	} else {
		r, _ = utf8.DecodeRuneInString(text)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Example is the template as a person would say it: optional words kept, the first
// alternative of every choice, each slot written as fill(slot) ("what is ⟨a⟩ plus ⟨b⟩" for
// "[what is | sum] {a} plus {b}"). It is the first way of saying it: expandSeq lists each
// group's alternatives in order, an optional group's nothing last.
func (t Template) Example(fill func(slot string) string) string {
	parts := make([]string, len(t.variants[0]))
	for i, tk := range t.variants[0] {
		parts[i] = tk.word
		if tk.slot != "" {
			parts[i] = fill(tk.slot)
		}
	}
	return strings.Join(parts, " ")
}
