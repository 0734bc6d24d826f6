package limits

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Narrow returns schema with set's limits applied as JSON Schema keywords on their properties
// (const, enum, minimum and maximum, minLength and maxLength, pattern), each replacing the
// server's keyword of that name, which Validate made sure it narrows; a fixed property is also
// required. It is what agents are shown of a limited row (docs/design.md#rule-33), and what
// validating a call against it means: the approved schema and Check together. Everything else
// of the schema is kept, its keys in sorted order.
func Narrow(schema json.RawMessage, set Set) (json.RawMessage, error) {
	if len(set.Props) == 0 {
		return schema, nil
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil || root == nil {
		return nil, fmt.Errorf("narrow the input schema: it is not a JSON object")
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(root["properties"], &props); err != nil {
		return nil, fmt.Errorf("narrow the input schema: its properties: %w", err)
	}
	var required []string
	if raw, ok := root["required"]; ok {
		if err := json.Unmarshal(raw, &required); err != nil {
			return nil, fmt.Errorf("narrow the input schema: its required: %w", err)
		}
	}
	for _, name := range set.Names() {
		var prop map[string]json.RawMessage
		if err := json.Unmarshal(props[name], &prop); err != nil || prop == nil {
			return nil, fmt.Errorf("narrow the input schema: no property %q to limit", name)
		}
		l := set.Props[name]
		for key, v := range l.Keywords() {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("narrow %q: %w", name, err)
			}
			prop[key] = b
		}
		b, err := json.Marshal(prop)
		if err != nil {
			return nil, fmt.Errorf("narrow %q: %w", name, err)
		}
		props[name] = b
		if l.Kind == KindFixed && !slices.Contains(required, name) {
			required = append(required, name)
		}
	}
	var err error
	if root["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	if len(required) > 0 {
		if root["required"], err = json.Marshal(required); err != nil {
			return nil, err
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("narrow the input schema: %w", err)
	}
	return out, nil
}
