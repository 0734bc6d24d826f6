package phrases

// Match is a template matched against a whole utterance.
type Match struct {
	// Values holds, for each slot said, the words it took as said ("Hello, World", "3.5").
	Values map[string]string
	// Literal counts the template's own words that matched: the more, the more specific.
	Literal int
}

// Match matches the whole utterance (already split into words) against every way of saying
// the template and keeps the most specific match. A slot takes at least one word; where it
// could take more, it takes the fewest that let the rest match.
func (t Template) Match(utterance string, words []Word) (Match, bool) {
	best, found := Match{}, false
	for _, toks := range t.variants {
		spans := map[string][2]int{}
		if !matchAt(toks, words, spans) {
			continue
		}
		literal := 0
		for _, tk := range toks {
			if tk.word != "" {
				literal++
			}
		}
		if found && literal <= best.Literal {
			continue
		}
		values := make(map[string]string, len(spans))
		for slot, s := range spans {
			values[slot] = spanText(utterance, words, s[0], s[1])
		}
		best, found = Match{Values: values, Literal: literal}, true
	}
	return best, found
}

// matchAt reports whether toks match all of words, recording each slot's span of words.
func matchAt(toks []token, words []Word, spans map[string][2]int) bool {
	return matchFrom(toks, 0, words, 0, spans)
}

func matchFrom(toks []token, ti int, words []Word, wi int, spans map[string][2]int) bool {
	if ti == len(toks) {
		return wi == len(words)
	}
	tk := toks[ti]
	if tk.word != "" {
		return wi < len(words) && words[wi].Text == tk.word && matchFrom(toks, ti+1, words, wi+1, spans)
	}
	if wi >= len(words) {
		return false
	}
	if ti+1 == len(toks) {
		spans[tk.slot] = [2]int{wi, len(words)}
		return true
	}
	// Slots never stand side by side (tokenize refuses it), so a word follows this one.
	next := toks[ti+1].word
	for k := wi + 1; k < len(words); k++ {
		if words[k].Text != next {
			continue
		}
		spans[tk.slot] = [2]int{wi, k}
		if matchFrom(toks, ti+1, words, k, spans) {
			return true
		}
	}
	delete(spans, tk.slot)
	return false
}

// spanText is the utterance as said from word a up to word b (exclusive), with a sign written
// right before the first word ("-3").
func spanText(utterance string, words []Word, a, b int) string {
	start, end := words[a].Start, words[b-1].End
	if start > 0 && (utterance[start-1] == '-' || utterance[start-1] == '+') &&
		(start == 1 || utterance[start-2] == ' ') {
		start--
	}
	return utterance[start:end]
}
