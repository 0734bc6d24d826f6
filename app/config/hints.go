package config

import (
	"fmt"
	"slices"
	"strings"
)

// knownMistakes are keys other clients or habits suggest that mean one of Maven's keys but are
// not another client's spelling of it (those are accepted, with a warning).
var knownMistakes = map[string]string{
	"transport":    "type",
	"uri":          "url",
	"endpoint":     "url",
	"arguments":    "args",
	"environment":  "env",
	"header":       "headers",
	"cmd":          "command",
	"allowedTools": "allow_tools",
	"mcp_servers":  "mcpServers",
	"servers_mcp":  "mcpServers",
}

// didYouMean returns " (did you mean "x"?)" naming the key of allowed that key was most likely
// meant to be, or "" when none is close: the same letters in another case or without _ and -, a
// known mistake, or at most two letters apart.
func didYouMean(key string, allowed []string) string {
	if s := closest(key, allowed); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	switch key {
	case "autoApprove", "alwaysAllow":
		return " (tools are approved on the /tools page, never in the config file)"
	}
	return ""
}

// closest returns the element of allowed that s was most likely meant to be, or "".
func closest(s string, allowed []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, a := range allowed {
		if norm(a) == norm(s) {
			return a
		}
	}
	if m, ok := knownMistakes[s]; ok && slices.Contains(allowed, m) {
		return m
	}
	best, bestDist := "", 3
	if len(s) < 4 {
		bestDist = 2 // short words are all close to each other
	}
	for _, a := range allowed {
		if d := editDistance(norm(s), norm(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
