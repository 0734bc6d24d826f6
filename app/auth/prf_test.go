package auth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

func TestUnlockAssertionEvaluatesPRFPerCredential(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	laptop := authtest.New(origin)
	p1 := register(t, s, laptop, "s1")
	phone := authtest.New(origin)
	phone.PRF = nil
	// A second passkey without PRF, registered through another setup link.
	p2 := register(t, s, phone, "s2")

	input := bytes.Repeat([]byte{0x5a}, 32)
	key := base64.RawURLEncoding.EncodeToString(p1.CredentialID)
	assertion := must(s.BeginUnlock(ctx, "u1", origin, map[string][]byte{
		key:                        input,
		"bm8tc3VjaC1jcmVkZW50aWFs": bytes.Repeat([]byte{1}, 32), // a slot whose passkey is gone
	}))
	opts := assertion.Response
	if len(opts.AllowedCredentials) != 2 || opts.UserVerification != protocol.VerificationRequired {
		t.Fatalf("allowCredentials %d, UV %q: want both passkeys, required", len(opts.AllowedCredentials), opts.UserVerification)
	}
	if opts.Extensions.PRF == nil || len(opts.Extensions.PRF.EvalByCredential) != 1 ||
		!bytes.Equal(opts.Extensions.PRF.EvalByCredential[key].First, input) {
		t.Fatalf("PRF inputs: %+v", opts.Extensions.PRF)
	}

	// The salts live in the options only: the SessionData kept for finish does not carry them.
	data, ok := auth.PendingUnlockForTest(s, "u1")
	if !ok {
		t.Fatal("no pending unlock")
	}
	raw := must(json.Marshal(data))
	for _, enc := range []string{base64.RawURLEncoding.EncodeToString(input), base64.StdEncoding.EncodeToString(input), hex.EncodeToString(input)} {
		if strings.Contains(string(raw), enc) {
			t.Fatalf("the SessionData carries the PRF input: %s", raw)
		}
	}
	if !strings.Contains(string(raw), "prf") {
		t.Fatalf("the SessionData does not record that PRF was requested: %s", raw)
	}

	resp := must(laptop.Get(must(json.Marshal(assertion))))
	pa := must(s.FinishUnlock(ctx, "u1", must(protocol.ParseCredentialRequestResponseBytes(resp))))
	want := laptop.Credentials()[0].PRF(input)
	if pa.Passkey.ID != p1.ID || !bytes.Equal(pa.Input, input) || !bytes.Equal(pa.Output, want) {
		t.Fatalf("finish: passkey %d input %x output %x", pa.Passkey.ID, pa.Input, pa.Output)
	}

	// The passkey without PRF is verified too, with nothing to unlock with.
	assertion = must(s.BeginUnlock(ctx, "u2", origin, map[string][]byte{key: input}))
	resp = must(phone.Get(must(json.Marshal(assertion))))
	pa = must(s.FinishUnlock(ctx, "u2", must(protocol.ParseCredentialRequestResponseBytes(resp))))
	if pa.Passkey.ID != p2.ID || pa.Input != nil || pa.Output != nil {
		t.Fatalf("finish without PRF: %+v", pa)
	}

	// An unlock ceremony cannot be finished as an enrollment, nor replayed.
	assertion = must(s.BeginUnlock(ctx, "u3", origin, map[string][]byte{key: input}))
	resp = must(laptop.Get(must(json.Marshal(assertion))))
	if _, err := s.FinishEnroll(ctx, "u3", must(protocol.ParseCredentialRequestResponseBytes(resp))); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("unlock finished as enroll: %v", err)
	}
	must(s.FinishUnlock(ctx, "u3", must(protocol.ParseCredentialRequestResponseBytes(resp))))
	if _, err := s.FinishUnlock(ctx, "u3", must(protocol.ParseCredentialRequestResponseBytes(resp))); !errors.Is(err, auth.ErrNoCeremony) {
		t.Fatalf("replayed unlock: %v", err)
	}
}

func TestEnrollAssertionAllowsOnlyThatPasskey(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	a := authtest.New(origin)
	p := register(t, s, a, "s1")
	b := authtest.New(origin)
	register(t, s, b, "s2")
	input := bytes.Repeat([]byte{7}, 32)
	assertion := must(s.BeginEnroll(ctx, "s1", origin, p.ID, input))
	if n := len(assertion.Response.AllowedCredentials); n != 1 || !bytes.Equal(assertion.Response.AllowedCredentials[0].CredentialID, p.CredentialID) {
		t.Fatalf("allowCredentials: %d", n)
	}
	if _, err := b.Get(must(json.Marshal(assertion))); err == nil {
		t.Fatal("another passkey could answer the enrollment")
	}
	resp := must(a.Get(must(json.Marshal(assertion))))
	pa := must(s.FinishEnroll(ctx, "s1", must(protocol.ParseCredentialRequestResponseBytes(resp))))
	if !bytes.Equal(pa.Output, a.Credentials()[0].PRF(input)) {
		t.Fatal("enroll output is not the credential's PRF")
	}
	if _, err := s.BeginEnroll(ctx, "s1", origin, 999, input); !errors.Is(err, auth.ErrPasskeyNotFound) {
		t.Fatalf("enroll an unknown passkey: %v", err)
	}
}
