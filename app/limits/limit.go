package limits

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"maven/internal/enum"
	"maven/internal/jcs"
)

// Kind is what a limit holds a property to.
type Kind string

// The kinds of limit, in the order the form offers them.
const (
	// KindFixed holds a property to one value (JSON Schema const); it must be sent.
	KindFixed Kind = "fixed"
	// KindValues holds a property to a few values (enum): a subset of the server's own enum,
	// or a list of values of its type.
	KindValues Kind = "values"
	// KindRange holds a number between a minimum and a maximum, either of which may be open
	// (minimum, maximum).
	KindRange Kind = "range"
	// KindLength holds a string's length in characters (minLength, maxLength).
	KindLength Kind = "length"
	// KindPattern holds a string to a regular expression (pattern), in Go's RE2 syntax.
	KindPattern Kind = "pattern"
)

// kinds are the kinds with their words, as the form offers them. TestEveryKindHasItsWords fails
// on a kind without (docs/style.md#enumerations).
var kinds = enum.Table[Kind, string]{
	{Member: KindFixed, Said: "Fixed value"},
	{Member: KindValues, Said: "Allowed values"},
	{Member: KindRange, Said: "Range"},
	{Member: KindLength, Said: "Length"},
	{Member: KindPattern, Said: "Pattern"},
}

// Kinds returns every kind of limit, in the order the form offers them.
func Kinds() []Kind { return kinds.Members() }

// Words are the kind as the form names it: "Allowed values".
func (k Kind) Words() string {
	if w, ok := kinds.Of(k); ok {
		return w
	}
	return string(k)
}

// Limit is the owner's limit on one property. Values are JSON values as encoding/json decodes
// them into an any: a string, a float64 or a bool.
type Limit struct {
	Kind    Kind
	Value   any      // KindFixed
	Values  []any    // KindValues
	Min     *float64 // KindRange, KindLength (a whole number); nil when open
	Max     *float64
	Pattern string // KindPattern
}

// Keywords are the limit as the JSON Schema keywords it adds to its property's schema.
func (l Limit) Keywords() map[string]any {
	m := map[string]any{}
	put := func(key string, f *float64) {
		if f != nil {
			m[key] = *f
		}
	}
	switch l.Kind {
	case KindFixed:
		m["const"] = l.Value
	case KindValues:
		m["enum"] = slices.Clone(l.Values)
	case KindRange:
		put("minimum", l.Min)
		put("maximum", l.Max)
	case KindLength:
		put("minLength", l.Min)
		put("maxLength", l.Max)
	case KindPattern:
		m["pattern"] = l.Pattern
	}
	return m
}

// limitOf reads a limit from its keywords: exactly those of one kind, and nothing else.
func limitOf(raw json.RawMessage) (Limit, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Limit{}, fmt.Errorf("a limit is an object of JSON Schema keywords")
	}
	number := func(key string) (*float64, error) {
		v, ok := m[key]
		if !ok {
			return nil, nil
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return nil, fmt.Errorf("%s is not a number", key)
		}
		return &f, nil
	}
	keys := slices.Sorted(maps.Keys(m))
	var l Limit
	var err error
	switch {
	case slices.Equal(keys, []string{"const"}):
		l.Kind, err = KindFixed, json.Unmarshal(m["const"], &l.Value)
	case slices.Equal(keys, []string{"enum"}):
		l.Kind, err = KindValues, json.Unmarshal(m["enum"], &l.Values)
	case len(keys) > 0 && subset(keys, "maximum", "minimum"):
		l.Kind = KindRange
		if l.Min, err = number("minimum"); err == nil {
			l.Max, err = number("maximum")
		}
	case len(keys) > 0 && subset(keys, "maxLength", "minLength"):
		l.Kind = KindLength
		if l.Min, err = number("minLength"); err == nil {
			l.Max, err = number("maxLength")
		}
	case slices.Equal(keys, []string{"pattern"}):
		l.Kind, err = KindPattern, json.Unmarshal(m["pattern"], &l.Pattern)
	default:
		return Limit{}, fmt.Errorf("a limit is one of const, enum, minimum and maximum, minLength and maxLength, or pattern, not %s", strings.Join(keys, ", "))
	}
	if err != nil {
		return Limit{}, fmt.Errorf("a limit's %s: %w", strings.Join(keys, " and "), err)
	}
	return l, nil
}

func subset(keys []string, of ...string) bool {
	for _, k := range keys {
		if !slices.Contains(of, k) {
			return false
		}
	}
	return true
}

// Set is the owner's limits on one row: a limit per property, by name, and whether calls within
// them run without asking.
type Set struct {
	Props map[string]Limit
	// RunUnasked lets a call within the limits run at once though the row would need the owner
	// (destructive, not read-only, or arguments its server's allow_tools does not allow).
	RunUnasked bool
}

// Names returns the limited properties, sorted.
func (s Set) Names() []string { return slices.Sorted(maps.Keys(s.Props)) }

// Empty reports whether the set limits nothing and lets nothing run unasked.
func (s Set) Empty() bool { return len(s.Props) == 0 && !s.RunUnasked }

// value is the set as a decoded JSON value: {"properties": {NAME: keywords}, "run_without_asking": bool}.
func (s Set) value() map[string]any {
	props := make(map[string]any, len(s.Props))
	for name, l := range s.Props {
		props[name] = l.Keywords()
	}
	return map[string]any{"properties": props, "run_without_asking": s.RunUnasked}
}

// MarshalJSON writes the set as {"properties": {NAME: keywords}, "run_without_asking": bool},
// in canonical (JCS) form.
func (s Set) MarshalJSON() ([]byte, error) { return s.Canonical() }

// UnmarshalJSON reads what MarshalJSON writes; a limit of no known kind is an error.
func (s *Set) UnmarshalJSON(b []byte) error {
	var w struct {
		Properties map[string]json.RawMessage `json:"properties"`
		RunUnasked bool                       `json:"run_without_asking"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	out := Set{Props: make(map[string]Limit, len(w.Properties)), RunUnasked: w.RunUnasked}
	for name, raw := range w.Properties {
		l, err := limitOf(raw)
		if err != nil {
			return fmt.Errorf("limits of %q: %w", name, err)
		}
		out.Props[name] = l
	}
	*s = out
	return nil
}

// Canonical is the set's canonical (RFC 8785 JCS) JSON: what a step-up names and what is stored.
func (s Set) Canonical() ([]byte, error) {
	b, err := jcs.CanonicalizeValue(s.value())
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	return b, nil
}

// Digest is what a step-up saving set on a row names (docs/design.md#rule-21): "sha256:" and
// the hex SHA-256 of the JCS JSON of {"fingerprint", "limits"}, the fingerprint being the one
// the owner's page showed of the row. The passkey then approves exactly these limits on
// exactly that shape.
func Digest(fingerprint string, set Set) (string, error) {
	b, err := jcs.CanonicalizeValue(map[string]any{"fingerprint": fingerprint, "limits": set.value()})
	if err != nil {
		return "", fmt.Errorf("limits: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Summary is one limit in a few words, as the row shows it: "temperature 17–23",
// "mode: heat, cool", "unit = celsius", "name ≤ 20 characters", "code matches ^[A-Z]{3}$".
func (l Limit) Summary(name string) string {
	switch l.Kind {
	case KindFixed:
		return name + " = " + Text(l.Value)
	case KindValues:
		return name + ": " + texts(l.Values, ", ")
	case KindRange:
		return name + " " + bounds(l.Min, l.Max, "")
	case KindLength:
		return name + " " + bounds(l.Min, l.Max, " characters")
	case KindPattern:
		return name + " matches " + l.Pattern
	}
	return name
}

// Rule is what the limit asks of a value, to follow "temperature": "must be between 17 and 23",
// "must be heat or cool", "must be celsius", "must be at most 20 characters long", "must match
// the pattern ^[A-Z]{3}$".
func (l Limit) Rule() string {
	switch l.Kind {
	case KindFixed:
		return "must be " + Text(l.Value)
	case KindValues:
		return "must be " + orList(l.Values)
	case KindRange:
		return "must be " + between(l.Min, l.Max, "")
	case KindLength:
		return "must be " + between(l.Min, l.Max, " characters") + " long"
	case KindPattern:
		return "must match the pattern " + l.Pattern
	}
	return "is limited"
}

// bounds writes a range in short: "17–23", "≥ 17", "≤ 23".
func bounds(lo, hi *float64, unit string) string {
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return Number(*lo) + unit
	case lo != nil && hi != nil:
		return Number(*lo) + "–" + Number(*hi) + unit
	case lo != nil:
		return "≥ " + Number(*lo) + unit
	case hi != nil:
		return "≤ " + Number(*hi) + unit
	}
	return "any"
}

// between writes a range in words: "between 17 and 23", "at least 17", "at most 23".
func between(lo, hi *float64, unit string) string {
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return "exactly " + Number(*lo) + unit
	case lo != nil && hi != nil:
		return "between " + Number(*lo) + " and " + Number(*hi) + unit
	case lo != nil:
		return "at least " + Number(*lo) + unit
	case hi != nil:
		return "at most " + Number(*hi) + unit
	}
	return "anything"
}

// Number writes a number as a person reads it: 17, 0.5, 1e+21.
func Number(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Text writes a limit's value as the owner wrote it: a string as itself, a number as Number, a
// boolean as true or false, anything else as its JSON.
func Text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return Number(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func texts(vs []any, sep string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = Text(v)
	}
	return strings.Join(out, sep)
}

// orList writes values as "heat", "heat or cool", "heat, cool or off".
func orList(vs []any) string {
	switch len(vs) {
	case 0:
		return "nothing"
	case 1:
		return Text(vs[0])
	}
	return texts(vs[:len(vs)-1], ", ") + " or " + Text(vs[len(vs)-1])
}
