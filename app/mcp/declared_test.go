package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"maven/internal/jcs"
)

// TestDeclaredFieldsAreInJCSOrder: declaredFields is in RFC 8785 order (keys by their UTF-16
// code units), so the canonical writer that walks it writes JCS; each field has its label and
// its writer; and the table holds every field of Declared, which the canonical form and
// ParseDeclared agree on (docs/style.md#enumerations).
func TestDeclaredFieldsAreInJCSOrder(t *testing.T) {
	for i, f := range declaredFields {
		if f.Key == "" || f.Label == "" || f.write == nil || f.show == nil {
			t.Errorf("declared field %d (%q) lacks its key, label, writer or words: %+v", i, f.Key, f)
		}
		if i > 0 && jcs.CompareUTF16(declaredFields[i-1].Key, f.Key) >= 0 {
			t.Errorf("declared field %q comes after %q: not JCS order", f.Key, declaredFields[i-1].Key)
		}
	}
	declared := reflect.TypeFor[Declared]()
	if declared.NumField() != len(declaredFields) {
		t.Errorf("Declared has %d fields and declaredFields %d: give each field its row", declared.NumField(), len(declaredFields))
	}
	for i := range declared.NumField() {
		name := declared.Field(i).Name
		key := strings.ToLower(name[:1]) + name[1:]
		if !hasField(key) {
			t.Errorf("Declared.%s has no row %q in declaredFields", name, key)
		}
	}

	shape, err := Fingerprint(fpTool())
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(shape.Canonical))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for i := 0; dec.More(); i++ {
		key, err := dec.Token()
		if err != nil || i >= len(declaredFields) || key != declaredFields[i].Key {
			t.Fatalf("canonical key %d is %v (%v): %s", i, key, err, shape.Canonical)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	back, err := ParseDeclared(shape.Canonical)
	if err != nil || !reflect.DeepEqual(back, shape.Declared) {
		t.Fatalf("ParseDeclared does not read back the shape written as %s: %v", shape.Canonical, err)
	}
}

func hasField(key string) bool {
	for _, f := range declaredFields {
		if f.Key == key {
			return true
		}
	}
	return false
}

// TestDeclaredFieldsNameTheToolFirst: the owner is told of the name first, then the rest in
// canonical order, and each changed field is shown in words.
func TestDeclaredFieldsNameTheToolFirst(t *testing.T) {
	var keys []string
	for _, f := range DeclaredFields() {
		keys = append(keys, f.Key)
	}
	if got := strings.Join(keys, ","); got != "name,description,inputSchema,readOnlyHint" {
		t.Fatalf("DeclaredFields are %s", got)
	}
	old := Declared{Name: "t", InputSchema: json.RawMessage(`{"b":1, "a":2}`), ReadOnlyHint: true}
	cur := Declared{Name: "t", Description: "now deletes"}
	fields, err := Differences(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, f := range fields {
		shown = append(shown, f.Label+": "+f.Show(old)+" → "+f.Show(cur))
	}
	want := []string{
		"Description:  → now deletes",
		`Input schema: {"a":2,"b":1} → {}`,
		"Read-only claim (readOnlyHint): claims read-only → no read-only claim: may change things",
	}
	if strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Fatalf("differences shown as\n%s\nwant\n%s", strings.Join(shown, "\n"), strings.Join(want, "\n"))
	}
}
