package limits

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Draft is limits as the owner writes them on the row's form: per property the kind chosen and
// each field's text as written, so that a save refused shows them again as they were.
type Draft struct {
	Props      map[string]DraftLimit
	RunUnasked bool
}

// DraftLimit is the form's fields of one property. A property that offers choices (Choices)
// sends each value as its JSON; any other sends text, read by the property's type.
type DraftLimit struct {
	Kind    Kind // "" for no limit
	Value   string
	Values  []string // one a line of the box, or each choice ticked
	Min     string
	Max     string
	Pattern string
}

// Choices are the values the form offers for a property, as JSON values: the server's enum, or
// true and false; nil when the owner types the values.
func (p Property) Choices() []any {
	switch {
	case len(p.Enum) > 0:
		return p.Enum
	case p.Type == TypeBoolean:
		return []any{true, false}
	}
	return nil
}

// ChoiceText is how the form sends a choice: its JSON.
func ChoiceText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return Text(v)
	}
	return string(b)
}

// Parse reads the draft into a Set and checks it against schema (Validate). Every field that
// cannot be read, and every limit the schema contradicts, is one Problem of the *Error.
func (d Draft) Parse(schema Schema) (Set, error) {
	set := Set{Props: map[string]Limit{}, RunUnasked: d.RunUnasked}
	var problems []Problem
	for _, name := range slices.Sorted(maps.Keys(d.Props)) {
		dl := d.Props[name]
		if dl.Kind == "" {
			continue
		}
		p, ok := schema.Props[name]
		if !ok {
			problems = append(problems, Problem{name, fmt.Errorf("not a property of this tool")})
			continue
		}
		l, err := p.read(dl)
		if err != nil {
			problems = append(problems, Problem{name, err})
			continue
		}
		set.Props[name] = l
	}
	if err := Validate(schema, set); err != nil {
		problems = append(problems, err.(*Error).Problems...)
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.Property, b.Property) })
		return Set{}, &Error{Problems: problems}
	}
	return set, nil
}

// read reads one property's fields as the limit of its kind.
func (p Property) read(d DraftLimit) (Limit, error) {
	l := Limit{Kind: d.Kind}
	var err error
	switch d.Kind {
	case KindFixed:
		l.Value, err = p.readValue(d.Value)
	case KindValues:
		for _, s := range d.Values {
			if strings.TrimSpace(s) == "" {
				continue
			}
			v, err := p.readValue(s)
			if err != nil {
				return Limit{}, err
			}
			l.Values = append(l.Values, v)
		}
	case KindRange, KindLength:
		if l.Min, err = readBound("minimum", d.Min); err == nil {
			l.Max, err = readBound("maximum", d.Max)
		}
	case KindPattern:
		l.Pattern = d.Pattern
	default:
		return Limit{}, fmt.Errorf("there is no limit of the kind %q", d.Kind)
	}
	return l, err
}

// readValue reads one value as the form sent it: a choice as its JSON, a number by
// strconv.ParseFloat, a string as written (without the spaces around it).
func (p Property) readValue(text string) (any, error) {
	text = strings.TrimSpace(text)
	if p.Choices() != nil {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, fmt.Errorf("choose one of its values")
		}
		return v, nil
	}
	switch p.Type {
	case TypeNumber, TypeInteger:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return f, nil
	case TypeString:
		if text == "" {
			return nil, fmt.Errorf("write the value")
		}
		return text, nil
	}
	return nil, fmt.Errorf("it takes no limit: %s", p.Unlimitable)
}

// readBound reads a minimum or maximum; empty is open.
func readBound(which, text string) (*float64, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, fmt.Errorf("the %s %q is not a number", which, text)
	}
	return &f, nil
}

// DraftOf is set as the form shows it, to change: each value written as Parse reads it back.
func DraftOf(schema Schema, set Set) Draft {
	d := Draft{Props: map[string]DraftLimit{}, RunUnasked: set.RunUnasked}
	for name, l := range set.Props {
		p := schema.Props[name]
		write := func(v any) string {
			if p.Choices() != nil {
				return ChoiceText(v)
			}
			return Text(v)
		}
		bound := func(f *float64) string {
			if f == nil {
				return ""
			}
			return Number(*f)
		}
		dl := DraftLimit{Kind: l.Kind, Min: bound(l.Min), Max: bound(l.Max), Pattern: l.Pattern}
		switch l.Kind {
		case KindFixed:
			dl.Value = write(l.Value)
		case KindValues:
			for _, v := range l.Values {
				dl.Values = append(dl.Values, write(v))
			}
		}
		d.Props[name] = dl
	}
	return d
}
