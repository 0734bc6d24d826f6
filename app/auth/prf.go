package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// PRFAssertion is a verified assertion that asked the authenticator to evaluate its PRF (the
// WebAuthn prf extension), as unlocking the vault and enrolling a passkey in it do.
type PRFAssertion struct {
	Passkey Passkey
	// Input is what the ceremony asked this credential's PRF to evaluate; nil when it asked it
	// nothing (the vault holds no slot for that passkey).
	Input []byte
	// Output is the client's PRF result for Input. It is a client extension output, not covered
	// by the authenticator's signature, so only a key wrap that opens with it proves it genuine.
	// Nil when the client sent none. The caller zeroes it after use.
	Output []byte
}

// BeginUnlock begins the assertion that unlocks the vault: every passkey of the owner is allowed
// (so one without PRF can still answer and be told it cannot unlock), user verification is
// required, and each credential in inputs (keyed by unpadded base64url credential ID, the shape
// of evalByCredential) is asked to evaluate its PRF over its own input. The inputs travel in the
// options only: go-webauthn's SessionData records that PRF was requested, never the values.
func (s *Service) BeginUnlock(ctx context.Context, sid, origin string, inputs map[string][]byte) (*protocol.CredentialAssertion, error) {
	u, err := s.loadUser(ctx)
	if err != nil {
		return nil, err
	}
	return s.beginPRF(sid, origin, kindUnlock, u, nil, inputs)
}

// FinishUnlock verifies the answer to the session's pending unlock assertion like a step-up
// (signature, challenge, origin, UV on this ceremony, backup eligibility, counter) and returns
// the passkey with its PRF input and the client's output. It does not unlock anything: the
// caller hands the output to the vault, which is the check that it is genuine. The pending
// ceremony is consumed whatever the outcome.
func (s *Service) FinishUnlock(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (PRFAssertion, error) {
	return s.finishPRF(ctx, sid, kindUnlock, resp)
}

// BeginEnroll begins an assertion by one passkey (allowCredentials lists only it) that evaluates
// its PRF over input, so the vault can wrap its data key for that passkey. ErrPasskeyNotFound if
// there is no such passkey.
func (s *Service) BeginEnroll(ctx context.Context, sid, origin string, passkeyID int64, input []byte) (*protocol.CredentialAssertion, error) {
	if len(input) == 0 {
		return nil, fmt.Errorf("begin enroll: empty PRF input")
	}
	u, err := s.loadUser(ctx)
	if err != nil {
		return nil, err
	}
	var only *Passkey
	for i := range u.passkeys {
		if u.passkeys[i].ID == passkeyID {
			only = &u.passkeys[i]
		}
	}
	if only == nil {
		return nil, ErrPasskeyNotFound
	}
	key := credentialLabel(only.CredentialID)
	return s.beginPRF(sid, origin, kindEnroll, u, only, map[string][]byte{key: input})
}

// FinishEnroll verifies the answer to the session's pending enroll assertion; see FinishUnlock.
func (s *Service) FinishEnroll(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (PRFAssertion, error) {
	return s.finishPRF(ctx, sid, kindEnroll, resp)
}

// beginPRF begins an assertion of kind for the owner u, by only (or, when nil, by any of u's
// passkeys), asking each credential that has an entry in inputs to evaluate its PRF over it.
func (s *Service) beginPRF(sid, origin string, kind ceremonyKind, u user, only *Passkey, inputs map[string][]byte) (*protocol.CredentialAssertion, error) {
	if sid == "" {
		return nil, ErrNoCeremony
	}
	origin, err := s.checkOrigin(origin)
	if err != nil {
		return nil, err
	}
	allowed := u.passkeys
	if only != nil {
		allowed = []Passkey{*only}
	}
	// evalByCredential may only name allowed credentials; a slot whose passkey is gone is
	// skipped rather than failing the ceremony.
	byCred := map[string]protocol.PRFValues{}
	kept := map[string][]byte{}
	descriptors := make([]protocol.CredentialDescriptor, 0, len(allowed))
	for _, p := range allowed {
		cred := toCredential(p)
		descriptors = append(descriptors, cred.Descriptor())
		key := credentialLabel(p.CredentialID)
		if in, ok := inputs[key]; ok && len(in) > 0 {
			byCred[key] = protocol.PRFValues{First: bytes.Clone(in)}
			kept[key] = bytes.Clone(in)
		}
	}
	opts := []webauthn.LoginOption{
		webauthn.WithUserVerification(protocol.VerificationRequired),
		webauthn.WithLoginOrigin(origin),
		webauthn.WithAllowedCredentials(descriptors),
	}
	if len(byCred) > 0 {
		opts = append(opts, webauthn.WithAssertionExtensions(webauthn.WithExtensionPRFByCredential(byCred, nil)))
	}
	assertion, data, err := s.wa.BeginLogin(u, opts...)
	if err != nil {
		return nil, fmt.Errorf("begin %s: %w", kind, err)
	}
	if err := s.putPending(sid, kind, ceremony{data: *data, expires: s.now().Add(s.cfg.CeremonyTimeout), prfInputs: kept}); err != nil {
		return nil, err
	}
	return assertion, nil
}

func (s *Service) finishPRF(ctx context.Context, sid string, kind ceremonyKind, resp *protocol.ParsedCredentialAssertionData) (PRFAssertion, error) {
	c, err := s.takePending(sid, kind)
	if err != nil {
		return PRFAssertion{}, err
	}
	if resp == nil {
		return PRFAssertion{}, errUnreadable
	}
	u, err := s.loadUser(ctx)
	if err != nil {
		return PRFAssertion{}, err
	}
	p, err := s.verifyAssertion(u, resp, func() (*webauthn.Credential, error) {
		return s.wa.ValidateLogin(u, c.data, resp)
	})
	if err != nil {
		return PRFAssertion{}, err
	}
	if err := s.record(ctx, &p, resp); err != nil {
		return PRFAssertion{}, err
	}
	out := PRFAssertion{Passkey: p, Input: c.prfInputs[base64.RawURLEncoding.EncodeToString(p.CredentialID)]}
	if prf := resp.ClientExtensionResults.PRF; out.Input != nil && prf != nil && prf.Results != nil {
		out.Output = bytes.Clone(prf.Results.First)
		clear(prf.Results.First)
	}
	s.log.Info("prf assertion verified", "ceremony", string(kind), "passkey", p.ID,
		"credential", credentialLabel(p.CredentialID), "prf_output", out.Output != nil)
	return out, nil
}
