package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"maven/app/activity"
	"maven/app/reveal"
)

// MaxPasskeyNameLen is the longest passkey name, in characters.
const MaxPasskeyNameLen = 64

// BeginSetup begins registering a passkey through a setup link. The first call of a session
// uses token for good; later calls of the same session (a retry after the browser failed) may
// pass "". The returned options go to navigator.credentials.create as they are.
func (s *Service) BeginSetup(ctx context.Context, sid, origin, token string) (*protocol.CredentialCreation, error) {
	if sid == "" {
		return nil, ErrNoCeremony
	}
	if err := s.redeemSetup(ctx, sid, token); err != nil {
		return nil, err
	}
	return s.beginRegistration(ctx, sid, origin, purposeSetup)
}

// BeginAddPasskey begins registering another passkey for the signed-in owner; proof must be a
// step-up for ActionAddPasskey that the handler redeemed for this session.
func (s *Service) BeginAddPasskey(ctx context.Context, sid, origin string, proof StepUp) (*protocol.CredentialCreation, error) {
	if !proof.Approves(ActionAddPasskey, Item{}) {
		return nil, ErrStepUpRequired
	}
	return s.beginRegistration(ctx, sid, origin, purposeAdd)
}

// beginRegistration asks for a discoverable, user-verified credential (docs/design.md#rule-20),
// excluding the passkeys already registered, and probes PRF support (the vault unlocks with PRF).
// If the browser fails with PRF requested, maven.js retries once with the same options minus the
// probe: a requested extension that is not answered is fine, so the same ceremony serves both
// attempts.
func (s *Service) beginRegistration(ctx context.Context, sid, origin string, purpose registrationPurpose) (*protocol.CredentialCreation, error) {
	if sid == "" {
		return nil, ErrNoCeremony
	}
	origin, err := s.checkOrigin(origin)
	if err != nil {
		return nil, err
	}
	owner, err := s.store.EnsureOwner(ctx, Owner{Handle: randomHandle(), CreatedAt: s.now()})
	if err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	passkeys, err := s.store.Passkeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	u := user{owner: owner, passkeys: passkeys}
	exclude := make([]protocol.CredentialDescriptor, 0, len(passkeys))
	for _, c := range u.WebAuthnCredentials() {
		exclude = append(exclude, c.Descriptor())
	}
	creation, data, err := s.wa.BeginRegistration(u,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		}),
		webauthn.WithExclusions(exclude),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation),
		webauthn.WithRegistrationOrigin(origin),
		webauthn.WithExtensions(webauthn.WithExtensionPRFSupport(), webauthn.WithExtensionCredProps()),
	)
	if err != nil {
		return nil, fmt.Errorf("begin registration: %w", err)
	}
	if err := s.putPending(sid, kindRegister, ceremony{data: *data, expires: s.now().Add(s.cfg.CeremonyTimeout), purpose: purpose}); err != nil {
		return nil, err
	}
	return creation, nil
}

// FinishRegistration verifies the browser's answer to the session's pending registration and
// stores the new passkey under name ("" picks one). The pending registration is consumed
// whatever the outcome, including a nil resp (the web layer could not parse the answer). A setup registration also needs the session's setup link to be still in
// time, and spends it on success.
func (s *Service) FinishRegistration(ctx context.Context, sid string, resp *protocol.ParsedCredentialCreationData, name string) (Passkey, error) {
	c, err := s.takePending(sid, kindRegister)
	if err != nil {
		return Passkey{}, err
	}
	if resp == nil {
		return Passkey{}, errUnreadable
	}
	if c.purpose == purposeSetup && !s.setupAllowed(sid) {
		return Passkey{}, ErrSetupLinkInvalid
	}
	name, err = cleanName(name)
	if err != nil {
		return Passkey{}, err
	}
	owner, err := s.store.Owner(ctx)
	if err != nil {
		return Passkey{}, fmt.Errorf("owner: %w", err)
	}
	passkeys, err := s.store.Passkeys(ctx)
	if err != nil {
		return Passkey{}, fmt.Errorf("list passkeys: %w", err)
	}
	if !resp.Response.AttestationObject.AuthData.Flags.HasUserVerified() {
		return Passkey{}, ErrUserNotVerified
	}
	cred, err := s.wa.CreateCredential(user{owner: owner, passkeys: passkeys}, c.data, resp)
	if err != nil {
		return Passkey{}, verificationError("registration", err)
	}
	if name == "" {
		name = fmt.Sprintf("Passkey %d", len(passkeys)+1)
	}
	p := Passkey{
		CredentialID:      cred.ID,
		PublicKey:         cred.PublicKey,
		AttestationType:   cred.AttestationType,
		AttestationFormat: cred.AttestationFormat,
		AAGUID:            cred.Authenticator.AAGUID,
		Attachment:        string(cred.Authenticator.Attachment),
		SignCount:         cred.Authenticator.SignCount,
		BackupEligible:    cred.Flags.BackupEligible,
		BackupState:       cred.Flags.BackupState,
		UserVerified:      cred.Flags.UserVerified,
		PRFEnabled:        cred.Extensions.PRFEnabled,
		Name:              name,
		CreatedAt:         s.now(),
	}
	for _, t := range cred.Transport {
		p.Transports = append(p.Transports, string(t))
	}
	if err := s.store.InsertPasskey(ctx, &p); err != nil {
		if errors.Is(err, ErrDuplicatePasskey) {
			return Passkey{}, err
		}
		return Passkey{}, fmt.Errorf("store passkey: %w", err)
	}
	s.passkeySets.Add(1)
	if c.purpose == purposeSetup {
		s.endSetup(sid)
	}
	s.log.Info("passkey registered", "passkey", p.ID, "credential", credentialLabel(p.CredentialID),
		"purpose", string(c.purpose), "prf", p.CanUnlock(), "backup_eligible", p.BackupEligible)
	via := map[registrationPurpose]string{purposeSetup: "a setup link", purposeAdd: "the passkeys page"}[c.purpose]
	s.recordEvent(ctx, "owner", activity.ActionPasskeyAdded, map[string]any{"passkey": p.ID, "passkey_name": p.Name, "via": via,
		"credential": credentialLabel(p.CredentialID), "can_unlock": p.CanUnlock()})
	return p, nil
}

// cleanName trims a passkey name and refuses one that is too long or holds hidden characters;
// "" stays "" (the caller picks a default).
func cleanName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case !utf8.ValidString(name):
		return "", fmt.Errorf("%w: not valid text", ErrInvalidName)
	case utf8.RuneCountInString(name) > MaxPasskeyNameLen:
		return "", fmt.Errorf("%w: longer than %d characters", ErrInvalidName, MaxPasskeyNameLen)
	case reveal.Contains(name) || strings.ContainsAny(name, "\n\t"):
		return "", fmt.Errorf("%w: holds invisible or control characters", ErrInvalidName)
	}
	return name, nil
}
