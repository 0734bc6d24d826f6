// Package vault seals Maven's secrets at rest (docs/design.md#rule-22;
// docs/security.md#req-24 to docs/security.md#req-35).
//
// A random 256-bit data key encrypts each secret with AES-256-GCM, the secret's name in the
// associated data. The data key itself is stored only wrapped, once per unlock method, in "key
// slots": one per PRF-capable passkey (sealed to an X25519 key derived with HKDF-SHA256 from the
// PRF output) and one for a recovery code the daemon generates (stretched with Argon2id). The
// vault starts locked; an unlock opens one slot and keeps the data key in memory until Lock.
// Regenerating the recovery code rotates the data key: every slot is wrapped again and every
// secret sealed again, so a data key read out of memory once opens nothing sealed later.
//
// Memory: the data key lives in one buffer and one AES-GCM instance, both zeroed by Lock. A
// secret's value is only ever handed out as a []byte the caller owns and zeroes (Get, Lookup);
// the vault keeps no plaintext. Key-encryption keys are zeroed after each use.
//
// Every reason an unlock fails (wrong code, wrong or forged PRF output, unknown credential,
// tampered slot) is the same ErrUnlockFailed, so a caller cannot tell them apart. No error
// carries secret material.
package vault

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of the vault. Handlers map each to a status and a message fit for the owner.
var (
	// ErrLocked means the data key is not in memory: unlock first.
	ErrLocked = errors.New("vault is locked")
	// ErrNoVault means no vault has been created yet, so there is nothing to unlock.
	ErrNoVault = errors.New("no vault has been created")
	// ErrExists means Create found a vault already there.
	ErrExists = errors.New("vault already exists")
	// ErrNotFound means no secret or key slot has that name or credential.
	ErrNotFound = errors.New("not found in the vault")
	// ErrUnlockFailed is every failed unlock, whatever the reason, with one message.
	ErrUnlockFailed = errors.New("unlock failed")
	// ErrMalformedCode means the input is not a well-formed recovery code (wrong length, a
	// character outside the alphabet, a failed check symbol): a typo, not a guess, so it costs
	// no attempt. It matches ErrUnlockFailed too, for callers that do not care.
	ErrMalformedCode = fmt.Errorf("%w: that is not a well-formed recovery code; check it for a typo", ErrUnlockFailed)
	// ErrLastSlot means removing the slot would leave no way to unlock.
	ErrLastSlot = errors.New("the last way to unlock the vault cannot be removed")
	// ErrInvalid means an argument is malformed: a secret name, a value's size, a PRF length.
	ErrInvalid = errors.New("invalid vault argument")
	// ErrTampered means a stored secret failed authentication: its ciphertext, nonce or name
	// was changed, or it was sealed under another data key.
	ErrTampered = errors.New("sealed secret failed authentication")
)

// MaxSecretSize bounds a secret's value; tokens and passwords are far smaller.
const MaxSecretSize = 64 << 10

// Vault holds the data key while unlocked and seals and opens secrets with it. It is safe for
// concurrent use.
type Vault struct {
	store Store
	rpID  string
	now   func() time.Time
	kdf   argon2Params // for new recovery slots; tests lower it
	// PRF attempts back off: only the owner's authenticator gets one this far (the assertion is
	// verified first). Recovery codes do not back off here: anyone who reaches /unlock can try
	// them, and a back-off they all share would let a stranger keep the owner out; the web
	// layer limits them per source and in total instead.
	prfLimiter *Limiter
	// kdfTurn admits one key derivation at a time: an Argon2id run takes 64 MiB, and
	// serializing attempts also stops parallel guesses from slipping past the limiters.
	kdfTurn chan struct{}

	mu  sync.RWMutex
	key *dataKey // nil while locked
}

// dataKey is the data key while unlocked, with the one AES-GCM instance made from it, so that
// sealing and opening secrets leave no key schedule behind in freed memory.
type dataKey struct {
	raw []byte
	gcm *gcmKey
}

// newDataKey takes ownership of raw.
func newDataKey(raw []byte) (*dataKey, error) {
	g, err := newGCM(raw)
	if err != nil {
		clear(raw)
		return nil, err
	}
	return &dataKey{raw: raw, gcm: g}, nil
}

func (k *dataKey) wipe() {
	if k == nil {
		return
	}
	clear(k.raw)
	k.gcm.wipe()
}

// PRFResult is what lets one passkey unlock: its credential ID, the PRF input it evaluated and
// the PRF output its authenticator gave.
type PRFResult struct {
	CredentialID, Input, Output []byte
}

func (p PRFResult) valid() bool {
	return len(p.CredentialID) > 0 && len(p.CredentialID) <= 1023 && len(p.Input) == prfSize && len(p.Output) == prfSize
}

// New returns a locked vault over store. rpID is the WebAuthn relying party ID that PRF slots
// are bound to; now is the clock for timestamps and the attempt limiters.
func New(store Store, rpID string, now func() time.Time) *Vault {
	return &Vault{
		store: store, rpID: rpID, now: now,
		prfLimiter: NewLimiter(now),
		kdf:        defaultArgon2, kdfTurn: make(chan struct{}, 1),
	}
}

// Exists reports whether a vault has been created (any key slot is stored).
func (v *Vault) Exists(ctx context.Context) (bool, error) {
	slots, err := v.store.Slots(ctx)
	if err != nil {
		return false, fmt.Errorf("vault: %w", err)
	}
	return len(slots) > 0, nil
}

// Locked reports whether the data key is absent from memory.
func (v *Vault) Locked() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.key == nil
}

// Lock zeroes the data key and its AES-GCM instance and forgets them. Locking a locked vault
// does nothing.
func (v *Vault) Lock() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.key.wipe()
	v.key = nil
}

// Create makes a new vault: a fresh data key, a recovery slot and a slot for each passkey given,
// stored in one transaction, so a crash can never leave a vault whose only slot wraps a key
// nobody was shown the way to. It returns the recovery code, to be shown once, and leaves the
// vault unlocked. ErrExists if there is a vault already; ErrInvalid for a malformed PRFResult.
func (v *Vault) Create(ctx context.Context, passkeys ...PRFResult) (string, error) {
	for _, p := range passkeys {
		if !p.valid() {
			return "", fmt.Errorf("create vault: %w: want a credential ID and 32-byte PRF input and output", ErrInvalid)
		}
	}
	if ok, err := v.Exists(ctx); err != nil {
		return "", err
	} else if ok {
		return "", ErrExists
	}
	key, err := newDataKey(randomBytes(keySize))
	if err != nil {
		return "", fmt.Errorf("create vault: %w", err)
	}
	code := newRecoveryCode()
	defer clear(code)
	slots, err := v.newSlots(ctx, key, code, passkeys)
	if err == nil {
		err = v.store.CreateVault(ctx, slots)
	}
	if err != nil {
		key.wipe()
		if errors.Is(err, ErrExists) {
			return "", ErrExists
		}
		return "", fmt.Errorf("create vault: %w", err)
	}
	v.install(key)
	return formatRecoveryCode(code), nil
}

// newSlots wraps key in a recovery slot for code and a slot for each passkey.
func (v *Vault) newSlots(ctx context.Context, key *dataKey, code []byte, passkeys []PRFResult) ([]*Slot, error) {
	rec, err := v.newRecoverySlot(ctx, key.raw, code)
	if err != nil {
		return nil, err
	}
	slots := []*Slot{&rec}
	for _, p := range passkeys {
		s, err := v.newPRFSlot(key, p)
		if err != nil {
			return nil, err
		}
		slots = append(slots, &s)
	}
	return slots, nil
}

// RecoveryUsed reports whether the current recovery code has unlocked the vault. It has then
// been typed somewhere, so the owner should be led to regenerate it (docs/security.md#req-33).
func (v *Vault) RecoveryUsed(ctx context.Context) (bool, error) {
	s, err := v.store.RecoverySlot(ctx)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("vault: %w", err)
	}
	return !s.LastUsedAt.IsZero(), nil
}

// NewPRFInput returns a fresh random 32-byte PRF input for a credential, to be evaluated by
// the authenticator and then passed to AddPRFSlot with its output.
func NewPRFInput() ([]byte, error) {
	return randomBytes(prfSize), nil
}

// AddPRFSlot wraps the data key for one passkey, from the PRF output the authenticator gave
// for prfInput. A slot the credential already had is replaced. ErrLocked unless unlocked;
// ErrInvalid if an argument has the wrong length.
func (v *Vault) AddPRFSlot(ctx context.Context, credentialID, prfInput, prfOutput []byte) error {
	p := PRFResult{CredentialID: credentialID, Input: prfInput, Output: prfOutput}
	if !p.valid() {
		return fmt.Errorf("add passkey to vault: %w: want a credential ID and 32-byte PRF input and output", ErrInvalid)
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.key == nil {
		return ErrLocked
	}
	s, err := v.newPRFSlot(v.key, p)
	if err != nil {
		return fmt.Errorf("add passkey to vault: %w", err)
	}
	if err := v.store.PutPRFSlot(ctx, &s); err != nil {
		return fmt.Errorf("add passkey to vault: %w", err)
	}
	return nil
}

// RemoveSlot deletes the slot of a passkey, as when the passkey is removed. ErrNotFound if it
// has none; ErrLastSlot if no other slot (another passkey's or the recovery code's) remains.
// It needs no data key, so it works while locked.
func (v *Vault) RemoveSlot(ctx context.Context, credentialID []byte) error {
	if err := v.store.DeletePRFSlot(ctx, credentialID); err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrLastSlot) {
			return err
		}
		return fmt.Errorf("remove passkey from vault: %w", err)
	}
	return nil
}

// PRFInput returns the PRF input of a credential's slot, and false if it has none.
func (v *Vault) PRFInput(ctx context.Context, credentialID []byte) ([]byte, bool, error) {
	s, err := v.store.PRFSlot(ctx, credentialID)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("vault: %w", err)
	}
	return s.PRFInput, true, nil
}

// PRFInputs returns the PRF input of every passkey that can unlock, keyed by the credential ID
// in unpadded base64url: the shape of evalByCredential.
func (v *Vault) PRFInputs(ctx context.Context) (map[string][]byte, error) {
	slots, err := v.store.Slots(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	out := make(map[string][]byte)
	for _, s := range slots {
		if s.Kind == SlotPRF {
			out[base64.RawURLEncoding.EncodeToString(s.CredentialID)] = s.PRFInput
		}
	}
	return out, nil
}

// UnlockWithPRF opens the slot of credentialID with the PRF output of an assertion the caller
// has already verified; the output is not covered by the signature, so this is the check that
// it is genuine. Any failure is ErrUnlockFailed; ErrNoVault if there is no vault; a
// *TooManyAttemptsError, untried, while PRF attempts back off (apart from recovery codes).
func (v *Vault) UnlockWithPRF(ctx context.Context, credentialID, prfOutput []byte) error {
	release, err := v.beginAttempt(ctx, v.prfLimiter)
	if err != nil {
		return err
	}
	defer release()
	slot, err := v.store.PRFSlot(ctx, credentialID)
	if errors.Is(err, ErrNotFound) {
		return v.noSuchSlot(ctx, v.prfLimiter)
	}
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	dek, err := v.openPRFSlot(slot, prfOutput)
	if err := v.finishAttempt(ctx, v.prfLimiter, slot, dek, err); err != nil {
		return err
	}
	if slot.KDF == kdfHKDF {
		// A slot of the first format cannot be wrapped again without its passkey, so a rotation
		// would have to drop it; now that the passkey is here, it takes the current format. If
		// that fails the old slot still opens, and the next unlock tries again.
		_ = v.AddPRFSlot(ctx, credentialID, slot.PRFInput, prfOutput)
	}
	return nil
}

// UnlockWithRecovery opens the recovery slot with a code as the owner typed it (case, spaces
// and dashes do not matter). A wrong code is ErrUnlockFailed; a mistyped one ErrMalformedCode;
// ErrNoVault if there is no vault. Attempts run one at a time and do not back off: the caller
// limits who may try how often (the web layer does, per source and in total).
func (v *Vault) UnlockWithRecovery(ctx context.Context, code string) error {
	release, err := v.kdfWait(ctx)
	if err != nil {
		return err
	}
	defer release()
	canon := normalizeRecoveryCode(code)
	if canon == nil {
		return ErrMalformedCode
	}
	defer clear(canon)
	slot, err := v.store.RecoverySlot(ctx)
	if errors.Is(err, ErrNotFound) {
		return v.noSuchSlot(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	dek, err := openRecoverySlot(slot, canon)
	return v.finishAttempt(ctx, nil, slot, dek, err)
}

// beginAttempt waits for the key-derivation turn, then asks the method's limiter. The
// returned func gives the turn back.
func (v *Vault) beginAttempt(ctx context.Context, l *Limiter) (func(), error) {
	release, err := v.kdfWait(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.Check(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// kdfWait takes the key-derivation turn, or gives up when ctx ends.
func (v *Vault) kdfWait(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case v.kdfTurn <- struct{}{}:
		return func() { <-v.kdfTurn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// noSuchSlot answers an unlock that found no slot: ErrNoVault when there is no vault at all
// (nothing to guess), otherwise a counted failure like any other.
func (v *Vault) noSuchSlot(ctx context.Context, l *Limiter) error {
	ok, err := v.Exists(ctx)
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	if !ok {
		return ErrNoVault
	}
	l.Fail()
	return ErrUnlockFailed
}

// finishAttempt turns the outcome of opening slot into the unlock's answer, taking ownership of
// dek, and tells l (if not nil) how it went.
func (v *Vault) finishAttempt(ctx context.Context, l *Limiter, slot Slot, dek []byte, err error) error {
	if errors.Is(err, errOpen) {
		l.Fail()
		return ErrUnlockFailed
	}
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	if err := v.store.MarkSlotUsed(ctx, slot.ID, v.now()); err != nil {
		clear(dek)
		return fmt.Errorf("unlock: %w", err)
	}
	key, err := newDataKey(dek)
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	v.install(key)
	l.Succeed()
	return nil
}

func openRecoverySlot(s Slot, code []byte) ([]byte, error) {
	p, err := parseArgon2(s.KDF)
	if err != nil {
		return nil, errOpen // an edited header is a tampered slot
	}
	kek := recoveryKEK(code, s.Salt, p)
	defer clear(kek)
	return openDEK(kek, s, adRecovery)
}

func openDEK(kek []byte, s Slot, ad string) ([]byte, error) {
	return checkedDEK(open(kek, s.Nonce, s.WrappedKey, ad))
}

// checkedDEK refuses an opened wrap that is not a data key.
func checkedDEK(dek []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if len(dek) != keySize {
		clear(dek)
		return nil, errOpen
	}
	return dek, nil
}

// newRecoverySlot wraps dek under a key stretched from code with the vault's Argon2id
// parameters, which it records in the slot header.
func (v *Vault) newRecoverySlot(ctx context.Context, dek, code []byte) (Slot, error) {
	release, err := v.kdfWait(ctx)
	if err != nil {
		return Slot{}, err
	}
	salt := randomBytes(saltSizeRec)
	kek := recoveryKEK(code, salt, v.kdf)
	release()
	defer clear(kek)
	nonce, wrapped, err := seal(kek, dek, adRecovery)
	if err != nil {
		return Slot{}, err
	}
	return Slot{
		Kind: SlotRecovery, KDF: v.kdf.String(), Salt: salt, Nonce: nonce, WrappedKey: wrapped,
		CreatedAt: v.now(),
	}, nil
}

// install makes key the data key in memory, wiping any previous one.
func (v *Vault) install(key *dataKey) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.key.wipe()
	v.key = key
}

func bytesClone(b []byte) []byte { return append([]byte(nil), b...) }
