package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// BeginLogin begins a discoverable sign-in: the browser offers whichever of the owner's passkeys
// it has, user verification required, bound to origin. Passkeys are the only way in
// (docs/design.md#rule-20).
func (s *Service) BeginLogin(ctx context.Context, sid, origin string) (*protocol.CredentialAssertion, error) {
	if sid == "" {
		return nil, ErrNoCeremony
	}
	origin, err := s.checkOrigin(origin)
	if err != nil {
		return nil, err
	}
	assertion, data, err := s.wa.BeginDiscoverableLogin(
		webauthn.WithUserVerification(protocol.VerificationRequired),
		webauthn.WithLoginOrigin(origin),
	)
	if err != nil {
		return nil, fmt.Errorf("begin login: %w", err)
	}
	if err := s.putPending(sid, kindLogin, ceremony{data: *data, expires: s.now().Add(s.cfg.CeremonyTimeout)}); err != nil {
		return nil, err
	}
	return assertion, nil
}

// FinishLogin verifies the browser's answer to the session's pending sign-in and returns the
// passkey that signed in. The pending sign-in is consumed whatever the outcome, including a nil
// resp (the web layer could not parse the answer). The caller then renews the browser session's
// token and records who signed in.
func (s *Service) FinishLogin(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (Passkey, error) {
	c, err := s.takePending(sid, kindLogin)
	if err != nil {
		return Passkey{}, err
	}
	if resp == nil {
		return Passkey{}, errUnreadable
	}
	u, err := s.loadUser(ctx)
	if err != nil {
		return Passkey{}, err
	}
	lookup := func(rawID, userHandle []byte) (webauthn.User, error) {
		if subtle.ConstantTimeCompare(userHandle, u.owner.Handle) != 1 {
			return nil, errors.New("the user handle is not the owner's")
		}
		return u, nil
	}
	p, err := s.verifyAssertion(u, resp, func() (*webauthn.Credential, error) {
		_, cred, err := s.wa.ValidatePasskeyLogin(lookup, c.data, resp)
		return cred, err
	})
	if err != nil {
		return Passkey{}, err
	}
	if err := s.record(ctx, &p, resp); err != nil {
		return Passkey{}, err
	}
	s.log.Info("signed in", "passkey", p.ID)
	return p, nil
}

// BeginStepUp begins a step-up for approval: an assertion by the owner's own passkeys
// (allowCredentials lists them), user verification required, bound to origin and held for this
// session together with the approval. The challenge itself is bound to the approval: 32 random
// bytes followed by SHA-256 of its canonical JSON, so the signed assertion commits to the action,
// every item and each item's digest. An invalid approval fails with ErrUnknownAction.
func (s *Service) BeginStepUp(ctx context.Context, sid, origin string, approval Approval) (*protocol.CredentialAssertion, error) {
	if err := approval.Validate(); err != nil {
		return nil, err
	}
	if sid == "" {
		return nil, ErrNoCeremony
	}
	origin, err := s.checkOrigin(origin)
	if err != nil {
		return nil, err
	}
	u, err := s.loadUser(ctx)
	if err != nil {
		return nil, err
	}
	assertion, data, err := s.wa.BeginLogin(u,
		webauthn.WithUserVerification(protocol.VerificationRequired),
		webauthn.WithLoginOrigin(origin),
		webauthn.WithChallenge(boundChallenge(approval)),
	)
	if err != nil {
		return nil, fmt.Errorf("begin step-up: %w", err)
	}
	if err := s.putPending(sid, kindStepUp, ceremony{
		data: *data, expires: s.now().Add(s.cfg.CeremonyTimeout), approval: approval.canonical(),
	}); err != nil {
		return nil, err
	}
	return assertion, nil
}

// boundChallenge is a step-up challenge bound to approval: fresh randomness, then the
// approval's digest.
func boundChallenge(approval Approval) []byte {
	sum := approval.digest()
	b := make([]byte, challengeNonce, challengeNonce+len(sum))
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return append(b, sum[:]...)
}

// challengeNonce is the random part of a bound challenge (go-webauthn's own size).
const challengeNonce = 32

// FinishStepUp verifies the browser's answer to the session's pending step-up. On success the
// session holds a grant for exactly the approval the step-up was begun for, valid for the
// step-up window from now; Redeem spends it. The pending step-up is consumed whatever the
// outcome (a nil resp included), so a replayed answer fails with ErrNoCeremony.
func (s *Service) FinishStepUp(ctx context.Context, sid string, resp *protocol.ParsedCredentialAssertionData) (Approval, error) {
	c, err := s.takePending(sid, kindStepUp)
	if err != nil {
		return Approval{}, err
	}
	if resp == nil {
		return Approval{}, errUnreadable
	}
	u, err := s.loadUser(ctx)
	if err != nil {
		return Approval{}, err
	}
	// The signed client data carries the challenge; it must still be the one bound to what the
	// grant will allow.
	sum := c.approval.digest()
	if raw, err := base64.RawURLEncoding.DecodeString(c.data.Challenge); err != nil || !bytes.HasSuffix(raw, sum[:]) {
		return Approval{}, fmt.Errorf("%w: step-up challenge is not bound to its approval", ErrVerificationFailed)
	}
	p, err := s.verifyAssertion(u, resp, func() (*webauthn.Credential, error) {
		return s.wa.ValidateLogin(u, c.data, resp)
	})
	if err != nil {
		return Approval{}, err
	}
	if err := s.record(ctx, &p, resp); err != nil {
		return Approval{}, err
	}
	s.addGrant(sid, grant{approval: c.approval, owner: fmt.Sprintf("owner (passkey %d)", p.ID), at: s.now()})
	s.log.Info("step-up verified", "passkey", p.ID, "action", string(c.approval.Action), "items", c.approval.Items)
	return c.approval, nil
}

// verifyAssertion runs validate (the go-webauthn check of signature, challenge, origin, RP ID and
// UV-required) with Maven's own rules around it: this ceremony's authenticator data must carry
// UV, backup eligibility must not have changed, and a signature counter that did not increase
// fails the ceremony instead of only being flagged.
func (s *Service) verifyAssertion(u user, resp *protocol.ParsedCredentialAssertionData, validate func() (*webauthn.Credential, error)) (Passkey, error) {
	flags := resp.Response.AuthenticatorData.Flags
	if !flags.HasUserVerified() {
		return Passkey{}, ErrUserNotVerified
	}
	p, ok := u.passkeyFor(resp.RawID)
	if !ok {
		return Passkey{}, fmt.Errorf("%w: unknown credential %s", ErrVerificationFailed, credentialLabel(resp.RawID))
	}
	if flags.HasBackupEligible() != p.BackupEligible {
		return Passkey{}, fmt.Errorf("%w: passkey %d registered with BE=%v, now BE=%v", ErrBackupEligibilityChanged,
			p.ID, p.BackupEligible, flags.HasBackupEligible())
	}
	cred, err := validate()
	if err != nil {
		return Passkey{}, verificationError("assertion", err)
	}
	if !bytes.Equal(cred.ID, p.CredentialID) {
		return Passkey{}, fmt.Errorf("%w: credential mismatch", ErrVerificationFailed)
	}
	if cred.Authenticator.CloneWarning {
		return Passkey{}, fmt.Errorf("%w: passkey %d stored count %d, presented %d", ErrCloneWarning,
			p.ID, p.SignCount, resp.Response.AuthenticatorData.Counter)
	}
	p.SignCount = cred.Authenticator.SignCount
	p.BackupState = cred.Flags.BackupState
	p.UserVerified = cred.Flags.UserVerified
	return p, nil
}

// record stores the sign count, backup state and time of a verified assertion.
func (s *Service) record(ctx context.Context, p *Passkey, resp *protocol.ParsedCredentialAssertionData) error {
	p.LastUsedAt = s.now()
	err := s.store.RecordAssertion(ctx, p.ID, Assertion{
		SignCount: p.SignCount, BackupState: p.BackupState, UserVerified: p.UserVerified, At: p.LastUsedAt,
	})
	if err != nil {
		return fmt.Errorf("record assertion of passkey %d: %w", p.ID, err)
	}
	return nil
}

// loadUser returns the owner with their passkeys; ErrNoOwner before the first registration.
func (s *Service) loadUser(ctx context.Context) (user, error) {
	owner, err := s.store.Owner(ctx)
	if err != nil {
		return user{}, err
	}
	passkeys, err := s.store.Passkeys(ctx)
	if err != nil {
		return user{}, fmt.Errorf("list passkeys: %w", err)
	}
	if len(passkeys) == 0 {
		return user{}, fmt.Errorf("%w: no passkey registered", ErrNoOwner)
	}
	return user{owner: owner, passkeys: passkeys}, nil
}
