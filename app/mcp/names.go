package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"maven/app/allowlist"
)

// MaxLocalName is the longest local name LocalName returns (rule 11).
const MaxLocalName = 64

// nameSuffixLen is the usual suffix length; it only grows when a suffixed name is itself taken.
const nameSuffixLen = 6

// nameSuffix returns the stable suffix that tells apart (server, tool) pairs whose flattened
// names collide or had to be cut: the first n hex digits of sha256(server + "\x00" + tool),
// usually nameSuffixLen of them.
func nameSuffix(server, tool string, n int) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:n]
}

// LocalName returns the local name of an MCP tool: allowlist.Flatten(server) + "_" +
// allowlist.Flatten(tool) (the reading voice hears names by, docs/design.md#rule-17), an
// empty part read as "x", at most MaxLocalName characters. A name that is too long, or that
// taken reports as held by a different pair, gets "_" + nameSuffix(server, tool, 6), the base
// cut to fit.
//
// taken must return false for a name already held by this same (server, tool) pair, so that a
// refresh gives a tool back its own name; a nil taken means nothing is taken. The result depends
// only on the inputs and on taken's answers, so the same pair gets the same name again. In the
// unlikely case that the suffixed name is taken too (a 24-bit suffix can be brute-forced by a
// server choosing tool names), the suffix grows, 6 hex digits at a time, until it is free.
func LocalName(server, tool string, taken func(name string) bool) string {
	s, t := allowlist.Flatten(server), allowlist.Flatten(tool)
	if s == "" {
		s = "x"
	}
	if t == "" {
		t = "x"
	}
	base := s + "_" + t
	isTaken := func(name string) bool { return taken != nil && taken(name) }
	if len(base) <= MaxLocalName && !isTaken(base) {
		return base
	}
	var name string
	// Even a 60-digit suffix leaves three characters of base.
	for n := nameSuffixLen; n <= 60; n += 6 {
		suffix := nameSuffix(server, tool, n)
		cut := base[:min(len(base), MaxLocalName-1-len(suffix))]
		name = strings.TrimRight(cut, "_") + "_" + suffix
		if !isTaken(name) {
			break
		}
	}
	return name
}
