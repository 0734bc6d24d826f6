package config

import (
	"fmt"
	"slices"

	"maven/internal/suggest"
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
// meant to be (a known mistake, or see suggest.Closest), or "" when none is close.
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
	if m, ok := knownMistakes[s]; ok && slices.Contains(allowed, m) {
		return m
	}
	return suggest.Closest(s, allowed)
}
