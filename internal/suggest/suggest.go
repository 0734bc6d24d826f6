// Package suggest finds what a mistyped word was most likely meant to be, for the
// "did you mean …?" of the config file and the command line.
package suggest

import "strings"

// Closest returns the element of candidates that s was most likely meant to be, or "" when none
// is close: the same letters in another case or without _ and -, or, once those are ignored, at
// most two edits apart (one for words under four letters, which are all close to each other).
func Closest(s string, candidates []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return c
		}
	}
	best, bestDist := "", 3
	if len(s) < 4 {
		bestDist = 2
	}
	for _, c := range candidates {
		if d := Distance(norm(s), norm(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, counted in characters (runes), so a
// spoken name with an accent is one edit from its plain spelling.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
