package voice

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"maven/app/allowlist"
	"maven/app/limits"
	"maven/app/phrases"
)

// Limits are the owner's limits on the rows' arguments (*limits.Service,
// docs/design.md#rule-33): a slot outside them is asked for again, a call outside them is
// refused and never sent, and a call within the limits of a row the owner let run without
// asking needs no confirm turn.
type Limits interface {
	// InForce returns the limits in force on each of rows, as they were read, by id; a row
	// without any is absent.
	InForce(ctx context.Context, rows []allowlist.Tool) (map[int64]*limits.Active, error)
}

// limitsOf returns the limits in force on row; nil when it has none (or voice has no Limits).
func (s *Service) limitsOf(ctx context.Context, row allowlist.Tool) (*limits.Active, error) {
	if s.d.Limits == nil {
		return nil, nil
	}
	in, err := s.d.Limits.InForce(ctx, []allowlist.Tool{row})
	if err != nil {
		return nil, fmt.Errorf("voice: the limits of %s: %w", row.Name, err)
	}
	return in[row.ID], nil
}

// withinLimit checks one value, coerced for property name, against its limit: a
// *limits.Violation asks for it again.
func withinLimit(in *limits.Active, name string, v any) error {
	if in == nil {
		return nil
	}
	return in.CheckProperty(name, v)
}

// withFixed is args with the value of every property the owner fixed that args leave out: the
// owner's binding, like a phrase's, so voice need not ask for it.
func withFixed(args map[string]any, in *limits.Active) map[string]any {
	if in == nil {
		return args
	}
	out := maps.Clone(args)
	for name, l := range in.Set.Props {
		if _, ok := out[name]; !ok && l.Kind == limits.KindFixed {
			out[name] = l.Value
		}
	}
	return out
}

// limitSpeech says what the owner's limit asks of a value that was outside it, as a sentence:
// "Temperature must be between 17 and 23."; "" when err is no *limits.Violation.
func limitSpeech(err error) string {
	var v *limits.Violation
	if !errors.As(err, &v) {
		return ""
	}
	return fmt.Sprintf("%s %s.", capitalize(spokenWords(v.Property)), v.Limit.Rule())
}

// allowedOnly is p with only the values the owner's limit allows, for a question that lists them.
func allowedOnly(p phrases.Property, in *limits.Active) phrases.Property {
	if in == nil {
		return p
	}
	switch l := in.Set.Props[p.Name]; l.Kind {
	case limits.KindValues:
		p.Enum = l.Values
	case limits.KindFixed:
		p.Enum = []any{l.Value}
	}
	return p
}
