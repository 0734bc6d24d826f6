package voice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// decoder walks a JSON document as it streams in, token by token, validating all of it but
// keeping only the values its caller asks for. encoding/json cannot skip a value without
// materialising it, and its scanner spends ≈4 ns a byte, which a 28 KiB body of exposed
// entities (one long string of escaped JSON) makes the largest cost of a turn; here a string
// being skipped is scanned in a tight loop and never copied.
type decoder struct {
	src     io.Reader
	buf     []byte
	pos     int
	eof     bool
	readErr error
}

// maxDepth bounds the nesting of skipped values.
const maxDepth = 64

// strSpecial marks the bytes that end a run of plain string content: a quote, a backslash, a
// control character. shortEscape marks the bytes that may follow a backslash alone.
var (
	strSpecial  = byteSet("\"\\\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f")
	shortEscape = byteSet(`"\\/bfnrt`)
)

func byteSet(members string) (set [256]bool) {
	for i := 0; i < len(members); i++ {
		set[members[i]] = true
	}
	return set
}

// ensure makes n bytes available at d.pos; io.EOF (or the read error) if the body ends first.
func (d *decoder) ensure(n int) error {
	for len(d.buf)-d.pos < n {
		if d.readErr != nil {
			return d.readErr
		}
		if d.eof {
			return io.EOF
		}
		if d.pos > 0 {
			d.buf = d.buf[:copy(d.buf, d.buf[d.pos:])]
			d.pos = 0
		}
		m, err := d.src.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+m]
		switch {
		case err == io.EOF:
			d.eof = true
		case err != nil:
			d.readErr = err
		}
	}
	return nil
}

// nonSpace returns the next byte that is not white space, without consuming it.
func (d *decoder) nonSpace() (byte, error) {
	for {
		if err := d.ensure(1); err != nil {
			return 0, err
		}
		switch c := d.buf[d.pos]; c {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return c, nil
		}
	}
}

// members walks an object whose '{' was consumed, calling fn with each key; fn must consume
// the key's value.
func (d *decoder) members(fn func(key string) error) error {
	c, err := d.nonSpace()
	if err != nil {
		return d.bad(err, "")
	}
	if c == '}' {
		d.pos++
		return nil
	}
	for {
		if c != '"' {
			return &RequestError{"expected a quoted key in an object"}
		}
		raw, err := d.str(true)
		if err != nil {
			return err
		}
		key, err := unquote(raw)
		if err != nil {
			return err
		}
		if c, err = d.nonSpace(); err != nil || c != ':' {
			return d.bad(err, "expected ':' after a key")
		}
		d.pos++
		if err := fn(key); err != nil {
			return err
		}
		if c, err = d.nonSpace(); err != nil {
			return d.bad(err, "")
		}
		d.pos++
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = d.nonSpace(); err != nil {
				return d.bad(err, "")
			}
		default:
			return &RequestError{fmt.Sprintf("expected ',' or '}' in an object, got %q", c)}
		}
	}
}

// elements walks an array whose '[' was consumed, calling fn for each element; fn must
// consume it.
func (d *decoder) elements(fn func() error) error {
	c, err := d.nonSpace()
	if err != nil {
		return d.bad(err, "")
	}
	if c == ']' {
		d.pos++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		if c, err = d.nonSpace(); err != nil {
			return d.bad(err, "")
		}
		d.pos++
		switch c {
		case ']':
			return nil
		case ',':
		default:
			return &RequestError{fmt.Sprintf("expected ',' or ']' in a list, got %q", c)}
		}
	}
}

// skipValue consumes one value of any kind, checking that it is JSON.
func (d *decoder) skipValue(depth int) error {
	if depth > maxDepth {
		return &RequestError{"the JSON nests too deeply"}
	}
	c, err := d.nonSpace()
	if err != nil {
		return d.bad(err, "")
	}
	switch {
	case c == '"':
		_, err = d.str(false)
	case c == '{':
		d.pos++
		err = d.members(func(string) error { return d.skipValue(depth + 1) })
	case c == '[':
		d.pos++
		err = d.elements(func() error { return d.skipValue(depth + 1) })
	case c == 't':
		err = d.literal("true")
	case c == 'f':
		err = d.literal("false")
	case c == 'n':
		err = d.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		err = d.number()
	default:
		err = &RequestError{fmt.Sprintf("unexpected %q where a value belongs", c)}
	}
	return err
}

// str consumes a string at its opening quote. With keep it returns the string's JSON text,
// quotes and escapes included; without, nothing is copied. The inner loop takes plain bytes
// and two-byte escapes in one pass over what is buffered: skipping exposed_entities, a string of
// escaped JSON, is most of the work of reading a Home Assistant request.
func (d *decoder) str(keep bool) ([]byte, error) {
	d.pos++
	var out []byte
	if keep {
		out = append(out, '"')
	}
	for {
		if err := d.ensure(1); err != nil {
			return nil, d.bad(err, "")
		}
		buf, i := d.buf, d.pos
		for i < len(buf) {
			c := buf[i]
			if !strSpecial[c] {
				i++
				continue
			}
			if c == '\\' && i+1 < len(buf) && shortEscape[buf[i+1]] {
				i += 2
				continue
			}
			break
		}
		if keep {
			out = append(out, buf[d.pos:i]...)
		}
		d.pos = i
		if i == len(buf) {
			continue
		}
		switch c := buf[i]; {
		case c == '"':
			d.pos++
			if keep {
				out = append(out, '"')
			}
			return out, nil
		case c < 0x20:
			return nil, &RequestError{"a string holds a raw control character"}
		}
		// A \u escape, or a backslash at the end of what is buffered.
		esc, err := d.escape()
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, esc...)
		}
	}
}

// escape consumes one escape sequence at its backslash and returns it.
func (d *decoder) escape() ([]byte, error) {
	if err := d.ensure(2); err != nil {
		return nil, d.bad(err, "")
	}
	n := 2
	switch d.buf[d.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
	case 'u':
		n = 6
		if err := d.ensure(n); err != nil {
			return nil, d.bad(err, "")
		}
		for _, h := range d.buf[d.pos+2 : d.pos+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return nil, &RequestError{`a \u escape needs four hex digits`}
			}
		}
	default:
		return nil, &RequestError{fmt.Sprintf(`a string holds the unknown escape \%c`, d.buf[d.pos+1])}
	}
	esc := d.buf[d.pos : d.pos+n]
	d.pos += n
	return esc, nil
}

// literal consumes true, false or null.
func (d *decoder) literal(word string) error {
	if err := d.ensure(len(word)); err != nil {
		return d.bad(err, "")
	}
	if string(d.buf[d.pos:d.pos+len(word)]) != word {
		return &RequestError{fmt.Sprintf("expected %s", word)}
	}
	d.pos += len(word)
	return nil
}

// number consumes a number, checking its grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() error {
	d.accept("-")
	if d.accept("0") {
		// a leading zero stands alone
	} else if d.digits() == 0 {
		return &RequestError{"a number needs digits"}
	}
	if d.accept(".") && d.digits() == 0 {
		return &RequestError{"a number needs digits after its point"}
	}
	if d.accept("eE") {
		d.accept("+-")
		if d.digits() == 0 {
			return &RequestError{"a number needs digits in its exponent"}
		}
	}
	return d.readErr
}

// accept consumes the next byte if it is one of set.
func (d *decoder) accept(set string) bool {
	if d.ensure(1) != nil || !bytes.ContainsRune([]byte(set), rune(d.buf[d.pos])) {
		return false
	}
	d.pos++
	return true
}

// digits consumes a run of decimal digits and returns its length.
func (d *decoder) digits() int {
	n := 0
	for d.ensure(1) == nil && '0' <= d.buf[d.pos] && d.buf[d.pos] <= '9' {
		d.pos++
		n++
	}
	return n
}

// unquote decodes a key; most keys have no escape and need no decoder.
func unquote(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &RequestError{"a key is not a valid JSON string"}
	}
	return s, nil
}
