package db_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/vault"
	"maven/db"
)

func newVaultStore(t *testing.T) *db.VaultStore {
	s, _ := newVaultDB(t)
	return s
}

func newVaultDB(t *testing.T) (*db.VaultStore, *bun.DB) {
	t.Helper()
	bdb := newDB(t)
	return db.NewVaultStore(bdb), bdb
}

var t0 = time.Date(2026, 12, 1, 13, 0, 0, 123456789, time.UTC)

func recoverySlot(b byte) *vault.Slot {
	return &vault.Slot{
		Kind: vault.SlotRecovery, KDF: "argon2id$v=19$m=65536,t=3,p=4", Salt: []byte{b, 1},
		Nonce: []byte{b, 2}, WrappedKey: []byte{b, 3}, CreatedAt: t0,
	}
}

func prfSlot(cred string, b byte) *vault.Slot {
	return &vault.Slot{
		Kind: vault.SlotPRF, CredentialID: []byte(cred), PRFInput: []byte{b, 0}, KDF: "hkdf-sha256",
		Salt: []byte{b, 1}, Nonce: []byte{b, 2}, WrappedKey: []byte{b, 3}, CreatedAt: t0,
	}
}

func TestVaultStoreSlots(t *testing.T) {
	ctx := context.Background()
	s := newVaultStore(t)
	if slots, err := s.Slots(ctx); err != nil || len(slots) != 0 {
		t.Fatalf("Slots of an empty store = %v, %v", slots, err)
	}
	if _, err := s.RecoverySlot(ctx); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("RecoverySlot of an empty store: %v, want ErrNotFound", err)
	}
	if _, err := s.PRFSlot(ctx, []byte("c")); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("PRFSlot of an empty store: %v, want ErrNotFound", err)
	}

	rec := recoverySlot(1)
	if err := s.CreateVault(ctx, []*vault.Slot{rec}); err != nil {
		t.Fatal(err)
	}
	if rec.ID == 0 {
		t.Fatal("CreateVault did not set the slot ID")
	}
	if err := s.CreateVault(ctx, []*vault.Slot{recoverySlot(2)}); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("second CreateVault: %v, want ErrExists", err)
	}
	got, err := s.RecoverySlot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rec.ID || got.KDF != rec.KDF || !bytes.Equal(got.WrappedKey, rec.WrappedKey) ||
		got.CredentialID != nil || !got.CreatedAt.Equal(t0) || !got.LastUsedAt.IsZero() {
		t.Fatalf("RecoverySlot = %+v, want %+v", got, rec)
	}

	a := prfSlot("cred-a", 3)
	if err := s.PutPRFSlot(ctx, a); err != nil {
		t.Fatal(err)
	}
	// Putting a slot for the same credential replaces it.
	a2 := prfSlot("cred-a", 4)
	if err := s.PutPRFSlot(ctx, a2); err != nil {
		t.Fatal(err)
	}
	got, err = s.PRFSlot(ctx, []byte("cred-a"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != a2.ID || !bytes.Equal(got.PRFInput, a2.PRFInput) || !bytes.Equal(got.Salt, a2.Salt) {
		t.Fatalf("PRFSlot after replace = %+v, want %+v", got, a2)
	}
	if err := s.PutPRFSlot(ctx, recoverySlot(9)); err == nil {
		t.Fatal("PutPRFSlot took a recovery slot")
	}

	// Rekeying replaces every slot.
	rec2 := recoverySlot(5)
	b := prfSlot("cred-b", 6)
	b.PublicKey = []byte("sealed public key")
	if err := s.Rekey(ctx, []*vault.Slot{rec2, b}, nil); err != nil {
		t.Fatal(err)
	}
	slots, err := s.Slots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || slots[0].ID != rec2.ID || slots[1].ID != b.ID || string(slots[1].PublicKey) != "sealed public key" {
		t.Fatalf("Slots = %+v", slots)
	}

	if err := s.MarkSlotUsed(ctx, rec2.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.RecoverySlot(ctx); !got.LastUsedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("LastUsedAt = %v", got.LastUsedAt)
	}
	if err := s.MarkSlotUsed(ctx, 999, t0); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("MarkSlotUsed(unknown): %v, want ErrNotFound", err)
	}
}

func TestVaultStoreDeletePRFSlot(t *testing.T) {
	ctx := context.Background()
	s := newVaultStore(t)
	if err := s.CreateVault(ctx, []*vault.Slot{prfSlot("only", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePRFSlot(ctx, []byte("only")); !errors.Is(err, vault.ErrLastSlot) {
		t.Fatalf("deleting the only slot: %v, want ErrLastSlot", err)
	}
	if _, err := s.PRFSlot(ctx, []byte("only")); err != nil {
		t.Fatalf("the refused delete removed the slot: %v", err)
	}
	if err := s.DeletePRFSlot(ctx, []byte("nobody")); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("deleting an unknown slot: %v, want ErrNotFound", err)
	}
	if err := s.PutPRFSlot(ctx, prfSlot("second", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePRFSlot(ctx, []byte("only")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePRFSlot(ctx, []byte("second")); !errors.Is(err, vault.ErrLastSlot) {
		t.Fatalf("deleting the last remaining slot: %v, want ErrLastSlot", err)
	}
}

func TestVaultStoreSchema(t *testing.T) {
	ctx := context.Background()
	s, bdb := newVaultDB(t)
	if err := s.CreateVault(ctx, []*vault.Slot{recoverySlot(1)}); err != nil {
		t.Fatal(err)
	}
	// The table itself refuses a second recovery slot and a PRF slot without its credential
	// or input, whatever the code above it does.
	_, err := bdb.ExecContext(ctx, `INSERT INTO vault_slots (kind, kdf, salt, nonce, wrapped_key, created_at)
		VALUES ('recovery', 'argon2id$v=19$m=65536,t=3,p=4', x'01', x'02', x'03', '2026')`)
	if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Fatalf("a second recovery slot: %v, want a UNIQUE violation", err)
	}
	_, err = bdb.ExecContext(ctx, `INSERT INTO vault_slots (kind, credential_id, kdf, salt, nonce, wrapped_key, created_at)
		VALUES ('prf', x'aa', 'hkdf-sha256', x'01', x'02', x'03', '2026')`)
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("a PRF slot without a PRF input: %v, want a CHECK violation", err)
	}
	noCred := prfSlot("", 3)
	noCred.CredentialID = nil
	if err := s.PutPRFSlot(ctx, noCred); err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("a PRF slot without a credential ID: %v, want a CHECK violation", err)
	}
}

func TestVaultStoreSecrets(t *testing.T) {
	ctx := context.Background()
	s := newVaultStore(t)
	if names, err := s.SecretNames(ctx); err != nil || names == nil || len(names) != 0 {
		t.Fatalf("SecretNames of an empty store = %#v, %v", names, err)
	}
	if _, err := s.Secret(ctx, "k"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("Secret(missing): %v, want ErrNotFound", err)
	}
	put := func(name string, b byte, at time.Time) {
		t.Helper()
		err := s.PutSecret(ctx, vault.Secret{Name: name, Nonce: []byte{b}, Ciphertext: []byte{b, b}, CreatedAt: at, UpdatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("b", 1, t0)
	put("a", 2, t0)
	put("b", 3, t0.Add(time.Hour))
	got, err := s.Secret(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Nonce, []byte{3}) || !bytes.Equal(got.Ciphertext, []byte{3, 3}) ||
		!got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Secret after replace = %+v", got)
	}
	names, err := s.SecretNames(ctx)
	if err != nil || len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Fatalf("SecretNames = %v, %v", names, err)
	}
	if err := s.DeleteSecret(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret(ctx, "a"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("DeleteSecret twice: %v, want ErrNotFound", err)
	}
}

// failPRFInserts makes the database refuse every new PRF slot, standing in for a crash or a full
// disk between a vault's two writes.
func failPRFInserts(t *testing.T, bdb *bun.DB) {
	t.Helper()
	if _, err := bdb.ExecContext(context.Background(), `CREATE TRIGGER fail_prf BEFORE INSERT ON vault_slots
		WHEN NEW.kind = 'prf' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
}

func TestVaultStoreCreateVaultIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s, bdb := newVaultDB(t)
	failPRFInserts(t, bdb)
	err := s.CreateVault(ctx, []*vault.Slot{recoverySlot(1), prfSlot("cred", 2)})
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("CreateVault with a failing second write: %v", err)
	}
	if slots, err := s.Slots(ctx); err != nil || len(slots) != 0 {
		t.Fatalf("after the failed creation: %d slots, %v; want none", len(slots), err)
	}
}

func TestVaultStoreRekey(t *testing.T) {
	ctx := context.Background()
	s, bdb := newVaultDB(t)
	if err := s.CreateVault(ctx, []*vault.Slot{recoverySlot(1), prfSlot("cred", 2)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := s.PutSecret(ctx, vault.Secret{Name: name, Nonce: []byte("old"), Ciphertext: []byte("old"), CreatedAt: t0, UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	resealed := func(names ...string) []vault.Secret {
		var out []vault.Secret
		for _, n := range names {
			out = append(out, vault.Secret{Name: n, Nonce: []byte("new"), Ciphertext: []byte("new " + n)})
		}
		return out
	}
	unchanged := func() {
		t.Helper()
		for _, name := range []string{"a", "b"} {
			if got, _ := s.Secret(ctx, name); string(got.Ciphertext) != "old" {
				t.Fatalf("secret %s changed: %q", name, got.Ciphertext)
			}
		}
		if got, _ := s.RecoverySlot(ctx); got.WrappedKey[0] != 1 {
			t.Fatalf("recovery slot changed: %+v", got)
		}
	}

	// A secret left out (set while the rotation ran) refuses the whole rotation.
	if err := s.Rekey(ctx, []*vault.Slot{recoverySlot(3)}, resealed("a")); err == nil {
		t.Fatal("Rekey without every secret went through")
	}
	unchanged()

	// A failure after the secrets were written leaves everything as it was.
	failPRFInserts(t, bdb)
	if err := s.Rekey(ctx, []*vault.Slot{recoverySlot(3), prfSlot("cred", 4)}, resealed("a", "b")); err == nil {
		t.Fatal("Rekey with a failing write went through")
	}
	unchanged()
	if _, err := bdb.ExecContext(ctx, `DROP TRIGGER fail_prf`); err != nil {
		t.Fatal(err)
	}

	rec, prf := recoverySlot(3), prfSlot("cred", 4)
	if err := s.Rekey(ctx, []*vault.Slot{rec, prf}, resealed("a", "b")); err != nil {
		t.Fatal(err)
	}
	slots, _ := s.Slots(ctx)
	if len(slots) != 2 || slots[0].WrappedKey[0] != 3 || slots[1].WrappedKey[0] != 4 || rec.ID == 0 || prf.ID == 0 {
		t.Fatalf("slots after Rekey: %+v", slots)
	}
	for _, name := range []string{"a", "b"} {
		got, _ := s.Secret(ctx, name)
		if string(got.Ciphertext) != "new "+name || string(got.Nonce) != "new" || !got.CreatedAt.Equal(t0) {
			t.Fatalf("secret %s after Rekey: %+v", name, got)
		}
	}
}
