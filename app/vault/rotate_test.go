package vault_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"testing"

	"maven/app/vault"
)

// openSecretWith opens a stored secret with a raw data key, from the format alone.
func openSecretWith(t *testing.T, f *fixture, dek []byte, name string) ([]byte, error) {
	t.Helper()
	s, err := f.store.Secret(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(dek)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return gcm.Open(nil, s.Nonce, s.Ciphertext, []byte("maven/secret/v1|"+name))
}

// TestRotationRewrapsEverySlotAndReseals is the rotation of the data key that regenerating the
// recovery code does: a data key read out of memory before it opens nothing stored after it,
// while every passkey (without being present) and the new code open the new one.
func TestRotationRewrapsEverySlotAndReseals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	oldCode := f.create(t)
	p, q := f.addPasskey(t, "cred-p"), f.addPasskey(t, "cred-q")
	for name, value := range map[string]string{"alpha": "a-value", "beta": "b-value"} {
		if err := f.v.Set(ctx, name, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	oldKey := bytes.Clone(vault.DEKForTest(f.v))

	r, err := f.v.RegenerateRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dropped) != 0 || len(r.Unreadable) != 0 || r.Code == oldCode {
		t.Fatalf("rotation: %+v", r)
	}
	newKey := vault.DEKForTest(f.v)
	if bytes.Equal(newKey, oldKey) {
		t.Fatal("the data key did not change")
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := openSecretWith(t, f, oldKey, name); err == nil {
			t.Errorf("the old data key still opens %s", name)
		}
		if _, err := openSecretWith(t, f, newKey, name); err != nil {
			t.Errorf("the new data key does not open %s: %v", name, err)
		}
	}
	mustGet(t, f.v, "alpha", "a-value")

	// Each passkey, and the new code, unlock to the new key; the old code does not.
	for _, pk := range []passkey{p, q} {
		v := f.reopen(rpID)
		if err := v.UnlockWithPRF(ctx, pk.id, pk.output); err != nil {
			t.Fatalf("passkey %s after rotation: %v", pk.id, err)
		}
		if !bytes.Equal(vault.DEKForTest(v), newKey) {
			t.Fatalf("passkey %s opened another key", pk.id)
		}
		mustGet(t, v, "beta", "b-value")
	}
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithRecovery(ctx, oldCode))
	if err := f.reopen(rpID).UnlockWithRecovery(ctx, r.Code); err != nil {
		t.Fatalf("new code: %v", err)
	}
	if slots, _ := f.store.Slots(ctx); len(slots) != 3 {
		t.Fatalf("%d slots after rotation, want 3", len(slots))
	}
}

// TestRotationDropsSlotsItCannotVouchFor: a slot of the first format (only its passkey can wrap
// for it) and a slot whose sealed public key was edited in the database are dropped, never
// given the new key.
func TestRotationDropsSlotsItCannotVouchFor(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	legacy := newPasskey(t, "cred-legacy")
	if err := vault.AddLegacyPRFSlotForTest(f.v, ctx, legacy.id, legacy.input, legacy.output); err != nil {
		t.Fatal(err)
	}
	edited := f.addPasskey(t, "cred-edited")
	kept := f.addPasskey(t, "cred-kept")
	s, err := f.store.PRFSlot(ctx, edited.id)
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, "UPDATE vault_slots SET public_key = ? WHERE id = ?", flip(s.PublicKey, 20), s.ID)

	r, err := f.v.RegenerateRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dropped) != 2 {
		t.Fatalf("dropped %q, want the legacy and the edited slot", r.Dropped)
	}
	for _, pk := range []passkey{legacy, edited} {
		if _, err := f.store.PRFSlot(ctx, pk.id); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("slot of %s after rotation: %v, want it gone", pk.id, err)
		}
	}
	if err := f.reopen(rpID).UnlockWithPRF(ctx, kept.id, kept.output); err != nil {
		t.Fatalf("the untouched passkey after rotation: %v", err)
	}
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithRecovery(ctx, code))
}

// TestLegacySlotTakesTheCurrentFormatOnUnlock: a slot of the first format still unlocks, and is
// then stored again in the current format, so a later rotation keeps it.
func TestLegacySlotTakesTheCurrentFormatOnUnlock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	legacy := newPasskey(t, "cred-legacy")
	if err := vault.AddLegacyPRFSlotForTest(f.v, ctx, legacy.id, legacy.input, legacy.output); err != nil {
		t.Fatal(err)
	}
	v := f.reopen(rpID)
	if err := v.UnlockWithPRF(ctx, legacy.id, legacy.output); err != nil {
		t.Fatalf("legacy slot: %v", err)
	}
	s, err := f.store.PRFSlot(ctx, legacy.id)
	if err != nil || s.KDF != "x25519-hkdf-sha256" || len(s.PublicKey) == 0 || !bytes.Equal(s.PRFInput, legacy.input) {
		t.Fatalf("slot after unlock: %v %+v", err, s)
	}
	if r, err := v.RegenerateRecovery(ctx); err != nil || len(r.Dropped) != 0 {
		t.Fatalf("rotation after the upgrade: %v %+v", err, r)
	}
	if err := f.reopen(rpID).UnlockWithPRF(ctx, legacy.id, legacy.output); err != nil {
		t.Fatalf("upgraded slot after rotation: %v", err)
	}
}

// TestFirstEnrollmentIsOneTransaction injects a failure between the vault's recovery slot and
// the first passkey's slot: nothing may be left, since a vault whose recovery code was never
// shown and whose passkey cannot open it is a vault nobody can open.
func TestFirstEnrollmentIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	g, _ := newGate(t, f.v)
	if _, err := f.db.ExecContext(ctx, `CREATE TRIGGER fail_prf BEFORE INSERT ON vault_slots
		WHEN NEW.kind = 'prf' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
	p := newPasskey(t, "cred")
	code, err := g.Enroll(ctx, p.id, p.input, p.output)
	if err == nil || code != "" {
		t.Fatalf("Enroll with a failing second write: code %q, err %v", code, err)
	}
	if slots, _ := f.store.Slots(ctx); len(slots) != 0 || g.HasVault() {
		t.Fatalf("after the failed enrollment: %d slots, has vault %v; want nothing", len(slots), g.HasVault())
	}

	if _, err := f.db.ExecContext(ctx, `DROP TRIGGER fail_prf`); err != nil {
		t.Fatal(err)
	}
	code, err = g.Enroll(ctx, p.id, p.input, p.output)
	if err != nil || code == "" {
		t.Fatalf("Enroll once the database works: %q %v", code, err)
	}
	if slots, _ := f.store.Slots(ctx); len(slots) != 2 {
		t.Fatalf("%d slots, want the recovery slot and the passkey's", len(slots))
	}
	if err := f.reopen(rpID).UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatal(err)
	}
}
