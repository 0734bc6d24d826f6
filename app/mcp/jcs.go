package mcp

import "maven/internal/jcs"

// RFC 8785 (JCS) canonical JSON, which fingerprints are computed over (docs/design.md#rule-7).
// It is written by internal/jcs, which the owner's limits use too (docs/design.md#rule-33).

// MaxCanonicalDepth is how deeply arrays and objects may nest in JSON given to Canonicalize; a
// hostile schema nested deeper is refused rather than allowed to exhaust the stack.
const MaxCanonicalDepth = jcs.MaxCanonicalDepth

// ErrNotCanonicalizable is wrapped by every Canonicalize error: invalid JSON, duplicate keys,
// invalid UTF-8 or lone surrogates, numbers outside IEEE-754 double, or nesting too deep.
var ErrNotCanonicalizable = jcs.ErrNotCanonicalizable

// Canonicalize returns the RFC 8785 (JCS) canonical form of one JSON value. Input that JCS
// cannot represent faithfully is refused, never repaired: two different inputs must never
// silently share a fingerprint.
func Canonicalize(raw []byte) ([]byte, error) { return jcs.Canonicalize(raw) }

// CanonicalizeValue returns the JCS form of v, a JSON value as encoding/json decodes it into an
// any (see jcs.CanonicalizeValue).
func CanonicalizeValue(v any) ([]byte, error) { return jcs.CanonicalizeValue(v) }
