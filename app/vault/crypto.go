package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

const (
	keySize     = 32 // AES-256 keys: the data key and every key-encryption key
	nonceSize   = 12 // GCM's standard 96-bit nonce, drawn at random for each seal
	prfSize     = 32 // a PRF output and a PRF input are both 32 bytes
	saltSizePRF = 32
	saltSizeRec = 16 // RFC 9106 recommends 128-bit salts

	kdfHKDF = "hkdf-sha256"
)

// Associated data and HKDF info strings. Each names what it protects, so a ciphertext moved
// to another place (another secret, credential or RP ID) fails to open.
const (
	adSecret   = "maven/secret/v1|"
	adWrapPRF  = "maven/wrap/v1|prf|"
	adRecovery = "maven/wrap/v1|recovery"
	infoUnlock = "maven/unlock/v1|"
	infoMAC    = "maven/mac/v1|"
)

// errOpen is internal: every reason a wrap or secret fails to open. The Vault turns it into
// ErrUnlockFailed or a corruption error, never passing on which check failed.
var errOpen = errors.New("message authentication failed")

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails since Go 1.24; it crashes the program instead
	return b
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encrypts plaintext under key with a fresh random nonce.
func seal(key, plaintext []byte, ad string) (nonce, ciphertext []byte, err error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, nil, err
	}
	nonce = randomBytes(nonceSize)
	return nonce, aead.Seal(nil, nonce, plaintext, []byte(ad)), nil
}

// open reverses seal; any mismatch (key, nonce, ciphertext, associated data) is errOpen.
func open(key, nonce, ciphertext []byte, ad string) ([]byte, error) {
	if len(nonce) != nonceSize {
		return nil, errOpen
	}
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	pt, err := aead.Open(nil, nonce, ciphertext, []byte(ad))
	if err != nil {
		return nil, errOpen
	}
	return pt, nil
}

func secretAD(name string) string { return adSecret + name }

// prfBinding names the credential and the RP it belongs to, as HKDF info and associated data
// both carry it.
func prfBinding(rpID string, credentialID []byte) string {
	return rpID + "|" + base64.RawURLEncoding.EncodeToString(credentialID)
}

// prfKEK derives a PRF slot's key-encryption key. The PRF output is never used as a key
// directly (AUTH.md item 26). The caller zeroes the result.
func prfKEK(prfOutput, salt []byte, rpID string, credentialID []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, prfOutput, salt, infoUnlock+prfBinding(rpID, credentialID), keySize)
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
