// Package authtest is a software WebAuthn authenticator for tests: it answers the options the
// server sends to navigator.credentials.create and .get with the JSON a browser would post back,
// signed with real ES256 keys, so go-webauthn's own verification runs unchanged. Flags (UP, UV,
// BE, BS), the signature counter and the PRF answer are settable, to test what the server does
// when an authenticator misbehaves. A credential created while PRF is on evaluates its PRF on
// assertion the way CTAP2's hmac-secret does, so the same input always gives the same output.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"github.com/go-webauthn/webauthn/protocol"
)

// Authenticator flag bits (WebAuthn §6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

// ErrExcluded is what Create returns when one of its credentials is in excludeCredentials, as a
// browser's InvalidStateError.
var ErrExcluded = errors.New("authtest: a credential of this authenticator is excluded")

// ErrNoCredential is what Get returns when none of its credentials is allowed.
var ErrNoCredential = errors.New("authtest: no matching credential")

// Authenticator holds resident credentials. Its exported fields shape the next answers; change
// them between ceremonies.
type Authenticator struct {
	Origin string // what clientDataJSON claims as origin
	// UP, UV, BE and BS are the flags the next answers carry.
	UP, UV, BE, BS bool
	// PRF is what a registration that probed prf:{} reports as enabled; nil reports nothing.
	// Credentials created while it is true evaluate their PRF on assertion.
	PRF *bool
	// Attachment is reported as authenticatorAttachment ("platform" by default).
	Attachment string

	creds []*Credential
}

// Credential is one resident credential.
type Credential struct {
	ID         []byte
	UserHandle []byte
	RPID       string
	// Counter is the last signature count reported; Get reports Counter+1 and stores it.
	// Set it lower to make the authenticator look cloned.
	Counter uint32
	key     *ecdsa.PrivateKey
	prfKey  []byte // nil for a credential without PRF
}

// New returns an authenticator claiming origin, with UP and UV set, not backup-eligible, and
// PRF support.
func New(origin string) *Authenticator {
	prf := true
	return &Authenticator{Origin: origin, UP: true, UV: true, PRF: &prf, Attachment: "platform"}
}

// Credentials returns the credentials created so far, oldest first.
func (a *Authenticator) Credentials() []*Credential { return a.creds }

// Create answers a registration: options is the JSON the server sent ({"publicKey": …}), the
// result the JSON of the PublicKeyCredential a browser would post.
func (a *Authenticator) Create(options []byte) ([]byte, error) {
	var cc protocol.CredentialCreation
	if err := json.Unmarshal(options, &cc); err != nil {
		return nil, fmt.Errorf("authtest: creation options: %w", err)
	}
	o := cc.Response
	for _, ex := range o.CredentialExcludeList {
		for _, c := range a.creds {
			if string(c.ID) == string(ex.CredentialID) {
				return nil, ErrExcluded
			}
		}
	}
	userID, err := userHandle(o.User.ID)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cred := &Credential{ID: randomBytes(32), UserHandle: userID, RPID: o.RelyingParty.ID, key: key}
	if a.PRF != nil && *a.PRF {
		cred.prfKey = randomBytes(32)
	}

	cose, err := coseKey(key)
	if err != nil {
		return nil, err
	}
	authData := a.authData(cred.RPID, flagAT, 0)
	authData = append(authData, make([]byte, 16)...) // AAGUID: all zero, as "none" attestation allows
	authData = binary.BigEndian.AppendUint16(authData, uint16(len(cred.ID)))
	authData = append(authData, cred.ID...)
	authData = append(authData, cose...)
	enc, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		return nil, err
	}
	attObj, err := enc.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData})
	if err != nil {
		return nil, err
	}
	clientData := a.clientData("webauthn.create", o.Challenge)

	ext := map[string]any{}
	if o.Extensions.PRF != nil && a.PRF != nil {
		ext["prf"] = map[string]any{"enabled": *a.PRF}
	}
	if o.Extensions.CredProps {
		ext["credProps"] = map[string]any{"rk": true}
	}
	a.creds = append(a.creds, cred)
	return json.Marshal(map[string]any{
		"id": b64(cred.ID), "rawId": b64(cred.ID), "type": "public-key",
		"authenticatorAttachment": a.Attachment,
		"response": map[string]any{
			"clientDataJSON": b64(clientData), "attestationObject": b64(attObj),
			"transports": []string{"internal"},
		},
		"clientExtensionResults": ext,
	})
}

// Get answers an assertion: options is the JSON the server sent ({"publicKey": …}). It uses the
// newest credential for the RP ID that allowCredentials permits (any, when the list is empty),
// and reports Counter+1 as the signature count.
func (a *Authenticator) Get(options []byte) ([]byte, error) {
	var ca protocol.CredentialAssertion
	if err := json.Unmarshal(options, &ca); err != nil {
		return nil, fmt.Errorf("authtest: request options: %w", err)
	}
	o := ca.Response
	var cred *Credential
	for i := len(a.creds) - 1; i >= 0 && cred == nil; i-- {
		c := a.creds[i]
		if c.RPID != o.RelyingPartyID {
			continue
		}
		if len(o.AllowedCredentials) == 0 {
			cred = c
		}
		for _, d := range o.AllowedCredentials {
			if string(d.CredentialID) == string(c.ID) {
				cred = c
			}
		}
	}
	if cred == nil {
		return nil, ErrNoCredential
	}
	ext := map[string]any{}
	if in := prfInput(o.Extensions.PRF, cred.ID); in != nil && cred.prfKey != nil {
		ext["prf"] = map[string]any{"results": map[string]any{"first": b64(cred.PRF(in))}}
	}
	return a.assert(cred, o.Challenge, ext)
}

// prfInput is the PRF input the options ask cred to evaluate: its evalByCredential entry, else
// eval; nil when there is none.
func prfInput(in *protocol.PRFInputs, credID []byte) []byte {
	if in == nil {
		return nil
	}
	if v, ok := in.EvalByCredential[b64(credID)]; ok {
		return v.First
	}
	if len(in.Eval.First) > 0 {
		return in.Eval.First
	}
	return nil
}

// PRF returns the credential's PRF output for input as the WebAuthn prf extension defines it:
// the authenticator's HMAC over SHA-256("WebAuthn PRF" ‖ 0x00 ‖ input). Nil for a credential
// created without PRF.
func (c *Credential) PRF(input []byte) []byte {
	if c.prfKey == nil {
		return nil
	}
	salt := sha256.Sum256(append([]byte("WebAuthn PRF\x00"), input...))
	m := hmac.New(sha256.New, c.prfKey)
	m.Write(salt[:])
	return m.Sum(nil)
}

// ForgePRF returns the assertion JSON (what Get answered) with its PRF output replaced by output,
// as a hostile page could send it: the signature stays valid, because PRF outputs are client
// extension outputs the authenticator does not sign.
func ForgePRF(assertion, output []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(assertion, &m); err != nil {
		return nil, fmt.Errorf("authtest: assertion: %w", err)
	}
	m["clientExtensionResults"] = map[string]any{"prf": map[string]any{"results": map[string]any{"first": b64(output)}}}
	return json.Marshal(m)
}

func (a *Authenticator) assert(cred *Credential, challenge []byte, ext map[string]any) ([]byte, error) {
	cred.Counter++
	authData := a.authData(cred.RPID, 0, cred.Counter)
	clientData := a.clientData("webauthn.get", challenge)
	hash := sha256.Sum256(clientData)
	sig, err := ecdsa.SignASN1(rand.Reader, cred.key, sha256Sum(append(append([]byte{}, authData...), hash[:]...)))
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": b64(cred.ID), "rawId": b64(cred.ID), "type": "public-key",
		"authenticatorAttachment": a.Attachment,
		"response": map[string]any{
			"clientDataJSON": b64(clientData), "authenticatorData": b64(authData),
			"signature": b64(sig), "userHandle": b64(cred.UserHandle),
		},
		"clientExtensionResults": ext,
	})
}

func (a *Authenticator) authData(rpID string, extra byte, counter uint32) []byte {
	rpHash := sha256.Sum256([]byte(rpID))
	flags := extra
	for _, f := range []struct {
		on  bool
		bit byte
	}{{a.UP, flagUP}, {a.UV, flagUV}, {a.BE, flagBE}, {a.BS, flagBS}} {
		if f.on {
			flags |= f.bit
		}
	}
	out := append(rpHash[:], flags)
	return binary.BigEndian.AppendUint32(out, counter)
}

func (a *Authenticator) clientData(typ string, challenge []byte) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": typ, "challenge": b64(challenge), "origin": a.Origin, "crossOrigin": false,
	})
	return b
}

// coseKey encodes the public key as a COSE_Key: EC2, ES256, P-256.
func coseKey(key *ecdsa.PrivateKey) ([]byte, error) {
	pub, err := key.PublicKey.Bytes() // 0x04 ‖ X ‖ Y
	if err != nil {
		return nil, err
	}
	enc, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		return nil, err
	}
	return enc.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: pub[1:33], -3: pub[33:65]})
}

// userHandle decodes user.id, which go-webauthn sends base64url-encoded.
func userHandle(id any) ([]byte, error) {
	s, ok := id.(string)
	if !ok {
		return nil, fmt.Errorf("authtest: user.id is %T, want a base64url string", id)
	}
	return base64.RawURLEncoding.DecodeString(s)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
