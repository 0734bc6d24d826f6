package authtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"

	"maven/app/auth"
)

// proofOrigin is the origin of the ceremonies Proof runs.
const proofOrigin = "http://localhost"

// Proof performs a real step-up approving a and returns the proof auth mints for it: an
// auth.Service over an in-memory store, a setup link, a registration, and a user-verified
// assertion by a software Authenticator, each checked by go-webauthn. Tests of the packages that
// act on a proof (the allowlist, the approvals of command lines, …) use it; the daemon can only
// obtain a proof the same way, from the owner's passkey gesture.
func Proof(tb testing.TB, a auth.Approval) auth.StepUp {
	tb.Helper()
	ctx := context.Background()
	svc, err := auth.New(NewStore(), auth.Config{RPID: "localhost", Origins: []string{proofOrigin}})
	if err != nil {
		tb.Fatal(err)
	}
	const sid = "authtest"
	key := New(proofOrigin)
	link, err := svc.NewSetupLink(ctx, "test")
	if err != nil {
		tb.Fatal(err)
	}
	creation, err := svc.BeginSetup(ctx, sid, proofOrigin, link.Token)
	if err != nil {
		tb.Fatal(err)
	}
	created, err := key.Create(marshal(tb, creation))
	if err != nil {
		tb.Fatal(err)
	}
	parsedCreation, err := protocol.ParseCredentialCreationResponseBytes(created)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.FinishRegistration(ctx, sid, parsedCreation, "authtest"); err != nil {
		tb.Fatal(err)
	}
	assertion, err := svc.BeginStepUp(ctx, sid, proofOrigin, a)
	if err != nil {
		tb.Fatal(err)
	}
	signed, err := key.Get(marshal(tb, assertion))
	if err != nil {
		tb.Fatal(err)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(signed)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.FinishStepUp(ctx, sid, parsed); err != nil {
		tb.Fatal(err)
	}
	proof, err := svc.Redeem(sid, a)
	if err != nil {
		tb.Fatal(err)
	}
	return proof
}

func marshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
