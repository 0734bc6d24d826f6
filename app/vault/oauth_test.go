package vault_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"maven/app/vault"
)

// TestOAuthCredentialsAreSealedApart: a server's OAuth credentials are sealed like a secret
// (ciphertext in the table, nothing readable while locked) but are not one of the owner's
// secrets: Names never lists them, no secret name reaches them, and the data key's rotation
// reseals them with the rest.
func TestOAuthCredentialsAreSealedApart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	g, _ := newGate(t, f.v)
	if _, err := g.OpenOAuth(ctx, "tasks"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("open without a vault: %v, want ErrNotFound", err)
	}
	if err := g.SealOAuth(ctx, "tasks", []byte("x")); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("seal without a vault: %v, want ErrLocked", err)
	}
	p := newPasskey(t, "cred-1")
	if _, err := g.Enroll(ctx, p.id, p.input, p.output); err != nil {
		t.Fatal(err)
	}
	creds := []byte(`{"access_token":"at-plaintext-marker"}`)
	if err := g.SealOAuth(ctx, "tasks", creds); err != nil {
		t.Fatal(err)
	}
	if err := g.SetSecret(ctx, "tok", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := f.db.NewRaw("SELECT ciphertext FROM vault_secrets WHERE name = ?", "oauth:tasks").Scan(ctx, &raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("at-plaintext-marker")) || len(raw) == 0 {
		t.Fatalf("stored %q: want ciphertext", raw)
	}
	if names, err := g.SecretNames(ctx); err != nil || !slices.Equal(names, []string{"tok"}) {
		t.Fatalf("secret names %v %v: want only the owner's secret", names, err)
	}
	if _, err := f.v.Get(ctx, "oauth:tasks"); err == nil {
		t.Fatal("a secret lookup reached the OAuth credentials")
	}
	if err := g.DeleteSecret(ctx, "oauth:tasks"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("deleting the credentials as a secret: %v, want ErrNotFound", err)
	}
	if err := f.v.Set(ctx, "oauth:tasks", []byte("y")); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("a secret named like the credentials: %v, want ErrInvalid", err)
	}

	if _, err := g.RegenerateRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := g.OpenOAuth(ctx, "tasks"); err != nil || !bytes.Equal(got, creds) {
		t.Fatalf("after rotation: %q %v", got, err)
	}

	g.Lock()
	if _, err := g.OpenOAuth(ctx, "tasks"); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("open while locked: %v, want ErrLocked", err)
	}
	if _, err := g.OpenOAuth(ctx, "other"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("open of a server that never signed in, while locked: %v, want ErrNotFound", err)
	}
	if err := g.SealOAuth(ctx, "tasks", creds); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("seal while locked: %v, want ErrLocked", err)
	}

	f.exec(t, "UPDATE vault_secrets SET name = 'oauth:other' WHERE name = 'oauth:tasks'")
	if err := g.UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatal(err)
	}
	if _, err := g.OpenOAuth(ctx, "other"); !errors.Is(err, vault.ErrTampered) {
		t.Fatalf("credentials moved to another server: %v, want ErrTampered", err)
	}
	if err := g.DeleteOAuth(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteOAuth(ctx, "other"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := g.OpenOAuth(ctx, "other"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
