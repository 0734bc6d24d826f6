// Package jcs writes RFC 8785 (JCS) canonical JSON: what fingerprints are computed over
// (docs/design.md#rule-7) and what a step-up saving the owner's limits names
// (docs/design.md#rule-33). It depends on nothing of Maven's, so that both app/mcp and
// app/limits (which db depends on) can use it.
package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxCanonicalDepth is how deeply arrays and objects may nest in JSON given to Canonicalize; a
// hostile schema nested deeper is refused rather than allowed to exhaust the stack.
const MaxCanonicalDepth = 64

// ErrNotCanonicalizable is wrapped by every Canonicalize error: invalid JSON, duplicate keys,
// invalid UTF-8 or lone surrogates, numbers outside IEEE-754 double, or nesting too deep.
var ErrNotCanonicalizable = errors.New("json cannot be canonicalized")

// Canonicalize returns the RFC 8785 (JCS) canonical form of one JSON value. Input that JCS
// cannot represent faithfully is refused, never repaired: two different inputs must never
// silently share a fingerprint.
func Canonicalize(raw []byte) ([]byte, error) {
	// encoding/json quietly turns invalid UTF-8 and lone surrogate escapes into U+FFFD, so both
	// are checked on the raw bytes first.
	if !utf8.Valid(raw) {
		return nil, errorf("invalid UTF-8")
	}
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := parser{dec: dec}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf("trailing data after the JSON value")
	}
	var out bytes.Buffer
	out.Grow(len(raw))
	if err := write(&out, v, 0); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ErrNotDecoded refuses (in CanonicalizeValue) a value of a type encoding/json does not decode into an any.
var ErrNotDecoded = errorf("not a decoded JSON value")

// CanonicalizeValue returns the JCS form of v, a JSON value as encoding/json decodes it into an
// any (map[string]any, []any, string, float64, bool or nil): the bytes Canonicalize gives for
// v encoded. It refuses other types, invalid UTF-8, numbers that are not finite and nesting
// deeper than MaxCanonicalDepth. A value decoded already can hold neither duplicate keys nor
// lone surrogates, so it need not be encoded and parsed again.
func CanonicalizeValue(v any) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(512) // a tool's input schema fits, in one allocation
	if err := write(&out, v, 0); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotCanonicalizable, fmt.Sprintf(format, args...))
}

// member is one object member; objects keep members in a slice so duplicates can be seen.
type member struct {
	key string
	val any
}

// object is a parsed JSON object; arrays are []any, numbers json.Number, the rest as usual.
type object []member

type parser struct {
	dec *json.Decoder
}

// value reads one JSON value; depth counts the containers it sits in.
func (p parser) value(depth int) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, errorf("invalid JSON: %v", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= MaxCanonicalDepth {
		return nil, errorf("nested more than %d deep", MaxCanonicalDepth)
	}
	switch d {
	case '[':
		arr := []any{}
		for p.dec.More() {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, errorf("invalid JSON: %v", err)
		}
		return arr, nil
	case '{':
		obj := object{}
		for p.dec.More() {
			kt, err := p.dec.Token()
			if err != nil {
				return nil, errorf("invalid JSON: %v", err)
			}
			key, ok := kt.(string)
			if !ok {
				return nil, errorf("invalid JSON: object key is not a string")
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{key, v})
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, errorf("invalid JSON: %v", err)
		}
		return obj, nil
	}
	// Token never returns a closing delimiter here: it reports an unmatched one as an error.
	return nil, errorf("invalid JSON: unexpected %v", d)
}

// checkSurrogates refuses \u escapes that leave a surrogate unpaired. It assumes valid JSON
// and leaves every other syntax error to the decoder.
func checkSurrogates(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) || raw[i+1] != 'u' {
				i++ // skip the escaped character, which may be a quote
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return nil // a bad escape: the decoder reports it
			}
			i += 5
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00:
				lo, ok := rune(0), false
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					lo, ok = hex4(raw, i+3)
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return errorf("lone surrogate \\u%04x in a string", r)
				}
				i += 6
			case utf16.IsSurrogate(r):
				return errorf("lone surrogate \\u%04x in a string", r)
			}
		}
	}
	return nil
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[at:at+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// write writes v in canonical form: a value as parser reads it (object, json.Number),
// or as encoding/json decodes it (map[string]any, float64). depth counts the containers v sits
// in.
func write(out *bytes.Buffer, v any, depth int) error {
	switch v.(type) {
	case []any, object, map[string]any:
		if depth >= MaxCanonicalDepth {
			return errorf("nested more than %d deep", MaxCanonicalDepth)
		}
	}
	switch v := v.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case string:
		if !utf8.ValidString(v) {
			return errorf("invalid UTF-8")
		}
		WriteString(out, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return errorf("number %.40s is not an IEEE-754 double", string(v))
		}
		out.WriteString(number(f))
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return errorf("number %v is not finite", v)
		}
		out.WriteString(number(v))
	case []any:
		out.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := write(out, e, depth+1); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case map[string]any:
		// The members of a small object sort in place here, without an allocation of their own.
		var small [16]member
		obj := small[:0]
		for k, e := range v {
			if !utf8.ValidString(k) {
				return errorf("invalid UTF-8")
			}
			obj = append(obj, member{k, e})
		}
		return writeObject(out, obj, depth)
	case object:
		return writeObject(out, v, depth)
	default:
		return fmt.Errorf("%w: %T", ErrNotDecoded, v)
	}
	return nil
}

// writeObject writes the members of an object, sorted as JCS sorts them (in place).
func writeObject(out *bytes.Buffer, members []member, depth int) error {
	slices.SortFunc(members, func(a, b member) int { return CompareUTF16(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return errorf("duplicate object key %q", m.key)
			}
			out.WriteByte(',')
		}
		WriteString(out, m.key)
		out.WriteByte(':')
		if err := write(out, m.val, depth+1); err != nil {
			return err
		}
	}
	out.WriteByte('}')
	return nil
}

// CompareUTF16 orders strings by their UTF-16 code units, as JCS requires; this differs from
// byte order once characters outside the BMP meet characters from U+E000 up.
func CompareUTF16(a, b string) int {
	// Up to their first differing byte the two strings are equal; where that byte is ASCII in
	// both, byte order is UTF-16 order. Otherwise compare from the start of that character.
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i < len(a) && i < len(b) && a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && i < len(a) && !utf8.RuneStart(a[i]) {
		i--
	}
	a, b = a[i:], b[i:]
	var ua, ub [2]uint16
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return slices.Compare(utf16.AppendRune(ua[:0], ra), utf16.AppendRune(ub[:0], rb))
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b) // whichever ran out first is a prefix of the other
}

// WriteString quotes s as ECMAScript JSON.stringify does: only '"', '\\' and control
// characters are escaped; everything else, U+2028 and '/' included, stays literal. The runs
// between escapes are copied whole.
func WriteString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out.WriteString(s[start:i])
		start = i + 1
		switch c {
		case '"', '\\':
			out.WriteByte('\\')
			out.WriteByte(c)
		case '\b':
			out.WriteString(`\b`)
		case '\t':
			out.WriteString(`\t`)
		case '\n':
			out.WriteString(`\n`)
		case '\f':
			out.WriteString(`\f`)
		case '\r':
			out.WriteString(`\r`)
		default:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xf])
		}
	}
	out.WriteString(s[start:])
	out.WriteByte('"')
}

// number formats f as ECMAScript's Number.prototype.toString does. Go's shortest
// round-tripping digits are the same digits ES picks; only the layout differs.
func number(f float64) string {
	if f == 0 {
		return "0" // -0 too
	}
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// 'e' with -1 precision gives "d.ddde±xx": shortest digits and a decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1 // ES: value = digits × 10^(n−k)
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String()
}
