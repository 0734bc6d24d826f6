package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"maven/internal/jcs"
)

// Declared is the shape of a tool as its server declares it: exactly what a fingerprint covers.
type Declared struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	ReadOnlyHint bool
}

// DeclaredField is one field of a declared shape: its key in the canonical form, what /tools
// calls it, and how its value is written and shown.
type DeclaredField struct {
	Key   string // in the canonical form: "inputSchema"
	Label string // on /tools: "Input schema"
	// JSON: its value is JSON (Show gives it in canonical form), shown as a block.
	JSON bool
	// identifies: the tool is known by it, so it is named first, and a row found by it has it.
	identifies bool
	// write writes its value in canonical form; d's schema is canonical already.
	write func(out *bytes.Buffer, d Declared)
	// show is its value for the owner to read.
	show func(d Declared) string
}

// Show is f's value in d for the owner to read; a JSON value in canonical form ({} for no
// schema), or as it is if it cannot be.
func (f DeclaredField) Show(d Declared) string { return f.show(d) }

// declaredFields are the fields a fingerprint covers, in JCS order (RFC 8785: keys sorted by
// their UTF-16 code units; TestDeclaredFieldsAreInJCSOrder checks it): the canonical writer,
// ChangedFields, the /tools diff and the reconcile's comparison all read this table.
var declaredFields = [...]DeclaredField{
	{Key: "description", Label: "Description",
		write: func(out *bytes.Buffer, d Declared) { jcs.WriteString(out, d.Description) },
		show:  func(d Declared) string { return d.Description }},
	{Key: "inputSchema", Label: "Input schema", JSON: true,
		write: func(out *bytes.Buffer, d Declared) { out.Write(d.InputSchema) },
		show: func(d Declared) string {
			schema, err := canonicalSchema(d.InputSchema)
			if err != nil {
				return string(d.InputSchema)
			}
			return string(schema)
		}},
	{Key: "name", Label: "Name", identifies: true,
		write: func(out *bytes.Buffer, d Declared) { jcs.WriteString(out, d.Name) },
		show:  func(d Declared) string { return d.Name }},
	{Key: "readOnlyHint", Label: "Read-only claim (readOnlyHint)",
		write: func(out *bytes.Buffer, d Declared) { out.WriteString(strconv.FormatBool(d.ReadOnlyHint)) },
		show: func(d Declared) string {
			if d.ReadOnlyHint {
				return "claims read-only"
			}
			return "no read-only claim: may change things"
		}},
}

// DeclaredFields returns the fields of a declared shape in the order the owner is told of them:
// the name, then the others in canonical order.
func DeclaredFields() []DeclaredField {
	out := make([]DeclaredField, 0, len(declaredFields))
	for _, identifies := range []bool{true, false} {
		for _, f := range declaredFields {
			if f.identifies == identifies {
				out = append(out, f)
			}
		}
	}
	return out
}

// Shape is a declared shape in canonical form, with its fingerprint (docs/design.md#rule-7).
type Shape struct {
	// Declared is the shape as declared, its InputSchema in canonical form ({} when absent).
	Declared Declared
	// Canonical is the JCS form of {"name","description","inputSchema","readOnlyHint"}.
	Canonical string
	// Fingerprint is "sha256:" and the lowercase hex SHA-256 of Canonical.
	Fingerprint string
}

// Fingerprint canonicalises d once and fingerprints it: the one place rule 7 is computed. An
// absent, empty or null schema counts as {}, so that "no schema" has one fingerprint. It fails
// on invalid UTF-8 in the name or description and on a schema Canonicalize refuses.
func Fingerprint(d Declared) (Shape, error) {
	schema, err := canonicalSchema(d.InputSchema)
	if err != nil {
		return Shape{}, fmt.Errorf("inputSchema: %w", err)
	}
	return fingerprintCanonical(d, schema)
}

// fingerprintCanonical is Fingerprint of d with its schema given in canonical form already.
func fingerprintCanonical(d Declared, schema []byte) (Shape, error) {
	if !utf8.ValidString(d.Name) || !utf8.ValidString(d.Description) {
		return Shape{}, fmt.Errorf("%w: invalid UTF-8 in name or description", ErrNotCanonicalizable)
	}
	d.InputSchema = schema
	var out bytes.Buffer
	out.Grow(len(d.Name) + len(d.Description) + len(schema) + 96) // the keys, quotes and escapes beside
	// The fields are in JCS order already, their keys ASCII, and the schema canonical.
	out.WriteByte('{')
	for i, f := range declaredFields {
		if i > 0 {
			out.WriteByte(',')
		}
		jcs.WriteString(&out, f.Key)
		out.WriteByte(':')
		f.write(&out, d)
	}
	out.WriteByte('}')
	sum := sha256.Sum256(out.Bytes())
	const prefix = "sha256:"
	var fp [len(prefix) + 2*sha256.Size]byte
	copy(fp[:], prefix)
	hex.Encode(fp[len(prefix):], sum[:])
	return Shape{Declared: d, Canonical: out.String(), Fingerprint: string(fp[:])}, nil
}

func canonicalSchema(raw json.RawMessage) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return []byte("{}"), nil
	}
	return Canonicalize(t)
}

// ParseDeclared reads back a shape stored as Declared.Canonical produced it. It refuses input
// Canonicalize would refuse, unknown keys, and a missing name.
func ParseDeclared(canonical string) (Declared, error) {
	if _, err := Canonicalize([]byte(canonical)); err != nil {
		return Declared{}, err
	}
	var w struct {
		Name         *string         `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		ReadOnlyHint bool            `json:"readOnlyHint"`
	}
	dec := json.NewDecoder(strings.NewReader(canonical))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Declared{}, fmt.Errorf("declared shape: %w", err)
	}
	if w.Name == nil {
		return Declared{}, errors.New("declared shape: no name")
	}
	d := Declared{Name: *w.Name, Description: w.Description, ReadOnlyHint: w.ReadOnlyHint}
	if s := bytes.TrimSpace(w.InputSchema); len(s) > 0 && string(s) != "null" {
		d.InputSchema = json.RawMessage(s)
	}
	return d, nil
}

// ChangedFields names the fields in which two declared shapes differ, in the order of
// DeclaredFields: name, description, inputSchema, readOnlyHint. Schemas are compared in
// canonical form, so key order and whitespace never count as a change. It returns nil when
// nothing changed.
func ChangedFields(old, cur Declared) ([]string, error) {
	fields, err := Differences(old, cur)
	var changed []string
	for _, f := range fields {
		changed = append(changed, f.Key)
	}
	return changed, err
}

// Differences returns the fields in which two declared shapes differ, as ChangedFields names
// them.
func Differences(old, cur Declared) ([]DeclaredField, error) {
	oldSchema, err := canonicalSchema(old.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("old inputSchema: %w", err)
	}
	curSchema, err := canonicalSchema(cur.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("new inputSchema: %w", err)
	}
	old.InputSchema, cur.InputSchema = oldSchema, curSchema
	var changed []DeclaredField
	var was, now bytes.Buffer
	for _, f := range DeclaredFields() {
		// A field's canonical form differs exactly when its value does.
		was.Reset()
		now.Reset()
		f.write(&was, old)
		f.write(&now, cur)
		if !bytes.Equal(was.Bytes(), now.Bytes()) {
			changed = append(changed, f)
		}
	}
	return changed, nil
}
