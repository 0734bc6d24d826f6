package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/crypto/argon2"
)

const (
	keySize     = 32 // AES-256 keys: the data key and every key-encryption key
	nonceSize   = 12 // GCM's standard 96-bit nonce, drawn at random for each seal
	prfSize     = 32 // a PRF output and a PRF input are both 32 bytes
	saltSizePRF = 32
	saltSizeRec = 16 // RFC 9106 recommends 128-bit salts

	// kdfHKDF is the header of a PRF slot of the first format: the PRF output's HKDF is the
	// key-encryption key, so only that passkey can wrap a new data key for it.
	kdfHKDF = "hkdf-sha256"
	// kdfX25519 is the header of a PRF slot whose wrap is sealed to an X25519 public key derived
	// from the PRF output: a new data key can be wrapped for the passkey without it (rotation),
	// and only the passkey can open the wrap.
	kdfX25519 = "x25519-hkdf-sha256"
)

// Associated data and HKDF info strings. Each names what it protects, so a ciphertext moved
// to another place (another secret, credential or RP ID) fails to open.
const (
	adSecret     = "maven/secret/v1|"
	adWrapPRF    = "maven/wrap/v1|prf|"
	adWrapX25519 = "maven/wrap/v2|prf|"
	adSlotKey    = "maven/slot-key/v1|"
	adRecovery   = "maven/wrap/v1|recovery"
	infoUnlock   = "maven/unlock/v1|"
	infoX25519   = "maven/unlock/v2|x25519|"
	infoWrapKEK  = "maven/wrap/v2|kek|"
)

// errOpen is internal: every reason a wrap or secret fails to open. The Vault turns it into
// ErrUnlockFailed or a corruption error, never passing on which check failed.
var errOpen = errors.New("message authentication failed")

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails since Go 1.24; it crashes the program instead
	return b
}

// gcmKey is AES-256-GCM under one key. crypto/aes keeps the key's expansion (whose first round
// keys are the key itself) and crypto/cipher the GHASH key derived from it in values the caller
// never sees, so wipe erases those values in place: without it, every key ever used would stay
// readable in freed memory.
type gcmKey struct {
	aead  cipher.AEAD
	block cipher.Block
}

func newGCM(key []byte) (*gcmKey, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		wipeOpaque(block)
		return nil, err
	}
	return &gcmKey{aead: aead, block: block}, nil
}

// wipe zeroes the key schedule and the GHASH key; the gcmKey must not be used afterwards.
func (k *gcmKey) wipe() {
	wipeOpaque(k.block)
	wipeOpaque(k.aead)
}

// seal encrypts plaintext with a fresh random nonce.
func (k *gcmKey) seal(plaintext []byte, ad string) (nonce, ciphertext []byte) {
	nonce = randomBytes(nonceSize)
	return nonce, k.aead.Seal(nil, nonce, plaintext, []byte(ad))
}

// open reverses seal; any mismatch (key, nonce, ciphertext, associated data) is errOpen. The
// caller owns the plaintext and zeroes it.
func (k *gcmKey) open(nonce, ciphertext []byte, ad string) ([]byte, error) {
	if len(nonce) != nonceSize {
		return nil, errOpen
	}
	pt, err := k.aead.Open(nil, nonce, ciphertext, []byte(ad))
	if err != nil {
		return nil, errOpen
	}
	return pt, nil
}

// seal encrypts plaintext under a one-off key (a key-encryption key) with a fresh random nonce.
func seal(key, plaintext []byte, ad string) (nonce, ciphertext []byte, err error) {
	k, err := newGCM(key)
	if err != nil {
		return nil, nil, err
	}
	defer k.wipe()
	nonce, ciphertext = k.seal(plaintext, ad)
	return nonce, ciphertext, nil
}

// open reverses seal.
func open(key, nonce, ciphertext []byte, ad string) ([]byte, error) {
	k, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	defer k.wipe()
	return k.open(nonce, ciphertext, ad)
}

// wipeOpaque zeroes the value x points to, if x is a non-nil pointer to a value that holds no
// pointers (the key schedule of crypto/aes, the state of crypto/cipher's GCM: fixed arrays and
// integers). A value with pointers is left alone, since erasing pointers behind the garbage
// collector's back is unsafe; it reports whether it wiped.
func wipeOpaque(x any) bool {
	v := reflect.ValueOf(x)
	if v.Kind() != reflect.Pointer || v.IsNil() || hasPointers(v.Type().Elem()) {
		return false
	}
	clear(unsafe.Slice((*byte)(v.UnsafePointer()), v.Type().Elem().Size()))
	return true
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

func secretAD(name string) string { return adSecret + name }

// prfBinding names the credential and the RP it belongs to, as HKDF info and associated data
// both carry it.
func prfBinding(rpID string, credentialID []byte) string {
	return rpID + "|" + base64.RawURLEncoding.EncodeToString(credentialID)
}

// prfKEK derives a PRF slot's key-encryption key. The PRF output is never used as a key
// directly (docs/security.md#req-26). The caller zeroes the result.
func prfKEK(prfOutput, salt []byte, rpID string, credentialID []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, prfOutput, salt, infoUnlock+prfBinding(rpID, credentialID), keySize)
}

// x25519Key derives a PRF slot's X25519 private key from the PRF output. The caller zeroes the
// result.
func x25519Key(prfOutput, salt []byte, rpID string, credentialID []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, prfOutput, salt, infoX25519+prfBinding(rpID, credentialID), keySize)
}

// x25519Public returns the public key of the private scalar priv.
func x25519Public(priv []byte) ([]byte, error) {
	k, err := ecdh.X25519().NewPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return k.PublicKey().Bytes(), nil
}

// wrapX25519 seals dek to the public key pub: a fresh ephemeral key agrees a secret with pub,
// whose HKDF (salted with both public keys) is the one-off key-encryption key. It returns the
// ephemeral public key followed by the wrap, and the nonce.
func wrapX25519(dek, pub []byte, binding string) (nonce, wrapped []byte, err error) {
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	peer, err := ecdh.X25519().NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	shared, err := eph.ECDH(peer)
	if err != nil {
		return nil, nil, err
	}
	defer clear(shared)
	ephPub := eph.PublicKey().Bytes()
	kek, err := hkdf.Key(sha256.New, shared, append(bytesClone(ephPub), pub...), infoWrapKEK+binding, keySize)
	if err != nil {
		return nil, nil, err
	}
	defer clear(kek)
	nonce, ct, err := seal(kek, dek, adWrapX25519+binding)
	if err != nil {
		return nil, nil, err
	}
	return nonce, append(ephPub, ct...), nil
}

// unwrapX25519 reverses wrapX25519 with the private key priv. Any failure is errOpen.
func unwrapX25519(priv, nonce, wrapped []byte, binding string) ([]byte, error) {
	if len(wrapped) < 32 {
		return nil, errOpen
	}
	key, err := ecdh.X25519().NewPrivateKey(priv)
	if err != nil {
		return nil, errOpen
	}
	peer, err := ecdh.X25519().NewPublicKey(wrapped[:32])
	if err != nil {
		return nil, errOpen
	}
	shared, err := key.ECDH(peer)
	if err != nil {
		return nil, errOpen
	}
	defer clear(shared)
	salt := append(bytesClone(wrapped[:32]), key.PublicKey().Bytes()...)
	kek, err := hkdf.Key(sha256.New, shared, salt, infoWrapKEK+binding, keySize)
	if err != nil {
		return nil, err
	}
	defer clear(kek)
	return open(kek, nonce, wrapped[32:], adWrapX25519+binding)
}

// argon2Params is a recovery slot's KDF header.
type argon2Params struct {
	Time    uint32 // passes
	Memory  uint32 // KiB
	Threads uint8
}

// defaultArgon2 is RFC 9106's second recommended option (section 4): 64 MiB, 3 passes, 4 lanes.
var defaultArgon2 = argon2Params{Time: 3, Memory: 64 * 1024, Threads: 4}

// Bounds on a stored header, so an edited row cannot make an unlock attempt allocate
// unbounded memory or spin for hours. They are far above the defaults.
const (
	maxArgon2Time   = 64
	maxArgon2Memory = 4 * 1024 * 1024 // 4 GiB in KiB
)

func (p argon2Params) String() string {
	return fmt.Sprintf("argon2id$v=%d$m=%d,t=%d,p=%d", argon2.Version, p.Memory, p.Time, p.Threads)
}

// parseArgon2 reads a header written by argon2Params.String, refusing anything else.
func parseArgon2(s string) (argon2Params, error) {
	bad := fmt.Errorf("unsupported key slot header %q", s)
	parts := strings.Split(s, "$")
	if len(parts) != 3 || parts[0] != "argon2id" || parts[1] != "v="+strconv.Itoa(argon2.Version) {
		return argon2Params{}, bad
	}
	var p argon2Params
	seen := map[string]bool{}
	for _, kv := range strings.Split(parts[2], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || seen[k] {
			return argon2Params{}, bad
		}
		seen[k] = true
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return argon2Params{}, bad
		}
		switch k {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return argon2Params{}, bad
			}
			p.Threads = uint8(n)
		default:
			return argon2Params{}, bad
		}
	}
	if len(seen) != 3 || p.Time < 1 || p.Time > maxArgon2Time || p.Threads < 1 ||
		p.Memory < 8*uint32(p.Threads) || p.Memory > maxArgon2Memory {
		return argon2Params{}, bad
	}
	return p, nil
}

// recoveryKEK stretches a canonical recovery code. The caller zeroes the result.
func recoveryKEK(code, salt []byte, p argon2Params) []byte {
	return argon2.IDKey(code, salt, p.Time, p.Memory, p.Threads, keySize)
}
