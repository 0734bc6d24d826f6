package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

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

// sealNudge warns at key when value, held under name, is a credential kept in the clear: name
// looks like a credential's (SecretLike) and value refers to no sealed secret. why says where
// it shows, and the warning how to seal it, as secret. It is the one rule for env, headers and
// an OAuth client secret.
func (d *decoder) sealNudge(key, name, value, why, secret string) {
	if value == "" || !SecretLike(name) || strings.Contains(value, refOpen) {
		return
	}
	write := "${secret:" + secret + "}"
	if scheme, _, ok := strings.Cut(value, " "); ok && slices.Contains([]string{"bearer", "basic", "token"}, strings.ToLower(scheme)) {
		write = scheme + " " + write
	}
	d.warnf(key, fmt.Sprintf("%s; seal it with `maven secret set %s` and write %q", why, secret, write))
}

// underHeaders reports whether key is a header of a server.
func underHeaders(key string) bool {
	return strings.Contains(key, ".headers.") || strings.Contains(key, ".headers[")
}

// topKeyHint says what to write instead of an unknown top-level key that is something Maven
// reads elsewhere: a server's entry or a server's keys pasted at the top, Continue's settings.
func topKeyHint(key string, raw json.RawMessage) string {
	if slices.Contains(serverKeys, key) {
		return fmt.Sprintf(` (it is a server's key: name the server under mcpServers, {"mcpServers": {"NAME": {%q: …}}})`, key)
	}
	if key == "experimental" {
		return ` (Continue's settings: each of its modelContextProtocolServers is a server of mcpServers here, by name, {"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}})`
	}
	var entry map[string]json.RawMessage
	if kind(raw) == '{' && json.Unmarshal(raw, &entry) == nil {
		for _, k := range []string{"command", "url", "serverUrl", "httpUrl"} {
			if _, ok := entry[k]; ok {
				return fmt.Sprintf(` (it looks like a server: put it under mcpServers, {"mcpServers": {%q: {…}}})`, key)
			}
		}
	}
	return ""
}

// continueList is the error for mcpServers written as a list, as Continue writes it.
func continueList(raw json.RawMessage) string {
	name := "NAME"
	var entries []map[string]json.RawMessage
	if json.Unmarshal(raw, &entries) == nil && len(entries) > 0 {
		var n string
		if json.Unmarshal(entries[0]["name"], &n) == nil && n != "" {
			name = n
		}
	}
	return fmt.Sprintf(`expected an object of servers by name, got a list, as Continue writes it; put each under its name: {"mcpServers": {%q: {"command": "…", "args": ["…"]}}}`, name)
}

// yamlLine is a line as YAML starts one: a key and a colon, or a list item.
var yamlLine = regexp.MustCompile(`^(---\s*$|- |[A-Za-z_][A-Za-z0-9_-]*:(\s|$))`)

// yamlHint is said after a syntax error in a file that looks like YAML (Continue's config.yaml,
// a compose file), "" otherwise.
func yamlHint(data []byte) string {
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if yamlLine.Match(line) {
			return `. This looks like YAML; Maven reads JSON (comments allowed): {"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}}`
		}
		return ""
	}
	return ""
}
