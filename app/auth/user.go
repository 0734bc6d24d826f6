package auth

import (
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// user adapts the owner and their passkeys to webauthn.User.
type user struct {
	owner    Owner
	passkeys []Passkey
}

func (u user) WebAuthnID() []byte          { return u.owner.Handle }
func (u user) WebAuthnName() string        { return "owner" }
func (u user) WebAuthnDisplayName() string { return "Maven owner" }

func (u user) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, len(u.passkeys))
	for i, p := range u.passkeys {
		out[i] = toCredential(p)
	}
	return out
}

// passkeyFor returns the passkey with credential id id.
func (u user) passkeyFor(id []byte) (Passkey, bool) {
	for _, p := range u.passkeys {
		if string(p.CredentialID) == string(id) {
			return p, true
		}
	}
	return Passkey{}, false
}

func toCredential(p Passkey) webauthn.Credential {
	flags := protocol.FlagUserPresent
	if p.UserVerified {
		flags |= protocol.FlagUserVerified
	}
	if p.BackupEligible {
		flags |= protocol.FlagBackupEligible
	}
	if p.BackupState {
		flags |= protocol.FlagBackupState
	}
	transports := make([]protocol.AuthenticatorTransport, len(p.Transports))
	for i, t := range p.Transports {
		transports[i] = protocol.AuthenticatorTransport(t)
	}
	return webauthn.Credential{
		ID:                p.CredentialID,
		PublicKey:         p.PublicKey,
		AttestationType:   p.AttestationType,
		AttestationFormat: p.AttestationFormat,
		Transport:         transports,
		Flags:             webauthn.NewCredentialFlags(flags),
		Authenticator: webauthn.Authenticator{
			AAGUID:     p.AAGUID,
			SignCount:  p.SignCount,
			Attachment: protocol.AuthenticatorAttachment(p.Attachment),
		},
		Extensions: webauthn.CredentialExtensions{PRFEnabled: p.PRFEnabled},
	}
}
