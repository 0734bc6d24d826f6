package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"maven/app/allowlist"
	"maven/app/phrases"
)

// Errors Positional.Bind wraps in an *ArgsError.
var (
	// ErrNeedsArgs means the spoken words cannot be bound to the tool's arguments safely.
	ErrNeedsArgs = errors.New("the tool needs arguments that cannot be taken from speech")
	// ErrUndescribedArg means the schema requires a property it never describes, so its type
	// is unknown and nothing is guessed.
	ErrUndescribedArg = errors.New("the tool requires an argument its schema does not describe")
)

// ArgsError says why positional binding refused, and which properties it concerns, so a voice
// reply can name the missing argument.
type ArgsError struct {
	Err     error    // ErrNeedsArgs or ErrUndescribedArg
	Missing []string // the properties concerned; may be empty
	Reason  string   // a short human explanation
	// Unspoken marks the one refusal that is about the utterance, not the tool: the tool takes
	// its one argument from speech (Missing[0]), and nothing was said for it.
	Unspoken bool
}

// Error implements error.
func (e *ArgsError) Error() string {
	msg := ErrNeedsArgs.Error()
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if len(e.Missing) > 0 {
		msg += " (" + strings.Join(e.Missing, ", ") + ")"
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap lets errors.Is match ErrNeedsArgs or ErrUndescribedArg.
func (e *ArgsError) Unwrap() error { return e.Err }

func needsArgs(reason string, missing ...string) error {
	return &ArgsError{Err: ErrNeedsArgs, Missing: missing, Reason: reason}
}

// Positional is one row's schema read for rule 15, so a caller that binds many utterances to
// the same row (the voice service, until the row changes) reads and checks it once.
type Positional struct {
	row      allowlist.Tool
	allowed  bool
	required []string
	props    map[string]json.RawMessage
	onlyType string // the type of the one required property, when there is exactly one
	err      error  // what reading the schema found wrong
}

// NewPositional reads row's input schema for Bind. allowed says whether the tool is named in its
// server's local allow_tools.
func NewPositional(row allowlist.Tool, allowed bool) Positional {
	p := Positional{row: row, allowed: allowed}
	p.required, p.props, p.err = positionalSchema(row.InputSchema)
	if len(p.required) == 1 {
		p.onlyType = positionalType(p.props[p.required[0]])
	}
	return p
}

// Bind turns tail, the words spoken after a tool's name, into its named MCP arguments, binding
// only what it can defend (docs/design.md#rule-15). A tool with no required property and no
// words gets {}. The words go to a single required string, number or integer property only if
// the row claims read-only, is not destructive and is allowed: a mutating tool never receives a
// guessed argument. Every refusal is an *ArgsError wrapping ErrNeedsArgs, or ErrUndescribedArg
// when a required property is not described by the schema.
func (p Positional) Bind(tail string) (map[string]any, error) {
	if p.err != nil {
		return nil, p.err
	}
	required, props, row := p.required, p.props, p.row
	// An undescribed required property refuses the call outright, before anything else.
	var undescribed []string
	for _, name := range required {
		if _, ok := props[name]; !ok {
			undescribed = append(undescribed, name)
		}
	}
	if len(undescribed) > 0 {
		return nil, &ArgsError{Err: ErrUndescribedArg, Missing: undescribed,
			Reason: "the schema does not say what the argument is"}
	}
	tail = strings.TrimSpace(tail)
	switch {
	case len(required) == 0 && tail == "":
		return map[string]any{}, nil
	case len(required) == 0:
		return nil, needsArgs("the tool takes no required argument; which optional one the words are for is not guessed")
	case len(required) > 1:
		return nil, needsArgs("the tool needs more than one argument", required...)
	case !row.ReadOnly || row.Destructive || !p.allowed:
		return nil, needsArgs("only a read-only tool named in allow_tools takes a spoken argument", required...)
	}
	name, typ := required[0], p.onlyType
	if typ != "string" && typ != "number" && typ != "integer" {
		return nil, needsArgs("the argument is not a plain string, number or integer", name)
	}
	if tail == "" {
		return nil, &ArgsError{Err: ErrNeedsArgs, Missing: []string{name}, Reason: "nothing was said after the tool name", Unspoken: true}
	}
	switch typ {
	case "number":
		f, ok := phrases.Decimal(tail)
		if !ok {
			return nil, needsArgs("expected a number", name)
		}
		return map[string]any{name: f}, nil
	case "integer":
		n, err := strconv.ParseInt(tail, 10, 64)
		if err != nil {
			return nil, needsArgs("expected a whole number", name)
		}
		return map[string]any{name: n}, nil
	}
	return map[string]any{name: tail}, nil
}

// positionalSchema reads the required list and the properties of a tool's input schema,
// refusing anything malformed. An empty or null schema is read as {}.
func positionalSchema(raw json.RawMessage) (required []string, props map[string]json.RawMessage, err error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil, nil
	}
	// Canonicalize first: it refuses duplicate keys (which encoding/json would silently
	// resolve) and hostile nesting.
	c, err := Canonicalize(raw)
	if err != nil {
		return nil, nil, needsArgs("the input schema is not valid JSON")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c, &top); err != nil || top == nil {
		return nil, nil, needsArgs("the input schema is not a JSON object")
	}
	if r, ok := top["required"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &required); err != nil {
			return nil, nil, needsArgs("the schema's required is not a list of names")
		}
		seen := make(map[string]bool, len(required))
		for _, name := range required {
			if seen[name] {
				return nil, nil, needsArgs("the schema's required lists a name twice", name)
			}
			seen[name] = true
		}
	}
	if p, ok := top["properties"]; ok && string(p) != "null" {
		if err := json.Unmarshal(p, &props); err != nil || props == nil {
			return nil, nil, needsArgs("the schema's properties is not an object")
		}
	}
	return required, props, nil
}

// positionalType returns a property's type when it is a single JSON string, "" otherwise
// (a type list, a missing type, or a property schema that is not an object).
func positionalType(prop json.RawMessage) string {
	var p struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(prop, &p) != nil {
		return ""
	}
	var typ string
	if json.Unmarshal(p.Type, &typ) != nil {
		return ""
	}
	return typ
}

// Positional reads row for rule 15 with its server's local allow_tools list; its Bind is the
// binding half of the original contract's CallPositional (docs/design.md#rule-15): the call itself
// goes through runner.Executor, so the row's enabled state is checked once more and an mcp row can
// never run as a binary.
func (m *Manager) Positional(row allowlist.Tool) Positional {
	return NewPositional(row, slices.Contains(m.AllowTools(row.Server()), row.RemoteName()))
}
