package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSecretNotSet is wrapped by the errors of Expand and Server.Expanded when a referenced
// secret has no value, because the vault is locked or the secret was never set.
var ErrSecretNotSet = errors.New("secret not set")

// refOpen starts a secret reference, ${secret:NAME}.
const refOpen = "${secret:"

// MaxSecretNameLen is the longest secret name a reference may use.
const MaxSecretNameLen = 64

// ref is one well-formed reference: s[start:end] is "${secret:name}".
type ref struct {
	start, end int
	name       string
}

// findRefs returns the secret references in s, or a message describing the first malformed
// one. Any other "${" was dealt with when the file was read (see expandVars): what is left is
// text for the server, such as a variable its own env defines.
func findRefs(s string) ([]ref, string) {
	var refs []ref
	for i := 0; ; {
		j := strings.Index(s[i:], refOpen)
		if j < 0 {
			return refs, ""
		}
		start := i + j
		rest := s[start:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return nil, fmt.Sprintf("unterminated secret reference %s; write ${secret:NAME}", quoteValue(rest))
		}
		name := rest[len(refOpen):end]
		if !validSecretName(name) {
			return nil, fmt.Sprintf("malformed secret reference %s: the name must be 1 to %d of A-Z a-z 0-9 _ . -", quoteValue(rest[:end+1]), MaxSecretNameLen)
		}
		refs = append(refs, ref{start: start, end: start + end + 1, name: name})
		i = start + end + 1
	}
}

// validSecretName reports whether name matches [A-Za-z0-9_.-]{1,64}.
func validSecretName(name string) bool {
	if name == "" || len(name) > MaxSecretNameLen {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// replaceRefs returns s with each reference replaced by repl(i, name), i counting from 0.
func replaceRefs(s string, refs []ref, repl func(i int, name string) string) string {
	if len(refs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for i, r := range refs {
		b.WriteString(s[last:r.start])
		b.WriteString(repl(i, r.name))
		last = r.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Expand returns s with every ${secret:NAME} replaced by lookup(NAME). lookup hands over values
// Expand owns: each is zeroed once copied into the result. Substituted values are not scanned
// again, so a secret that happens to contain "${secret:…}" stays as it is. A missing secret is
// an error naming it that wraps ErrSecretNotSet; a malformed reference is an error too.
func Expand(s string, lookup func(name string) ([]byte, bool)) (string, error) {
	refs, msg := findRefs(s)
	if msg != "" {
		return "", errorf("", msg)
	}
	if len(refs) == 0 {
		return s, nil
	}
	vals := make([][]byte, len(refs))
	defer func() {
		for _, v := range vals {
			clear(v)
		}
	}()
	size := len(s)
	for i, r := range refs {
		v, ok := lookup(r.name)
		vals[i] = v
		if !ok {
			return "", &Error{Msg: fmt.Sprintf("secret %q is not set", r.name), Err: ErrSecretNotSet}
		}
		size += len(v) - (r.end - r.start)
	}
	// Built in one buffer of the right size, zeroed afterwards, so the result is the one copy
	// of the values left.
	buf := make([]byte, 0, size)
	defer clear(buf[:size])
	last := 0
	for i, r := range refs {
		buf = append(buf, s[last:r.start]...)
		buf = append(buf, vals[i]...)
		last = r.end
	}
	buf = append(buf, s[last:]...)
	return string(buf), nil
}
