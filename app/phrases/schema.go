package phrases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Property is one property of a tool's input schema, as voice sees it.
type Property struct {
	Name string
	// Type is what voice coerces a spoken value to: "string", "integer", "number" or
	// "boolean"; "" when voice cannot fill it (an object, an array, no type at all).
	Type string
	// Kind names the declared type for messages ("array", "object", "string or number"); "" if
	// the schema gives none.
	Kind string
	// Enum lists the allowed values; nil when any value of the type is allowed.
	Enum     []any
	Required bool
	// Description is the schema's description of the property, else its title; "" without
	// either. It is the server's text: something to say, never an instruction.
	Description string
	// Example is a value the schema offers (its default, else its first example); nil without
	// one. Minimum and Maximum are a number's bounds, nil when it has none.
	Example          any
	Minimum, Maximum *float64
}

// Fillable reports whether voice can fill the property from spoken words.
func (p Property) Fillable() bool { return p.Type != "" }

// Schema is the part of a tool's input schema that voice uses.
type Schema struct {
	Props map[string]Property
	Names []string // every property name, sorted
	// Required lists the required properties in the schema's order; Undescribed those of them
	// the schema never describes (docs/design.md#rule-15: never guessed).
	Required    []string
	Undescribed []string
}

// ReadSchema reads a tool's input schema. An empty or null schema has no properties.
func ReadSchema(raw json.RawMessage) (Schema, error) {
	s := Schema{Props: map[string]Property{}}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return s, nil
	}
	var top struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return Schema{}, fmt.Errorf("read the input schema: %w", err)
	}
	for name, rawProp := range top.Properties {
		s.Props[name] = readProperty(name, rawProp)
		s.Names = append(s.Names, name)
	}
	sort.Strings(s.Names)
	for _, name := range top.Required {
		if slices.Contains(s.Required, name) {
			continue
		}
		s.Required = append(s.Required, name)
		p, ok := s.Props[name]
		if !ok {
			s.Undescribed = append(s.Undescribed, name)
			continue
		}
		p.Required = true
		s.Props[name] = p
	}
	return s, nil
}

// readProperty reads one property schema; what it cannot read leaves the property unfillable.
func readProperty(name string, raw json.RawMessage) Property {
	p := Property{Name: name}
	var ps struct {
		Type json.RawMessage `json:"type"`
		Enum []any           `json:"enum"`
		// Read on their own: a malformed one is ignored, never the property.
		Description, Title, Default, Examples, Minimum, Maximum json.RawMessage
	}
	if json.Unmarshal(raw, &ps) != nil {
		return p
	}
	p.Description = firstString(ps.Description, ps.Title)
	var examples []any
	switch {
	case json.Unmarshal(ps.Default, &p.Example) == nil && p.Example != nil:
	case json.Unmarshal(ps.Examples, &examples) == nil && len(examples) > 0:
		p.Example = examples[0]
	}
	p.Minimum, p.Maximum = number(ps.Minimum), number(ps.Maximum)
	var types []string
	var one string
	switch {
	case json.Unmarshal(ps.Type, &one) == nil:
		types = []string{one}
	case json.Unmarshal(ps.Type, &types) == nil:
		// A list: "null" adds nothing voice could say.
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	}
	p.Enum = slices.DeleteFunc(ps.Enum, func(v any) bool { return v == nil })
	if len(types) == 0 && len(p.Enum) > 0 && allStrings(p.Enum) {
		types = []string{"string"}
	}
	switch len(types) {
	case 0:
		return p
	case 1:
		p.Kind = types[0]
	default:
		p.Kind = orList(types)
		return p
	}
	switch p.Kind {
	case "string", "integer", "number", "boolean":
		p.Type = p.Kind
	}
	return p
}

// firstString is the first of raws that is a JSON string other than "".
func firstString(raws ...json.RawMessage) string {
	for _, raw := range raws {
		var s string
		if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// number reads a JSON number; nil if raw is none.
func number(raw json.RawMessage) *float64 {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	return &f
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// ErrUnfillable means a slot names a property voice cannot fill from speech.
var ErrUnfillable = errors.New("voice cannot fill this property")

// checkSlot says why a slot cannot name a property of s, nil if it can.
func (s Schema) checkSlot(tool, slot string) error {
	p, ok := s.Props[slot]
	if !ok {
		if len(s.Names) == 0 {
			return fmt.Errorf("{%s} is not a property of %s, which takes none", slot, tool)
		}
		return fmt.Errorf("{%s} is not a property of %s (it takes %s)", slot, tool, andList(s.Names))
	}
	if !p.Fillable() {
		kind := p.Kind
		switch {
		case kind == "":
			kind = "of no declared type"
		case strings.ContainsRune("aeiou", rune(kind[0])):
			kind = "an " + kind
		default:
			kind = "a " + kind
		}
		return fmt.Errorf("%w: {%s} is %s; voice fills strings, numbers, integers, booleans and enums", ErrUnfillable, slot, kind)
	}
	return nil
}
