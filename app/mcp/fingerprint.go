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
)

// Declared is the shape of a tool as its server declares it: exactly what a fingerprint covers.
type Declared struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	ReadOnlyHint bool
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
		return Shape{}, jcsError("invalid UTF-8 in name or description")
	}
	d.InputSchema = schema
	var out bytes.Buffer
	// Keys are written in JCS order by hand: the four names are ASCII and fixed, and the schema
	// is canonical already.
	out.WriteString(`{"description":`)
	jcsWriteString(&out, d.Description)
	out.WriteString(`,"inputSchema":`)
	out.Write(schema)
	out.WriteString(`,"name":`)
	jcsWriteString(&out, d.Name)
	out.WriteString(`,"readOnlyHint":`)
	out.WriteString(strconv.FormatBool(d.ReadOnlyHint))
	out.WriteByte('}')
	sum := sha256.Sum256(out.Bytes())
	return Shape{Declared: d, Canonical: out.String(), Fingerprint: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Canonical returns d's canonical form (see Fingerprint).
func (d Declared) Canonical() (string, error) {
	shape, err := Fingerprint(d)
	return shape.Canonical, err
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

// ChangedFields names the fields in which two declared shapes differ, in the order name,
// description, inputSchema, readOnlyHint. Schemas are compared in canonical form, so key order
// and whitespace never count as a change. It returns nil when nothing changed.
func ChangedFields(old, cur Declared) ([]string, error) {
	oldSchema, err := canonicalSchema(old.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("old inputSchema: %w", err)
	}
	curSchema, err := canonicalSchema(cur.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("new inputSchema: %w", err)
	}
	var changed []string
	if old.Name != cur.Name {
		changed = append(changed, "name")
	}
	if old.Description != cur.Description {
		changed = append(changed, "description")
	}
	if !bytes.Equal(oldSchema, curSchema) {
		changed = append(changed, "inputSchema")
	}
	if old.ReadOnlyHint != cur.ReadOnlyHint {
		changed = append(changed, "readOnlyHint")
	}
	return changed, nil
}
