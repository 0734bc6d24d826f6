package limits

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Type is what a property holds, as limits see it.
type Type string

// The types a property may be limited as; any other property takes no limit.
const (
	TypeString  Type = "string"
	TypeNumber  Type = "number"
	TypeInteger Type = "integer"
	TypeBoolean Type = "boolean"
	// TypeEnum is a property with values listed and no type declared.
	TypeEnum Type = "enum"
)

// Property is one property of a tool's input schema, as the limits form and Validate read it.
type Property struct {
	Name string
	// Type is what it holds; "" when it takes no limit, and then Unlimitable says why.
	Type        Type
	Unlimitable string
	// Enum is the server's own list of values; nil when it lists none.
	Enum     []any
	Required bool
	// What the server's schema bounds it by, nil where it does not.
	minimum, maximum, minLength, maxLength *float64
	pattern                                string
	// schema is the property's schema alone, resolved to check a value against it; nil when it
	// cannot stand alone (a $ref to the rest of the schema).
	schema *jsonschema.Resolved
}

// Kinds returns the kinds of limit the property takes, in the form's order.
func (p Property) Kinds() []Kind {
	switch p.Type {
	case TypeString:
		if len(p.Enum) > 0 {
			return []Kind{KindFixed, KindValues}
		}
		return []Kind{KindFixed, KindValues, KindLength, KindPattern}
	case TypeNumber, TypeInteger:
		if len(p.Enum) > 0 {
			return []Kind{KindFixed, KindValues}
		}
		return []Kind{KindFixed, KindValues, KindRange}
	case TypeBoolean, TypeEnum:
		return []Kind{KindFixed, KindValues}
	}
	return nil
}

// Schema is the top-level properties of a tool's input schema.
type Schema struct {
	Props map[string]Property
	Names []string // sorted
}

// ReadSchema reads the properties of a tool's input schema. An empty or null schema has none.
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
		p := readProperty(name, rawProp)
		p.Required = slices.Contains(top.Required, name)
		s.Props[name] = p
		s.Names = append(s.Names, name)
	}
	sort.Strings(s.Names)
	return s, nil
}

// readProperty reads one property's schema; what it cannot read leaves it unlimitable.
func readProperty(name string, raw json.RawMessage) Property {
	p := Property{Name: name}
	var ps struct {
		Type      json.RawMessage `json:"type"`
		Enum      []any           `json:"enum"`
		Const     json.RawMessage `json:"const"`
		Minimum   *float64        `json:"minimum"`
		Maximum   *float64        `json:"maximum"`
		MinLength *float64        `json:"minLength"`
		MaxLength *float64        `json:"maxLength"`
		Pattern   string          `json:"pattern"`
	}
	if json.Unmarshal(raw, &ps) != nil {
		p.Unlimitable = "its schema cannot be read"
		return p
	}
	p.Enum, p.pattern = ps.Enum, ps.Pattern
	p.minimum, p.maximum, p.minLength, p.maxLength = ps.Minimum, ps.Maximum, ps.MinLength, ps.MaxLength
	var types []string
	var one string
	switch {
	case len(ps.Type) == 0:
	case json.Unmarshal(ps.Type, &one) == nil:
		types = []string{one}
	case json.Unmarshal(ps.Type, &types) == nil:
		// "null" as well adds nothing a limit could hold: a limit's value is never null.
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	default:
		p.Unlimitable = "its type cannot be read"
		return p
	}
	switch {
	case len(types) == 0 && len(ps.Enum) > 0 && allScalars(ps.Enum):
		p.Type = TypeEnum
	case len(types) == 0:
		p.Unlimitable = "its schema declares no type"
	case len(types) > 1:
		p.Unlimitable = "it may be " + strings.Join(types, " or ")
	default:
		switch t := Type(types[0]); t {
		case TypeString, TypeNumber, TypeInteger, TypeBoolean:
			p.Type = t
		default:
			p.Unlimitable = "it is " + article(types[0])
		}
	}
	if p.Type != "" {
		var s jsonschema.Schema
		if json.Unmarshal(raw, &s) == nil {
			p.schema, _ = s.Resolve(nil)
		}
	}
	return p
}

func allScalars(vs []any) bool {
	for _, v := range vs {
		switch v.(type) {
		case string, float64, bool:
		default:
			return false
		}
	}
	return true
}

// article puts "a" or "an" before a type's name.
func article(t string) string {
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

// Words say what the property holds, for the form: "a number", "an integer", "one of heat,
// cool or off".
func (p Property) Words() string {
	switch {
	case p.Type == "":
		return "no limit: " + p.Unlimitable
	case len(p.Enum) > 0:
		return "one of " + orList(p.Enum)
	}
	return article(string(p.Type))
}

// Problem is one limit that cannot be saved, and why.
type Problem struct {
	Property string // "" for the set as a whole
	Err      error
}

// Error refuses limits the schema contradicts, naming each property and why. Nothing is saved.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Err.Error()
		if p.Property != "" {
			parts[i] = p.Property + ": " + parts[i]
		}
	}
	return "limits refused: " + strings.Join(parts, "; ")
}

// Bounds of a set of limits: a form with more is not read, and a save refused.
const (
	MaxValues     = 64   // allowed values of one property
	MaxValueLen   = 1000 // bytes of one string value
	MaxPatternLen = 500  // bytes of a pattern
	MaxLength     = 1 << 20
)

// Validate refuses set unless it can narrow schema: every limit names a property of the
// schema that takes it, fits the property's type, and narrows what the server's own schema
// allows (a value outside its enum, a range wider than its own, a pattern beside its own, a
// minimum over the maximum, a pattern that does not compile are each refused, with the
// reason), and running unasked comes with at least one limit. The error is an *Error naming
// every problem.
func Validate(schema Schema, set Set) error {
	var problems []Problem
	for _, name := range set.Names() {
		p, ok := schema.Props[name]
		if !ok {
			problems = append(problems, Problem{name, fmt.Errorf("not a property of this tool")})
			continue
		}
		if err := p.check(set.Props[name]); err != nil {
			problems = append(problems, Problem{name, err})
		}
	}
	if set.RunUnasked && len(set.Props) == 0 {
		problems = append(problems, Problem{"", fmt.Errorf("to run calls without asking, set at least one limit: they run only within the limits")})
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// check refuses a limit p does not take, or that its schema contradicts.
func (p Property) check(l Limit) error {
	if p.Type == "" {
		return fmt.Errorf("it takes no limit: %s", p.Unlimitable)
	}
	if !slices.Contains(p.Kinds(), l.Kind) {
		return fmt.Errorf("%s is %s: it takes no %s limit", p.Name, p.Words(), strings.ToLower(l.Kind.Words()))
	}
	switch l.Kind {
	case KindFixed:
		return p.checkValue(l.Value)
	case KindValues:
		return p.checkValues(l.Values)
	case KindRange:
		return checkBounds(l.Min, l.Max, p.minimum, p.maximum, false)
	case KindLength:
		return checkBounds(l.Min, l.Max, p.minLength, p.maxLength, true)
	case KindPattern:
		return p.checkPattern(l.Pattern)
	}
	return fmt.Errorf("no such limit")
}

func (p Property) checkValues(vs []any) error {
	switch {
	case len(vs) == 0:
		return fmt.Errorf("name at least one allowed value")
	case len(vs) > MaxValues:
		return fmt.Errorf("at most %d allowed values", MaxValues)
	}
	for i, v := range vs {
		if err := p.checkValue(v); err != nil {
			return err
		}
		if slices.ContainsFunc(vs[:i], func(w any) bool { return equal(v, w) }) {
			return fmt.Errorf("%s is listed twice", Text(v))
		}
	}
	return nil
}

// checkValue refuses a value of the wrong type, or one the server's own schema refuses (its
// enum, its range, its length or pattern).
func (p Property) checkValue(v any) error {
	wrong := fmt.Errorf("%s is not %s", quoted(v), p.Words())
	switch v := v.(type) {
	case string:
		switch {
		case len(v) > MaxValueLen:
			return fmt.Errorf("a value is at most %d bytes", MaxValueLen)
		case !utf8.ValidString(v):
			return fmt.Errorf("a value is text, and this one is not valid UTF-8")
		}
		if p.Type != TypeString && p.Type != TypeEnum {
			return wrong
		}
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("%s is not a number", Number(v))
		}
		if p.Type != TypeNumber && p.Type != TypeInteger && p.Type != TypeEnum || p.Type == TypeInteger && v != math.Trunc(v) {
			return wrong
		}
	case bool:
		if p.Type != TypeBoolean && p.Type != TypeEnum {
			return wrong
		}
	default:
		return fmt.Errorf("a limit's value is a string, a number or true or false")
	}
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return equal(e, v) }) {
		return fmt.Errorf("%s is not one of the server's values (%s)", quoted(v), texts(p.Enum, ", "))
	}
	if p.schema == nil {
		return fmt.Errorf("its schema refers to the rest of the tool's schema, so Maven cannot check a value against it")
	}
	if err := p.schema.Validate(v); err != nil {
		return fmt.Errorf("the server's schema refuses %s: %s", quoted(v), strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

// checkBounds refuses an empty range, one upside down, one a length cannot be, and one wider
// than the server's own bounds (own*).
func checkBounds(lo, hi, ownLo, ownHi *float64, length bool) error {
	what := "range"
	if length {
		what = "length"
	}
	for _, b := range []*float64{lo, hi} {
		if b != nil && (math.IsInf(*b, 0) || math.IsNaN(*b)) {
			return fmt.Errorf("%s is not a number", Number(*b))
		}
	}
	switch {
	case lo == nil && hi == nil:
		return fmt.Errorf("give the %s a minimum, a maximum or both", what)
	case lo != nil && hi != nil && *lo > *hi:
		return fmt.Errorf("the minimum %s is above the maximum %s", Number(*lo), Number(*hi))
	}
	for _, b := range []*float64{lo, hi} {
		if length && b != nil && (*b < 0 || *b > MaxLength || *b != math.Trunc(*b)) {
			return fmt.Errorf("a length is a whole number from 0 to %d, not %s", MaxLength, Number(*b))
		}
	}
	if lo != nil && ownLo != nil && *lo < *ownLo || hi != nil && ownHi != nil && *hi > *ownHi {
		return fmt.Errorf("the server's own %s is %s: a limit may only narrow it", what, bounds(ownLo, ownHi, ""))
	}
	if lo != nil && ownHi != nil && *lo > *ownHi || hi != nil && ownLo != nil && *hi < *ownLo {
		return fmt.Errorf("no value fits both this %s and the server's own, %s", what, bounds(ownLo, ownHi, ""))
	}
	return nil
}

func (p Property) checkPattern(pattern string) error {
	switch {
	case pattern == "":
		return fmt.Errorf("write the pattern")
	case len(pattern) > MaxPatternLen:
		return fmt.Errorf("a pattern is at most %d bytes", MaxPatternLen)
	case !utf8.ValidString(pattern):
		return fmt.Errorf("a pattern is text, and this one is not valid UTF-8")
	case p.pattern != "":
		return fmt.Errorf("the server's schema has a pattern of its own (%s), and a property takes only one; limit its length or its values instead", p.pattern)
	}
	if _, err := compilePattern(pattern); err != nil {
		return err
	}
	return nil
}

// quoted writes a value for a message: a string in quotes, anything else as Text.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return Text(v)
}
