package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"maven/app/config"
)

// resolve returns the server's config with secrets expanded and the secrets generation it
// used. It fails with ErrLocked while a needed secret is unavailable. Every value it expands is
// remembered, to be masked in errors from then on.
func (s *supervisor) resolve() (config.Server, uint64, error) {
	lookup, gen := s.m.lookup()
	if !s.needsSecrets {
		return s.cfg, gen, nil
	}
	if lookup == nil {
		return config.Server{}, gen, fmt.Errorf("the vault is locked: %w", ErrLocked)
	}
	s.mu.Lock()
	// Values used before stay masked too: an error may outlive a rotation.
	vals := slices.Clone(s.secretVals)
	s.mu.Unlock()
	for _, name := range s.cfg.SecretRefs() {
		if v, ok := lookup(name); ok && v != "" {
			vals = append(vals, v, url.QueryEscape(v), url.PathEscape(v))
		}
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(vals, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	vals = slices.Compact(vals)
	s.mu.Lock()
	s.secretVals = vals
	s.mu.Unlock()
	cfg, err := s.cfg.Expanded(lookup)
	if errors.Is(err, config.ErrSecretNotSet) {
		return config.Server{}, gen, fmt.Errorf("%w: %w", ErrLocked, err)
	}
	if err != nil {
		return config.Server{}, gen, err
	}
	return cfg, gen, nil
}

// secretsChanged reports whether new secrets make the session's config stale: the vault was
// locked, a secret went missing, or a value it uses changed.
func (s *supervisor) secretsChanged(inUse config.Server, gen *uint64) bool {
	if !s.needsSecrets {
		return false
	}
	cfg, newGen, err := s.resolve()
	if err != nil {
		return true
	}
	if !reflect.DeepEqual(cfg, inUse) {
		s.logger.Info("mcp server secrets changed; reconnecting")
		return true
	}
	*gen = newGen
	return false
}

// lockedReason is the LastError of a locked server: empty while the vault is locked, the
// missing secret's name when it is open.
func lockedReason(err error) string {
	if errors.Is(err, config.ErrSecretNotSet) {
		return strings.TrimPrefix(err.Error(), ErrLocked.Error()+": ")
	}
	return ""
}

// maxErrorText bounds an error message kept as LastError, logged, or returned by CallTool: a
// server writes the message of its JSON-RPC errors, and may make it megabytes long.
const maxErrorText = 1024

// errText is err's message with every secret value masked: errors of HTTP clients quote the
// URL they were given, and the status page and logs must never show a secret. It is cut to
// maxErrorText bytes, after masking so that no part of a secret survives the cut.
func (s *supervisor) errText(err error) string {
	msg := err.Error()
	s.mu.Lock()
	vals := s.secretVals
	s.mu.Unlock()
	for _, v := range vals {
		msg = strings.ReplaceAll(msg, v, "***")
	}
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + " [cut]"
	}
	return msg
}

// mask returns err with the message of errText, still matching what err matches.
func (s *supervisor) mask(err error) error {
	return &maskedError{msg: s.errText(err), err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
