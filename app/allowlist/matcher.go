package allowlist

import (
	"errors"
	"fmt"
	"slices"
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
	Tail       string // the rest of the utterance, as said (Match.Tail)
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
	name  string // the spoken name that ends here, once a row's does
	tools []Tool // rows whose spoken name ends here
}

// IsArticle reports whether a word is an article, which is no part of a spoken name, in the
// names as in what is heard: "run the backup" reaches run_backup, get_the_weather is "get
// weather".
func IsArticle(w string) bool { return w == "the" || w == "a" || w == "an" }

// NewMatcher indexes the enabled rows among rows. Each row is reachable by its own spoken name
// (an MCP row by its tool name, a local command by its row name, '_' and '-' read as spaces,
// articles left out) and, for MCP rows, by that name preceded by the server's name.
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
	words = slices.DeleteFunc(words, IsArticle)
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
		n.name = strings.Join(words, " ")
		m.names = append(m.names, n.name)
	}
	n.tools = append(n.tools, t)
}

// Names returns every spoken name the matcher knows, in indexing order.
func (m *Matcher) Names() []string { return m.names }

// Match resolves an utterance. It returns ErrNoMatch, or an *AmbiguousError when the longest
// matching name belongs to several rows. Articles between the words of a name are passed over.
func (m *Matcher) Match(utterance string) (Match, error) {
	n := m.root
	var best *matchNode
	bestEnd := 0
	for i := 0; n != nil; {
		word, end, ok := nextWord(utterance, i)
		if !ok {
			break
		}
		i = end
		if IsArticle(word) {
			continue
		}
		if n = n.next[word]; n != nil && len(n.tools) > 0 {
			best, bestEnd = n, end
		}
	}
	if best == nil {
		return Match{}, ErrNoMatch
	}
	if len(best.tools) > 1 {
		return Match{}, &AmbiguousError{Spoken: best.name, Candidates: append([]Tool(nil), best.tools...),
			Tail: cleanTail(utterance[bestEnd:])}
	}
	return Match{Tool: best.tools[0], Spoken: best.name, Tail: cleanTail(utterance[bestEnd:])}, nil
}

// cleanTail trims the separators and closing punctuation a transcript puts around arguments.
func cleanTail(s string) string {
	s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(",:;", r) })
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(".!?,;", r) })
}
