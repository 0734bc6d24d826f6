package vault

import (
	"crypto/sha256"
	"strings"
)

// A recovery code is 26 random symbols of Crockford's base32 (130 bits) and 2 check symbols,
// written in 7 groups of 4: "7KQ2-M9XD-…". Crockford's alphabet has no I, L, O or U, so what
// is read aloud or copied by hand is hard to get wrong, and the check symbols catch a typo
// before it costs a rate-limited attempt.
const (
	crockford     = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	codeRandom    = 26
	codeCheck     = 2
	codeLen       = codeRandom + codeCheck
	codeGroup     = 4
	codeCheckInfo = "maven/recovery-check/v1|"
)

// newRecoveryCode returns a fresh code in canonical form (no dashes). The caller zeroes it.
func newRecoveryCode() []byte {
	r := randomBytes(codeRandom)
	defer clear(r)
	code := make([]byte, codeLen)
	for i, b := range r {
		code[i] = crockford[b&31] // 256 is a multiple of 32, so each symbol is uniform
	}
	c0, c1 := codeChecksum(code[:codeRandom])
	code[codeRandom], code[codeRandom+1] = c0, c1
	return code
}

// codeChecksum is 10 bits of SHA-256 over the random symbols: a random typo passes it once
// in 1024 tries. It is a public function of the code, so it tells a guesser nothing.
func codeChecksum(symbols []byte) (byte, byte) {
	h := sha256.New()
	h.Write([]byte(codeCheckInfo))
	h.Write(symbols)
	sum := h.Sum(nil)
	v := int(sum[0])<<2 | int(sum[1])>>6
	return crockford[v>>5], crockford[v&31]
}

// formatRecoveryCode groups a canonical code for display.
func formatRecoveryCode(code []byte) string {
	var b strings.Builder
	for i, c := range code {
		if i > 0 && i%codeGroup == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// normalizeRecoveryCode turns what the owner typed into the canonical code: case is ignored,
// as are spaces and dashes, and O, I and L are read as 0, 1 and 1. It returns nil if the input
// is not a well-formed code (wrong length, a symbol outside the alphabet, a failed check).
// The caller zeroes the result.
func normalizeRecoveryCode(in string) []byte {
	out := make([]byte, 0, codeLen)
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == ' ' || c == '-' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		}
		switch c {
		case 'O':
			c = '0'
		case 'I', 'L':
			c = '1'
		}
		if strings.IndexByte(crockford, c) < 0 || len(out) == codeLen {
			clear(out)
			return nil
		}
		out = append(out, c)
	}
	if len(out) != codeLen {
		clear(out)
		return nil
	}
	c0, c1 := codeChecksum(out[:codeRandom])
	if out[codeRandom] != c0 || out[codeRandom+1] != c1 {
		clear(out)
		return nil
	}
	return out
}
