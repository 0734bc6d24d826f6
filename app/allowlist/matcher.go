package allowlist

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrNoMatch means no enabled row's spoken name starts the utterance.
var ErrNoMatch = errors.New("no enabled tool matches")

// AmbiguousError means the longest spoken name that matched belongs to more than one enabled
// row; the caller asks which one instead of guessing.
type AmbiguousError struct {
	Spoken     string
	Candidates []Tool
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%q matches %d enabled tools", e.Spoken, len(e.Candidates))
}

// Match is an utterance resolved to one enabled row.
type Match struct {
	Tool Tool
	// Spoken is the normalised spoken name that matched, e.g. "vikunja list tasks".
	Spoken string
	// Tail is the rest of the utterance, as said, for positional binding.
	Tail string
}

// Matcher maps utterances to enabled rows by the longest spoken name at the start of the
// utterance (docs/design.md#rule-17). It is immutable; build a new one when the rows change.
type Matcher struct {
	root  *matchNode
	names []string // every spoken name, for suggestions
}

type matchNode struct {
	next  map[string]*matchNode
	tools []Tool // rows whose spoken name ends here
}

// NewMatcher indexes the enabled rows among rows. Each row is reachable by its own spoken name
// (an MCP row by its tool name, a local command by its row name, '_' and '-' read as spaces)
// and, for MCP rows, by that name preceded by the server's name.
func NewMatcher(rows []Tool) *Matcher {
	m := &Matcher{root: &matchNode{}}
	for _, t := range rows {
		if t.State != StateEnabled {
			continue
		}
		own := t.Name
		if t.IsMCP() {
			own = t.RemoteName()
		}
		m.add(SpokenWords(own), t)
		if t.IsMCP() {
			m.add(append(SpokenWords(t.Server()), SpokenWords(own)...), t)
		}
	}
	return m
}

func (m *Matcher) add(words []string, t Tool) {
	if len(words) == 0 {
		return
	}
	n := m.root
	for _, w := range words {
		child := n.next[w]
		if child == nil {
			if n.next == nil {
				n.next = make(map[string]*matchNode)
			}
			child = &matchNode{}
			n.next[w] = child
		}
		n = child
	}
	for _, have := range n.tools {
		if have.ID == t.ID {
			return
		}
	}
	if len(n.tools) == 0 {
		m.names = append(m.names, strings.Join(words, " "))
	}
	n.tools = append(n.tools, t)
}

// Names returns every spoken name the matcher knows, in indexing order.
func (m *Matcher) Names() []string { return m.names }

// Match resolves an utterance. It returns ErrNoMatch, or an *AmbiguousError when the longest
// matching name belongs to several rows.
func (m *Matcher) Match(utterance string) (Match, error) {
	n := m.root
	var best *matchNode
	bestEnd, bestWords := 0, 0
	i, words := 0, 0
	for n != nil {
		word, end, ok := nextWord(utterance, i)
		if !ok {
			break
		}
		n = n.next[word]
		if n == nil {
			break
		}
		words++
		i = end
		if len(n.tools) > 0 {
			best, bestEnd, bestWords = n, end, words
		}
	}
	if best == nil {
		return Match{}, ErrNoMatch
	}
	spoken := strings.Join(firstWords(utterance, bestWords), " ")
	if len(best.tools) > 1 {
		return Match{}, &AmbiguousError{Spoken: spoken, Candidates: append([]Tool(nil), best.tools...)}
	}
	return Match{Tool: best.tools[0], Spoken: spoken, Tail: cleanTail(utterance[bestEnd:])}, nil
}

// SpokenWords normalises text the way the matcher hears it: lower case, and every run of
// characters that are not letters or digits (punctuation, '_', '-', spaces) separates words.
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

func firstWords(s string, n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; {
		w, end, ok := nextWord(s, i)
		if !ok {
			break
		}
		out = append(out, w)
		i = end
	}
	return out
}

// nextWord returns the next lower-cased word of s at or after byte i and the byte offset just
// past it.
func nextWord(s string, i int) (word string, end int, ok bool) {
	start := -1
	for j, r := range s[i:] {
		isWord := unicode.IsLetter(r) || unicode.IsDigit(r)
		if start < 0 {
			if isWord {
				start = i + j
			}
			continue
		}
		if !isWord {
			return lowerASCIIFast(s[start : i+j]), i + j, true
		}
	}
	if start < 0 {
		return "", len(s), false
	}
	return lowerASCIIFast(s[start:]), len(s), true
}

// lowerASCIIFast avoids an allocation for words that are already lower case.
func lowerASCIIFast(w string) string {
	for _, r := range w {
		if r >= 'A' && r <= 'Z' || r > unicode.MaxASCII {
			return strings.ToLower(w)
		}
	}
	return w
}

// cleanTail trims the separators and closing punctuation a transcript puts around arguments.
func cleanTail(s string) string {
	s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",:;", r) })
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(".!?,;", r) })
}
