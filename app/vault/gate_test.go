package vault_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"maven/app/vault"
)

// hookLog records what the gate told its hooks, in order.
type hookLog struct {
	mu     sync.Mutex
	events []string
	lookup func(string) ([]byte, bool)
}

func (h *hookLog) unlocked(lookup func(string) ([]byte, bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "unlocked")
	h.lookup = lookup
}

func (h *hookLog) locked() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "locked")
	h.lookup = nil
}

func (h *hookLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.events
	h.events = nil
	return e
}

func newGate(t *testing.T, v *vault.Vault) (*vault.Gate, *hookLog) {
	t.Helper()
	g, err := vault.NewGate(context.Background(), v, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookLog{}
	g.OnUnlock(h.unlocked)
	g.OnLock(h.locked)
	return g, h
}

func TestGateLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	g, h := newGate(t, f.v)
	if g.HasVault() || g.Locked() || g.Epoch() != "" {
		t.Fatalf("without a vault: has %v locked %v epoch %q", g.HasVault(), g.Locked(), g.Epoch())
	}
	if err := g.SetSecret(ctx, "tok", []byte("x")); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("set without a vault: %v", err)
	}

	// The first enrolled passkey creates the vault and returns the code once.
	p := newPasskey(t, "cred-1")
	code, err := g.Enroll(ctx, p.id, p.input, p.output)
	if err != nil || code == "" {
		t.Fatalf("enroll: %q %v", code, err)
	}
	if !g.HasVault() || g.Locked() || !slices.Equal(h.take(), []string{"unlocked"}) {
		t.Fatal("after the vault was created: want it open and the hooks told")
	}
	q := newPasskey(t, "cred-2")
	if code, err := g.Enroll(ctx, q.id, q.input, q.output); err != nil || code != "" {
		t.Fatalf("second enroll: %q %v", code, err)
	}
	h.take()

	// Setting a secret tells the hooks again, so waiting servers notice.
	if err := g.SetSecret(ctx, "tok", []byte("s3cret")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.take(), []string{"unlocked"}) {
		t.Fatal("set secret did not tell the hooks")
	}
	if v, ok := h.lookup("tok"); !ok || string(v) != "s3cret" {
		t.Fatalf("lookup: %q %v", v, ok)
	}

	epoch := g.Epoch()
	if !g.Lock() || !g.Locked() || !slices.Equal(h.take(), []string{"locked"}) || g.Epoch() == epoch {
		t.Fatal("lock: want locked, the hooks told, a new epoch")
	}
	if _, err := g.SecretNames(ctx); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("names while locked: %v", err)
	}
	if err := g.SetSecret(ctx, "tok", []byte("y")); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("set while locked: %v", err)
	}
	if _, err := g.Enroll(ctx, q.id, q.input, q.output); !errors.Is(err, vault.ErrLocked) {
		t.Fatalf("enroll while locked: %v", err)
	}
	if g.Lock() {
		t.Fatal("locking a locked vault says it was open")
	}
	h.take()

	// A wrong PRF output is the one failure and tells nobody; the right one unlocks.
	if err := g.UnlockWithPRF(ctx, p.id, flip(p.output, 3)); err != vault.ErrUnlockFailed {
		t.Fatalf("wrong output: %v", err)
	}
	if len(h.take()) != 0 || !g.Locked() {
		t.Fatal("a failed unlock told the hooks or unlocked")
	}
	if err := g.UnlockWithPRF(ctx, q.id, q.output); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.take(), []string{"unlocked"}) || g.Locked() {
		t.Fatal("unlock did not tell the hooks")
	}
	g.Lock()
	if err := g.UnlockWithRecovery(ctx, code); err != nil {
		t.Fatal(err)
	}
	if used, _ := g.RecoveryUsed(ctx); !used {
		t.Fatal("the recovery code is not marked used")
	}

	// A restart: a new gate over the same store starts locked, in a new epoch.
	g2, _ := newGate(t, f.reopen(rpID))
	if !g2.HasVault() || !g2.Locked() || g2.Epoch() == "" || g2.Epoch() == g.Epoch() {
		t.Fatal("a gate over an existing vault must start locked in a new epoch")
	}

	// A removed passkey's slot goes; removing one without a slot is no error.
	if err := g.ForgetPasskey(ctx, p.id); err != nil {
		t.Fatal(err)
	}
	if ok, _ := g.CanUnlock(ctx, p.id); ok {
		t.Fatal("the removed passkey still has a slot")
	}
	if err := g.ForgetPasskey(ctx, []byte("never-enrolled")); err != nil {
		t.Fatal(err)
	}
}

func TestGateEnrollValidatesBeforeCreating(t *testing.T) {
	f := newFixture(t)
	g, _ := newGate(t, f.v)
	if _, err := g.Enroll(context.Background(), []byte("c"), make([]byte, 32), make([]byte, 5)); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("short output: %v", err)
	}
	if g.HasVault() {
		t.Fatal("a refused enrollment created a vault")
	}
}
