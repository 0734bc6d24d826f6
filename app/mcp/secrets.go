package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"

	"maven/app/config"
	"maven/app/reveal"
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
		// Locked, and the last session's errors are masked and recorded: forget the values.
		s.mu.Lock()
		for _, v := range s.secretVals {
			clear(v)
		}
		s.secretVals = nil
		s.mu.Unlock()
		return config.Server{}, gen, fmt.Errorf("the vault is locked: %w", ErrLocked)
	}
	var fresh [][]byte
	for _, name := range s.cfg.SecretRefs() {
		if v, ok := lookup(name); ok && len(v) > 0 {
			fresh = append(fresh, v, escaped(url.QueryEscape, v), escaped(url.PathEscape, v))
		}
	}
	s.mu.Lock()
	// Values used before stay masked too: an error may outlive a rotation.
	vals := append(s.secretVals, fresh...)
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(vals, func(a, b []byte) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(a, b)
	})
	// Each value is a buffer of its own: a duplicate is zeroed as it is dropped.
	kept := vals[:0]
	for _, v := range vals {
		if len(kept) > 0 && bytes.Equal(kept[len(kept)-1], v) {
			clear(v)
			continue
		}
		kept = append(kept, v)
	}
	s.secretVals = kept
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

// escaped returns v as escape writes it, in a buffer of its own; v is read in place, not copied.
func escaped(escape func(string) string, v []byte) []byte {
	return []byte(escape(unsafe.String(unsafe.SliceData(v), len(v))))
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
	return reveal.CutError(string(s.maskSecrets([]byte(err.Error()))), maxErrorText)
}

// maskSecrets replaces in msg every secret value the server was given.
func (s *supervisor) maskSecrets(msg []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.secretVals {
		msg = bytes.ReplaceAll(msg, v, []byte("***"))
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

// SetSecrets installs the secret lookup, or removes it with nil (the vault was locked). It never
// blocks on a server: unlocking only arms a timer, on whose goroutine the supervisors waiting
// for a secret are found and signalled, and they dial on their own goroutines; locking ends the
// sessions of servers that use secrets at once, so no further call reaches them, and they go
// back to locked, zeroing the secret values they kept to mask errors. lookup is called from the
// supervisors' goroutines; its values belong to the caller, who zeroes them.
func (m *Manager) SetSecrets(lookup func(name string) ([]byte, bool)) {
	m.mu.Lock()
	m.secrets = lookup
	m.secretsGen++
	m.mu.Unlock()
	if lookup != nil {
		// Waking every supervisor at the instant of an unlock makes them all read secrets and
		// dial while the unlock answer is still being written, on the same few cores; a short
		// delay lets the owner's answer go first, and the wakes are spread over the jitter. The
		// answer waits for nothing per server: not a timer each, nor even the loop that finds
		// them, which runs on the timer's goroutine.
		time.AfterFunc(dialSpreadDelay, m.wakeSecretUsers)
		return
	}
	for _, s := range m.secretUsers() {
		s.lock()
		s.signal()
	}
}

// wakeSecretUsers signals the supervisors of the servers that use secrets, spread over the
// jitter. Each looks at the secrets as they are when it wakes: after a lock that came in
// between, it finds none and stays locked.
func (m *Manager) wakeSecretUsers() {
	if sups := m.secretUsers(); len(sups) > 0 {
		wakeSpread(sups)
	}
}

// secretUsers returns the supervisors of the servers that need a secret or have their OAuth
// sign-in sealed in the vault. Loaded after the secrets changed: a server Reconfigure adds later
// starts with them.
func (m *Manager) secretUsers() []*supervisor {
	all := m.servers.Load().list()
	out := make([]*supervisor, 0, len(all))
	for _, s := range all {
		if s.needsSecrets || s.sealedAuth.Load() {
			out = append(out, s)
		}
	}
	return out
}

// wakeSpread signals sups in a random order, spread evenly over dialSpreadJitter.
func wakeSpread(sups []*supervisor) {
	gap := dialSpreadJitter / time.Duration(len(sups))
	for i, j := range rand.Perm(len(sups)) {
		if i > 0 {
			time.Sleep(gap)
		}
		sups[j].signal()
	}
}

// lookup returns the current secret lookup (nil when locked) and its generation.
func (m *Manager) lookup() (func(string) ([]byte, bool), uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.secrets, m.secretsGen
}

func (m *Manager) generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.secretsGen
}
