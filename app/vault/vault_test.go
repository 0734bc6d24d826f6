package vault_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/vault"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

const rpID = "maven.example"

type fixture struct {
	v     *vault.Vault
	db    *bun.DB
	store *db.VaultStore
	clock *testclock.Clock // moves only when told to
}

// newFixture opens a fresh database and a vault over it that stretches recovery codes with
// cheap Argon2id parameters (the real ones are exercised by TestRFC9106Parameters).
func newFixture(t testing.TB) *fixture {
	t.Helper()
	bdb := testdb.Open(t)
	f := &fixture{db: bdb, store: db.NewVaultStore(bdb), clock: testclock.New(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))}
	f.v = f.reopen(rpID)
	return f
}

// reopen returns another Vault over the same store, as after a restart: locked.
func (f *fixture) reopen(rp string) *vault.Vault {
	v := vault.New(f.store, rp, f.clock.Now)
	vault.SetArgon2ForTest(v, 1, 1024, 1)
	return v
}

func (f *fixture) create(t testing.TB) string {
	t.Helper()
	code, err := f.v.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// exec runs raw SQL against the database, standing in for someone with write access to it.
func (f *fixture) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	res, err := f.db.ExecContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("%s: no row changed", query)
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i%len(c)] ^= 0x01
	return c
}

// passkey is a fake PRF-capable credential: the authenticator's secret output for its input.
type passkey struct{ id, input, output []byte }

func newPasskey(t testing.TB, id string) passkey {
	t.Helper()
	in, err := vault.NewPRFInput()
	if err != nil {
		t.Fatal(err)
	}
	out, err := vault.NewPRFInput() // any 32 random bytes stand in for HMAC(cred secret, input)
	if err != nil {
		t.Fatal(err)
	}
	return passkey{id: []byte(id), input: in, output: out}
}

func (f *fixture) addPasskey(t testing.TB, id string) passkey {
	t.Helper()
	p := newPasskey(t, id)
	if err := f.v.AddPRFSlot(context.Background(), p.id, p.input, p.output); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustGet(t *testing.T, v *vault.Vault, name, want string) {
	t.Helper()
	got, err := v.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%s): %v", name, err)
	}
	if string(got) != want {
		t.Fatalf("Get(%s) = %q, want %q", name, got, want)
	}
}

// wantUnlockFailed checks err is exactly the one unlock failure, message and all.
func wantUnlockFailed(t *testing.T, err error) {
	t.Helper()
	if err != vault.ErrUnlockFailed || err.Error() != "unlock failed" {
		t.Fatalf("err = %v, want exactly ErrUnlockFailed", err)
	}
}

func TestCreateUnlockLock(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if ok, err := f.v.Exists(ctx); err != nil || ok {
		t.Fatalf("Exists before Create = %v, %v", ok, err)
	}
	if !f.v.Locked() {
		t.Fatal("a new vault is not locked")
	}
	code := f.create(t)
	if ok, err := f.v.Exists(ctx); err != nil || !ok {
		t.Fatalf("Exists after Create = %v, %v", ok, err)
	}
	if f.v.Locked() {
		t.Fatal("Create left the vault locked")
	}
	if _, err := f.v.Create(ctx); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	if err := f.v.Set(ctx, "vikunja_token", []byte("tk-123")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, f.v, "vikunja_token", "tk-123")

	// A restart: a new Vault over the same store starts locked and opens with the code.
	v2 := f.reopen(rpID)
	if !v2.Locked() {
		t.Fatal("vault not locked after restart")
	}
	if _, err := v2.Get(ctx, "vikunja_token"); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("Get while locked: %v, want ErrLocked", err)
	}
	if _, err := v2.Create(ctx); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("Create over an existing vault: %v, want ErrExists", err)
	}
	if err := v2.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatal(err)
	}
	mustGet(t, v2, "vikunja_token", "tk-123")
	if s, ok := v2.Lookup("vikunja_token"); !ok || string(s) != "tk-123" {
		t.Fatalf("Lookup = %q, %v", s, ok)
	}
	if _, ok := v2.Lookup("missing"); ok {
		t.Fatal("Lookup of a missing secret reported ok")
	}
}

func TestNoVault(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	other := newFixture(t)
	code := other.create(t)
	if err := f.v.UnlockWithRecovery(ctx, code); !errors.Is(err, vault.ErrNoVault) {
		t.Fatalf("recovery unlock without a vault: %v, want ErrNoVault", err)
	}
	p := newPasskey(t, "cred")
	if err := f.v.UnlockWithPRF(ctx, p.id, p.output); !errors.Is(err, vault.ErrNoVault) {
		t.Fatalf("PRF unlock without a vault: %v, want ErrNoVault", err)
	}
	if _, err := f.v.RegenerateRecovery(ctx); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("RegenerateRecovery without a vault: %v, want ErrLocked", err)
	}
}

func TestWrongRecoveryCode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	f.v.Lock()

	// A well-formed code of another vault: the checks pass, the key does not.
	other := newFixture(t)
	wrong := other.create(t)
	wantUnlockFailed(t, f.v.UnlockWithRecovery(ctx, wrong))
	if !f.v.Locked() {
		t.Fatal("a wrong code unlocked the vault")
	}

	// Mistyped codes are caught by the check symbols and cost no attempt.
	for _, typo := range []string{"", "not a code", code[:len(code)-1], "U" + code[1:], code + "0"} {
		err := f.v.UnlockWithRecovery(ctx, typo)
		if !errors.Is(err, vault.ErrMalformedCode) || !errors.Is(err, vault.ErrUnlockFailed) {
			t.Fatalf("UnlockWithRecovery(typo): %v, want ErrMalformedCode", err)
		}
		if typo != "" && strings.Contains(err.Error(), typo) {
			t.Fatalf("the error repeats the input: %v", err)
		}
	}
	if err := f.v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatalf("the right code after typos: %v", err)
	}
}

func TestRecoveryCodeNormalisation(t *testing.T) {
	f := newFixture(t)
	code := f.create(t)
	canon := strings.ReplaceAll(code, "-", "")
	tests := []struct{ name, in string }{
		{"as shown", code},
		{"lower case", strings.ToLower(code)},
		{"spaces for dashes", strings.ReplaceAll(code, "-", " ")},
		{"no separators", canon},
		{"lower case without separators, padded", "  " + strings.ToLower(canon) + "\n"},
		{"grouped in eights", strings.Join([]string{canon[:8], canon[8:16], canon[16:24], canon[24:]}, " - ")},
		{"0 and 1 typed as o and l", strings.NewReplacer("0", "o", "1", "l").Replace(code)},
		{"0 and 1 typed as O and I", strings.NewReplacer("0", "O", "1", "I").Replace(code)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := f.reopen(rpID)
			if err := v.UnlockWithRecovery(context.Background(), tt.in); err != nil {
				t.Fatalf("UnlockWithRecovery(%s): %v", tt.name, err)
			}
		})
	}
}

func TestTamperedSecret(t *testing.T) {
	ctx := context.Background()
	tests := []struct{ name, column string }{
		{"ciphertext", "ciphertext"},
		{"tag (last byte)", "ciphertext"},
		{"nonce", "nonce"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.create(t)
			if err := f.v.Set(ctx, "k", []byte("a secret value")); err != nil {
				t.Fatal(err)
			}
			s, err := f.store.Secret(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			b := map[string][]byte{"ciphertext": s.Ciphertext, "nonce": s.Nonce}[tt.column]
			at := 0
			if i == 1 {
				at = len(b) - 1
			}
			f.exec(t, "UPDATE vault_secrets SET "+tt.column+" = ? WHERE name = 'k'", flip(b, at))
			if _, err := f.v.Get(ctx, "k"); !errors.Is(err, vault.ErrTampered) {
				t.Fatalf("Get of a tampered secret: %v, want ErrTampered", err)
			}
			if _, ok := f.v.Lookup("k"); ok {
				t.Fatal("Lookup returned a tampered secret")
			}
		})
	}
}

func TestSwappedSecrets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	for name, val := range map[string]string{"alpha": "value-a", "beta": "value-b"} {
		if err := f.v.Set(ctx, name, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := f.store.Secret(ctx, "alpha")
	b, _ := f.store.Secret(ctx, "beta")
	f.exec(t, "UPDATE vault_secrets SET nonce = ?, ciphertext = ? WHERE name = 'alpha'", b.Nonce, b.Ciphertext)
	f.exec(t, "UPDATE vault_secrets SET nonce = ?, ciphertext = ? WHERE name = 'beta'", a.Nonce, a.Ciphertext)
	for _, name := range []string{"alpha", "beta"} {
		if got, err := f.v.Get(ctx, name); !errors.Is(err, vault.ErrTampered) {
			t.Fatalf("Get(%s) after the swap = %q, %v; want ErrTampered", name, got, err)
		}
	}

	// Renaming a row is the same attack in another shape.
	f.exec(t, "UPDATE vault_secrets SET nonce = ?, ciphertext = ? WHERE name = 'alpha'", a.Nonce, a.Ciphertext)
	f.exec(t, "UPDATE vault_secrets SET name = 'gamma' WHERE name = 'alpha'")
	if _, err := f.v.Get(ctx, "gamma"); !errors.Is(err, vault.ErrTampered) {
		t.Fatalf("Get of a renamed secret: %v, want ErrTampered", err)
	}
}

func TestTamperedSlot(t *testing.T) {
	ctx := context.Background()
	type unlock func(f *fixture, v *vault.Vault, code string, p passkey) error
	byRecovery := func(f *fixture, v *vault.Vault, code string, p passkey) error {
		return v.UnlockWithRecovery(ctx, code)
	}
	byPRF := func(f *fixture, v *vault.Vault, code string, p passkey) error {
		return v.UnlockWithPRF(ctx, p.id, p.output)
	}
	tests := []struct {
		name   string
		kind   string
		column string
		unlock unlock
	}{
		{"recovery wrapped key", "recovery", "wrapped_key", byRecovery},
		{"recovery nonce", "recovery", "nonce", byRecovery},
		{"recovery salt", "recovery", "salt", byRecovery},
		{"recovery kdf header", "recovery", "kdf", byRecovery},
		{"prf wrapped key", "prf", "wrapped_key", byPRF},
		{"prf nonce", "prf", "nonce", byPRF},
		{"prf salt", "prf", "salt", byPRF},
		{"prf kdf header", "prf", "kdf", byPRF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			code := f.create(t)
			p := f.addPasskey(t, "cred-1")
			var s vault.Slot
			var err error
			if tt.kind == "recovery" {
				s, err = f.store.RecoverySlot(ctx)
			} else {
				s, err = f.store.PRFSlot(ctx, p.id)
			}
			if err != nil {
				t.Fatal(err)
			}
			var orig, bad any
			switch tt.column {
			case "wrapped_key":
				orig, bad = s.WrappedKey, flip(s.WrappedKey, 5)
			case "nonce":
				orig, bad = s.Nonce, flip(s.Nonce, 0)
			case "salt":
				orig, bad = s.Salt, flip(s.Salt, 3)
			case "kdf":
				orig = s.KDF
				bad = strings.Replace(s.KDF, "t=1", "t=2", 1)
				if tt.kind == "prf" {
					bad = "argon2id$v=19$m=1024,t=1,p=1"
				}
			}
			f.exec(t, "UPDATE vault_slots SET "+tt.column+" = ? WHERE id = ?", bad, s.ID)
			wantUnlockFailed(t, tt.unlock(f, f.reopen(rpID), code, p))

			// The same slot, restored, opens: the failure was the tampering.
			f.exec(t, "UPDATE vault_slots SET "+tt.column+" = ? WHERE id = ?", orig, s.ID)
			if err := tt.unlock(f, f.reopen(rpID), code, p); err != nil {
				t.Fatalf("restored slot: %v", err)
			}
		})
	}
}

func TestPRFSlotBoundToCredentialAndRP(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	p := f.addPasskey(t, "cred-A")

	// A vault configured for another RP ID does not open the slot.
	wantUnlockFailed(t, f.reopen("evil.example").UnlockWithPRF(ctx, p.id, p.output))

	// The slot moved to another credential's row does not open, even with the right output.
	f.exec(t, "UPDATE vault_slots SET credential_id = ? WHERE credential_id = ?", []byte("cred-B"), p.id)
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithPRF(ctx, []byte("cred-B"), p.output))

	f.exec(t, "UPDATE vault_slots SET credential_id = ? WHERE credential_id = ?", p.id, []byte("cred-B"))
	if err := f.reopen(rpID).UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatalf("slot moved back: %v", err)
	}
}

func TestUnlockFailuresLookAlike(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	p := f.addPasskey(t, "cred-1")
	q := f.addPasskey(t, "cred-2")
	other := newFixture(t)
	wrongCode := other.create(t)

	forged := newPasskey(t, "x").output
	attempts := map[string]func(v *vault.Vault) error{
		"wrong recovery code":    func(v *vault.Vault) error { return v.UnlockWithRecovery(ctx, wrongCode) },
		"forged PRF output":      func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, p.id, forged) },
		"another passkey's PRF":  func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, p.id, q.output) },
		"short PRF output":       func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, p.id, p.output[:16]) },
		"empty PRF output":       func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, p.id, nil) },
		"unknown credential":     func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, []byte("nobody"), p.output) },
		"output for wrong input": func(v *vault.Vault) error { return v.UnlockWithPRF(ctx, p.id, p.input) },
	}
	var first error
	for name, try := range attempts {
		err := try(f.reopen(rpID))
		wantUnlockFailed(t, err)
		if first == nil {
			first = err
		}
		if err != first || err.Error() != first.Error() {
			t.Errorf("%s: %v differs from %v", name, err, first)
		}
		for _, s := range [][]byte{p.output, q.output, forged, []byte(wrongCode)} {
			if strings.Contains(err.Error(), string(s)) || strings.Contains(err.Error(), base64.RawURLEncoding.EncodeToString(s)) {
				t.Errorf("%s: error carries secret material", name)
			}
		}
	}
}

func TestTwoWrapsOneKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	p := f.addPasskey(t, "cred-1")
	f.v.Lock()

	byCode := f.reopen(rpID)
	if err := byCode.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatal(err)
	}
	if err := byCode.Set(ctx, "token", []byte("set after the code unlocked")); err != nil {
		t.Fatal(err)
	}
	byPasskey := f.reopen(rpID)
	if err := byPasskey.UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatal(err)
	}
	mustGet(t, byPasskey, "token", "set after the code unlocked")
	if !bytes.Equal(vault.DEKForTest(byCode), vault.DEKForTest(byPasskey)) {
		t.Fatal("the two slots hold different data keys")
	}
	if err := byPasskey.Set(ctx, "token", []byte("and back")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, byCode, "token", "and back")

	// A passkey added while unlocked by the other passkey wraps the same key too.
	q := newPasskey(t, "cred-2")
	if err := byPasskey.AddPRFSlot(ctx, q.id, q.input, q.output); err != nil {
		t.Fatal(err)
	}
	third := f.reopen(rpID)
	if err := third.UnlockWithPRF(ctx, q.id, q.output); err != nil {
		t.Fatal(err)
	}
	mustGet(t, third, "token", "and back")
}

func TestLockZeroesAndForgets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	if err := f.v.Set(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	dek := vault.DEKForTest(f.v) // the very buffer, not a copy
	if len(dek) != 32 || bytes.Equal(dek, make([]byte, 32)) {
		t.Fatalf("data key before Lock: %d bytes, all zero = %v", len(dek), bytes.Equal(dek, make([]byte, 32)))
	}
	f.v.Lock()
	if !bytes.Equal(dek, make([]byte, 32)) {
		t.Fatal("Lock left the data key's bytes in memory")
	}
	if vault.DEKForTest(f.v) != nil || !f.v.Locked() {
		t.Fatal("Lock did not forget the data key")
	}
	f.v.Lock() // locking twice is harmless

	p := newPasskey(t, "cred")
	checks := map[string]error{
		"Get":                f2(f.v.Get(ctx, "k")),
		"Set":                f.v.Set(ctx, "k", []byte("x")),
		"Names":              f2(f.v.Names(ctx)),
		"Delete":             f.v.Delete(ctx, "k"),
		"AddPRFSlot":         f.v.AddPRFSlot(ctx, p.id, p.input, p.output),
		"RegenerateRecovery": f2(f.v.RegenerateRecovery(ctx)),
	}
	for name, err := range checks {
		if !errors.Is(err, vault.ErrLocked) {
			t.Errorf("%s while locked: %v, want ErrLocked", name, err)
		}
	}
	if _, ok := f.v.Lookup("k"); ok {
		t.Error("Lookup while locked reported ok")
	}
}

// f2 keeps the error of a two-result call.
func f2[T any](_ T, err error) error { return err }

func TestRegenerateRecovery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	old := f.create(t)
	if used, err := f.v.RecoveryUsed(ctx); err != nil || used {
		t.Fatalf("RecoveryUsed before any use = %v, %v", used, err)
	}
	if err := f.reopen(rpID).UnlockWithRecovery(ctx, old); err != nil {
		t.Fatal(err)
	}
	if used, err := f.v.RecoveryUsed(ctx); err != nil || !used {
		t.Fatalf("RecoveryUsed after an unlock = %v, %v", used, err)
	}
	r, err := f.v.RegenerateRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh := r.Code
	if fresh == old {
		t.Fatal("the new code equals the old one")
	}
	if used, err := f.v.RecoveryUsed(ctx); err != nil || used {
		t.Fatalf("RecoveryUsed after regenerating = %v, %v", used, err)
	}
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithRecovery(ctx, old))
	if err := f.reopen(rpID).UnlockWithRecovery(ctx, fresh); err != nil {
		t.Fatalf("new code: %v", err)
	}
	slots, err := f.store.Slots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 {
		t.Fatalf("%d slots after regenerating, want the one recovery slot", len(slots))
	}
}

// TestBackoff: PRF attempts back off after a few failures; recovery codes never do here, so
// strangers guessing codes cannot keep the owner's right code waiting (the web layer limits
// them per source and in total).
func TestBackoff(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	p := f.addPasskey(t, "cred")
	forged := newPasskey(t, "x").output
	v := f.reopen(rpID)
	wrong := newFixture(t).create(t)

	for range 8 {
		wantUnlockFailed(t, v.UnlockWithRecovery(ctx, wrong))
	}
	if err := v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatalf("the right code after eight wrong ones: %v", err)
	}
	v.Lock()
	// Three free mistakes, then 1 s, 2 s … before the next PRF attempt is even tried.
	for range 4 {
		wantUnlockFailed(t, v.UnlockWithPRF(ctx, p.id, forged))
	}
	var tm *vault.TooManyAttemptsError
	if err := v.UnlockWithPRF(ctx, p.id, p.output); !errors.As(err, &tm) || tm.RetryAfter != time.Second {
		t.Fatalf("PRF attempt after four PRF failures: %v, want a 1 s wait", err)
	}
	if !v.Locked() {
		t.Fatal("an attempt refused by the limiter unlocked the vault")
	}
	// The recovery code is not held up by the passkey's back-off.
	if err := v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatalf("recovery while PRF backs off: %v", err)
	}
	v.Lock()
	f.clock.Advance(time.Second)
	wantUnlockFailed(t, v.UnlockWithPRF(ctx, p.id, forged)) // fifth failure
	if err := v.UnlockWithPRF(ctx, p.id, p.output); !errors.As(err, &tm) || tm.RetryAfter != 2*time.Second {
		t.Fatalf("after the fifth failure: %v, want a 2 s wait", err)
	}
	f.clock.Advance(2 * time.Second)
	if err := v.UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatalf("the right PRF output after the wait: %v", err)
	}
	// A typo is told apart from a wrong code.
	v.Lock()
	if err := v.UnlockWithRecovery(ctx, "typo"); !errors.Is(err, vault.ErrMalformedCode) {
		t.Fatalf("typo: %v", err)
	}
}

func TestLimiter(t *testing.T) {
	c := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	l := vault.NewLimiter(c.Now)
	waits := []time.Duration{0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300}
	for i, w := range waits {
		if err := l.Check(); err != nil {
			t.Fatalf("attempt %d refused: %v", i+1, err)
		}
		l.Fail()
		want := w * time.Second
		err := l.Check()
		if want == 0 {
			if err != nil {
				t.Fatalf("after %d failures: %v, want no wait", i+1, err)
			}
			continue
		}
		var tm *vault.TooManyAttemptsError
		if !errors.As(err, &tm) || tm.RetryAfter != want {
			t.Fatalf("after %d failures: %v, want a wait of %v", i+1, err, want)
		}
		c.Advance(want - time.Nanosecond)
		if l.Check() == nil {
			t.Fatalf("after %d failures the wait ended early", i+1)
		}
		c.Advance(time.Nanosecond)
	}
	if got := l.Failures(); got != len(waits) {
		t.Fatalf("Failures = %d, want %d", got, len(waits))
	}
	l.Succeed()
	if l.Failures() != 0 || l.Check() != nil {
		t.Fatal("Succeed did not reset the limiter")
	}
	e := &vault.TooManyAttemptsError{RetryAfter: 1500 * time.Millisecond}
	if got, want := e.Error(), "too many failed attempts; try again in 2s"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}

	custom := vault.NewLimiterForTest(c.Now, 0, time.Minute, time.Hour)
	custom.Fail()
	if err := custom.Check(); !errors.Is(err, vault.ErrTooManyAttempts) {
		t.Fatalf("a limiter with no free attempts: %v", err)
	}
}

func TestArgon2ParametersFromHeader(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	s, err := f.store.RecoverySlot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.KDF, "argon2id$v=19$m=1024,t=1,p=1"; got != want {
		t.Fatalf("slot header = %q, want %q", got, want)
	}
	if len(s.Salt) < 16 {
		t.Fatalf("salt is %d bytes, want at least 16", len(s.Salt))
	}
	// A vault whose defaults differ still opens the slot: the header decides.
	v := vault.New(f.store, rpID, f.clock.Now)
	vault.SetArgon2ForTest(v, 2, 2048, 2)
	if err := v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatalf("unlock with other defaults: %v", err)
	}
	// And it writes its own parameters into the next slot.
	if _, err := v.RegenerateRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.store.RecoverySlot(ctx); s.KDF != "argon2id$v=19$m=2048,t=2,p=2" {
		t.Fatalf("regenerated slot header = %q", s.KDF)
	}
}

// TestRFC9106Parameters runs the production parameters once, end to end, and reports their cost.
func TestRFC9106Parameters(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	v := vault.New(f.store, rpID, f.clock.Now) // no test override
	start := time.Now()
	code, err := v.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	s, err := f.store.RecoverySlot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.KDF != vault.DefaultArgon2Header || s.KDF != "argon2id$v=19$m=65536,t=3,p=4" {
		t.Fatalf("header = %q, want RFC 9106's second option", s.KDF)
	}
	v.Lock()
	start = time.Now()
	if err := v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatal(err)
	}
	t.Logf("Argon2id m=64MiB t=3 p=4: create %v, unlock %v", created, time.Since(start))
}

func TestRemoveSlot(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	p := f.addPasskey(t, "cred-1")
	q := f.addPasskey(t, "cred-2")
	if err := f.v.RemoveSlot(ctx, []byte("nobody")); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("RemoveSlot(unknown): %v, want ErrNotFound", err)
	}
	if err := f.v.RemoveSlot(ctx, p.id); err != nil {
		t.Fatal(err)
	}
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithPRF(ctx, p.id, p.output))
	if _, ok, err := f.v.PRFInput(ctx, p.id); err != nil || ok {
		t.Fatalf("PRFInput of a removed slot: %v, %v", ok, err)
	}

	// Without the recovery slot, the last passkey's slot is all that unlocks: it stays.
	f.exec(t, "DELETE FROM vault_slots WHERE kind = 'recovery'")
	if err := f.v.RemoveSlot(ctx, q.id); !errors.Is(err, vault.ErrLastSlot) {
		t.Fatalf("removing the last slot: %v, want ErrLastSlot", err)
	}
	if err := f.reopen(rpID).UnlockWithPRF(ctx, q.id, q.output); err != nil {
		t.Fatalf("the refused removal removed the slot: %v", err)
	}
	// With a recovery slot again, it may go.
	if _, err := f.v.RegenerateRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.v.RemoveSlot(ctx, q.id); err != nil {
		t.Fatal(err)
	}
}

func TestPRFInputs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if m, err := f.v.PRFInputs(ctx); err != nil || len(m) != 0 {
		t.Fatalf("PRFInputs without a vault = %v, %v", m, err)
	}
	f.create(t)
	p := f.addPasskey(t, "\x00\xffcred-1")
	q := f.addPasskey(t, "cred-2")
	f.v.Lock() // the inputs are needed to build the unlock ceremony, so they are readable locked

	m, err := f.v.PRFInputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		base64.RawURLEncoding.EncodeToString(p.id): p.input,
		base64.RawURLEncoding.EncodeToString(q.id): q.input,
	}
	if len(m) != len(want) {
		t.Fatalf("PRFInputs = %d entries, want %d", len(m), len(want))
	}
	for k, w := range want {
		if !bytes.Equal(m[k], w) {
			t.Errorf("PRFInputs[%s] = %x, want %x", k, m[k], w)
		}
	}
	in, ok, err := f.v.PRFInput(ctx, p.id)
	if err != nil || !ok || !bytes.Equal(in, p.input) {
		t.Fatalf("PRFInput = %x, %v, %v", in, ok, err)
	}
	if _, ok, err := f.v.PRFInput(ctx, []byte("nobody")); err != nil || ok {
		t.Fatalf("PRFInput(unknown) = %v, %v", ok, err)
	}

	// Re-adding a credential replaces its slot: the old output no longer opens it.
	if err := f.v.UnlockWithPRF(ctx, p.id, p.output); err != nil {
		t.Fatal(err)
	}
	p2 := newPasskey(t, string(p.id))
	if err := f.v.AddPRFSlot(ctx, p2.id, p2.input, p2.output); err != nil {
		t.Fatal(err)
	}
	wantUnlockFailed(t, f.reopen(rpID).UnlockWithPRF(ctx, p.id, p.output))
	if err := f.reopen(rpID).UnlockWithPRF(ctx, p2.id, p2.output); err != nil {
		t.Fatal(err)
	}
}

func TestAddPRFSlotValidation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	p := newPasskey(t, "cred")
	tests := []struct {
		name              string
		id, input, output []byte
	}{
		{"no credential ID", nil, p.input, p.output},
		{"credential ID over 1023 bytes", make([]byte, 1024), p.input, p.output},
		{"short input", p.id, p.input[:31], p.output},
		{"short output", p.id, p.input, p.output[:31]},
		{"long output", p.id, p.input, append(bytes.Clone(p.output), 0)},
	}
	for _, tt := range tests {
		if err := f.v.AddPRFSlot(ctx, tt.id, tt.input, tt.output); !errors.Is(err, vault.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tt.name, err)
		}
	}
}

func TestSecrets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.create(t)
	for _, name := range []string{"b.token", "a_key", "C-3"} {
		if err := f.v.Set(ctx, name, []byte("v-"+name)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := f.v.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, ","); got != "C-3,a_key,b.token" {
		t.Fatalf("Names = %s", got)
	}
	// Set replaces the value and keeps the creation time.
	s1, _ := f.store.Secret(ctx, "a_key")
	f.clock.Advance(time.Hour)
	if err := f.v.Set(ctx, "a_key", []byte("rotated")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, f.v, "a_key", "rotated")
	s2, _ := f.store.Secret(ctx, "a_key")
	if !s2.CreatedAt.Equal(s1.CreatedAt) || !s2.UpdatedAt.Equal(s1.UpdatedAt.Add(time.Hour)) {
		t.Fatalf("times after replace: created %v (was %v), updated %v", s2.CreatedAt, s1.CreatedAt, s2.UpdatedAt)
	}
	if bytes.Equal(s1.Nonce, s2.Nonce) {
		t.Fatal("a nonce was reused")
	}
	if err := f.v.Delete(ctx, "a_key"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Get(ctx, "a_key"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := f.v.Delete(ctx, "a_key"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("Delete twice: %v, want ErrNotFound", err)
	}
	// An empty value is a value.
	if err := f.v.Set(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, f.v, "empty", "")

	for _, bad := range []string{"", "has space", "${secret:x}", "ünï", strings.Repeat("x", 65)} {
		if err := f.v.Set(ctx, bad, []byte("v")); !errors.Is(err, vault.ErrInvalid) {
			t.Errorf("Set(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if !vault.ValidName(strings.Repeat("x", 64)) {
		t.Error("a 64-character name is refused")
	}
	if err := f.v.Set(ctx, "big", make([]byte, vault.MaxSecretSize+1)); !errors.Is(err, vault.ErrInvalid) {
		t.Errorf("Set of an oversized value: %v, want ErrInvalid", err)
	}
	if err := f.v.Set(ctx, "max", make([]byte, vault.MaxSecretSize)); err != nil {
		t.Errorf("Set of a value at the limit: %v", err)
	}
	// Secrets are not stored in the clear.
	var raw []byte
	if err := f.db.QueryRowContext(ctx, "SELECT ciphertext FROM vault_secrets WHERE name = 'b.token'").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("v-b.token")) {
		t.Fatal("the plaintext is in the database")
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	code := f.create(t)
	p := f.addPasskey(t, "cred")
	if err := f.v.Set(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				switch i % 4 {
				case 0:
					if b, err := f.v.Get(ctx, "k"); err == nil && string(b) != "v" {
						t.Errorf("Get = %q", b)
					}
				case 1:
					f.v.Lock()
				case 2:
					if err := f.v.UnlockWithPRF(ctx, p.id, p.output); err != nil {
						t.Errorf("UnlockWithPRF: %v", err)
					}
				case 3:
					if err := f.v.Set(ctx, "k", []byte("v")); err != nil && !errors.Is(err, vault.ErrLocked) {
						t.Errorf("Set: %v", err)
					}
					f.v.Lookup("k")
				}
			}
		})
	}
	wg.Wait()
	if err := f.v.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatal(err)
	}
	mustGet(t, f.v, "k", "v")
}

func TestUnlockHonoursContext(t *testing.T) {
	f := newFixture(t)
	code := f.create(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := f.reopen(rpID)
	for range 5 {
		if err := v.UnlockWithRecovery(ctx, code); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled unlock: %v, want context.Canceled", err)
		}
	}
	// Cancelled attempts were not failures: no backoff follows them.
	if err := v.UnlockWithRecovery(context.Background(), code); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkUnlockRecovery(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b)
	v := vault.New(f.store, rpID, f.clock.Now) // RFC 9106 parameters
	code, err := v.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := v.UnlockWithRecovery(ctx, code); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnlockPRF(b *testing.B) {
	ctx := context.Background()
	f := newFixture(b)
	f.create(b)
	p := f.addPasskey(b, "cred")
	for b.Loop() {
		if err := f.v.UnlockWithPRF(ctx, p.id, p.output); err != nil {
			b.Fatal(err)
		}
	}
}
