package limits

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"maven/app/reveal"
)

// ErrOutside is matched (errors.Is) by every *Violation.
var ErrOutside = errors.New("outside the owner's limits")

// Violation is an argument outside the owner's limit on its property: the call is refused, never
// sent (docs/design.md#rule-33).
type Violation struct {
	Property string
	Limit    Limit
	Value    any
	// Missing: the property is fixed, and the call did not send it.
	Missing bool
}

// maxShownValue bounds how much of a refused value a message repeats: an agent chooses its size.
const maxShownValue = 60

func (v *Violation) Error() string {
	if v.Missing {
		return fmt.Sprintf("%s %s (the owner's limit), and it was not sent", v.Property, v.Limit.Rule())
	}
	shown := quoted(v.Value)
	if _, ok := v.Value.(string); !ok {
		if b, err := json.Marshal(v.Value); err == nil {
			shown = string(b)
		}
	}
	shown, _ = reveal.Cut(shown, maxShownValue, "…")
	return fmt.Sprintf("%s %s (the owner's limit), not %s", v.Property, v.Limit.Rule(), shown)
}

// Is makes errors.Is(err, ErrOutside) true.
func (v *Violation) Is(target error) bool { return target == ErrOutside }

// Checker checks a call's arguments against one set of limits, exactly as JSON Schema
// validation of the narrowed schema's added keywords would (FuzzCheckAgreesWithJSONSchema
// holds it to google/jsonschema-go's). It is safe for concurrent use.
type Checker struct {
	props []checked // in name order
}

type checked struct {
	name  string
	limit Limit
	re    *regexp.Regexp // KindPattern's
}

// Compile prepares set for checking arguments. It fails only on a pattern that does not
// compile, which Validate refuses before any set is saved.
func Compile(set Set) (*Checker, error) {
	c := &Checker{props: make([]checked, 0, len(set.Props))}
	for _, name := range set.Names() {
		ch := checked{name: name, limit: set.Props[name]}
		if ch.limit.Kind == KindPattern {
			re, err := compilePattern(ch.limit.Pattern)
			if err != nil {
				return nil, fmt.Errorf("limits of %q: %w", name, err)
			}
			ch.re = re
		}
		c.props = append(c.props, ch)
	}
	return c, nil
}

// compilePattern compiles a pattern with Go's regexp: RE2, whose matching takes time linear in
// the input, so no pattern an owner writes can be made to backtrack catastrophically.
func compilePattern(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("the pattern does not compile: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, nil
}

// Check returns a *Violation naming the first property, by name, whose argument is outside its
// limit, or a fixed property the call does not send; nil when every argument is within them.
// A property not limited is not looked at. As in JSON Schema, a range applies to numbers only
// and a length or pattern to strings only: the approved schema's own types are checked
// before.
func (c *Checker) Check(args map[string]any) error {
	for i := range c.props {
		p := &c.props[i]
		v, ok := args[p.name]
		switch {
		case !ok && p.limit.Kind == KindFixed:
			return &Violation{Property: p.name, Limit: p.limit, Missing: true}
		case ok && !p.allows(v):
			return &Violation{Property: p.name, Limit: p.limit, Value: v}
		}
	}
	return nil
}

// CheckProperty returns a *Violation if v, the value of property name, is outside its limit.
func (c *Checker) CheckProperty(name string, v any) error {
	for i := range c.props {
		if p := &c.props[i]; p.name == name && !p.allows(v) {
			return &Violation{Property: name, Limit: p.limit, Value: v}
		}
	}
	return nil
}

// Fixed returns the fixed value of property name, if the owner fixed it.
func (c *Checker) Fixed(name string) (any, bool) {
	for _, p := range c.props {
		if p.name == name && p.limit.Kind == KindFixed {
			return p.limit.Value, true
		}
	}
	return nil, false
}

// allows reports whether v is within the limit, with JSON Schema's meaning of its keywords.
func (p *checked) allows(v any) bool {
	l := &p.limit
	switch l.Kind {
	case KindFixed:
		return equal(v, l.Value)
	case KindValues:
		for _, w := range l.Values {
			if equal(v, w) {
				return true
			}
		}
		return false
	case KindRange:
		n, ok := number(v)
		return !ok || (l.Min == nil || n >= *l.Min) && (l.Max == nil || n <= *l.Max)
	case KindLength:
		s, ok := v.(string)
		if !ok {
			return true
		}
		n := float64(utf8.RuneCountInString(s))
		return (l.Min == nil || n >= *l.Min) && (l.Max == nil || n <= *l.Max)
	case KindPattern:
		s, ok := v.(string)
		return !ok || p.re.MatchString(s)
	}
	return false
}

// equal is JSON equality of an argument and a limit's value (a string, a number or a
// boolean): numbers equal by value, whatever their Go type.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch a := a.(type) {
	case string:
		s, ok := b.(string)
		return ok && a == s
	case bool:
		t, ok := b.(bool)
		return ok && a == t
	}
	return false
}

// number reads a number as an argument holds it: a float64, as encoding/json decodes one, or
// an int64, as voice binds a whole number (phrases.Coerce, mcp.Positional).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	return 0, false
}
