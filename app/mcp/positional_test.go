package mcp

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"maven/app/allowlist"
)

// posRow builds an MCP row with the given schema; read-only and not destructive unless changed.
func posRow(schema string, change ...func(*allowlist.Tool)) allowlist.Tool {
	row := allowlist.Tool{
		Name:        "vikunja_search_tasks",
		Cmd:         []string{"mcp", "vikunja", "search_tasks"},
		Scope:       "mcp:vikunja",
		State:       allowlist.StateEnabled,
		ReadOnly:    true,
		InputSchema: json.RawMessage(schema),
	}
	for _, c := range change {
		c(&row)
	}
	return row
}

func mutating(r *allowlist.Tool)    { r.ReadOnly, r.Destructive = false, true }
func destructive(r *allowlist.Tool) { r.Destructive = true }
func notReadOnly(r *allowlist.Tool) { r.ReadOnly = false }

const (
	posOneString  = `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`
	posOneNumber  = `{"type":"object","properties":{"celsius":{"type":"number"}},"required":["celsius"]}`
	posOneInteger = `{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`
	posOptional   = `{"type":"object","properties":{"query":{"type":"string"}}}`
)

func TestBindPositional(t *testing.T) {
	tests := []struct {
		name    string
		row     allowlist.Tool
		allowed bool
		tail    string
		want    map[string]any
		wantErr error
		missing []string
	}{
		// No required properties.
		{name: "no required, empty tail", row: posRow(posOptional), tail: "", want: map[string]any{}},
		{name: "no required, blank tail", row: posRow(posOptional), tail: " \t ", want: map[string]any{}},
		{name: "no schema, empty tail", row: posRow(""), tail: "", want: map[string]any{}},
		{name: "null schema, empty tail", row: posRow("null"), tail: "", want: map[string]any{}},
		{name: "empty required list", row: posRow(`{"properties":{},"required":[]}`), tail: "", want: map[string]any{}},
		{name: "no required, mutating, empty tail", row: posRow(`{"type":"object"}`, mutating), tail: "", want: map[string]any{}},
		{name: "no required, tail given", row: posRow(posOptional), allowed: true, tail: "groceries", wantErr: ErrNeedsArgs},
		{name: "no schema, tail given", row: posRow(""), allowed: true, tail: "x", wantErr: ErrNeedsArgs},

		// Malformed schemas.
		{name: "invalid JSON", row: posRow(`{"required":`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},
		{name: "invalid JSON, empty tail", row: posRow(`{`), tail: "", wantErr: ErrNeedsArgs},
		{name: "schema not an object", row: posRow(`["query"]`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},
		{name: "schema a string", row: posRow(`"object"`), tail: "", wantErr: ErrNeedsArgs},
		{name: "required not a list", row: posRow(`{"properties":{"q":{"type":"string"}},"required":"q"}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},
		{name: "required holds a number", row: posRow(`{"properties":{"q":{"type":"string"}},"required":[1]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},
		{name: "required lists a name twice", row: posRow(`{"properties":{"q":{"type":"string"}},"required":["q","q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},
		{name: "properties not an object", row: posRow(`{"properties":["q"],"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},
		{name: "duplicate keys", row: posRow(`{"properties":{"q":{"type":"string"}},"required":["q"],"required":["q","r"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs},

		// A required property the schema never describes: refused, never guessed a string.
		{name: "undescribed required", row: posRow(`{"type":"object","required":["query"]}`), allowed: true, tail: "milk", wantErr: ErrUndescribedArg, missing: []string{"query"}},
		{name: "undescribed among described", row: posRow(`{"properties":{"a":{"type":"string"}},"required":["a","b"]}`), allowed: true, tail: "x", wantErr: ErrUndescribedArg, missing: []string{"b"}},
		{name: "undescribed on mutating tool", row: posRow(`{"required":["id"]}`, mutating), tail: "", wantErr: ErrUndescribedArg, missing: []string{"id"}},

		// Exactly one required property.
		{name: "string bound", row: posRow(posOneString), allowed: true, tail: "  buy milk ", want: map[string]any{"query": "buy milk"}},
		{name: "string kept as said", row: posRow(posOneString), allowed: true, tail: "1.5", want: map[string]any{"query": "1.5"}},
		{name: "string, empty tail", row: posRow(posOneString), allowed: true, tail: "  ", wantErr: ErrNeedsArgs, missing: []string{"query"}},
		{name: "number bound", row: posRow(posOneNumber), allowed: true, tail: "21.5", want: map[string]any{"celsius": 21.5}},
		{name: "number negative exponent", row: posRow(posOneNumber), allowed: true, tail: "-2e-3", want: map[string]any{"celsius": -0.002}},
		{name: "number integer-looking", row: posRow(posOneNumber), allowed: true, tail: "3", want: map[string]any{"celsius": 3.0}},
		{name: "number word", row: posRow(posOneNumber), allowed: true, tail: "three", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number trailing junk", row: posRow(posOneNumber), allowed: true, tail: "1.5abc", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number NaN", row: posRow(posOneNumber), allowed: true, tail: "NaN", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number Inf", row: posRow(posOneNumber), allowed: true, tail: "Inf", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number infinity", row: posRow(posOneNumber), allowed: true, tail: "-infinity", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number overflow", row: posRow(posOneNumber), allowed: true, tail: "1e999", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number hex float", row: posRow(posOneNumber), allowed: true, tail: "0x1p3", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number underscores", row: posRow(posOneNumber), allowed: true, tail: "1_000", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number two words", row: posRow(posOneNumber), allowed: true, tail: "1 2", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number bare exponent", row: posRow(posOneNumber), allowed: true, tail: "1e", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number bare dot", row: posRow(posOneNumber), allowed: true, tail: ".", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "number empty", row: posRow(posOneNumber), allowed: true, tail: "", wantErr: ErrNeedsArgs, missing: []string{"celsius"}},
		{name: "integer bound", row: posRow(posOneInteger), allowed: true, tail: "42", want: map[string]any{"count": int64(42)}},
		{name: "integer negative", row: posRow(posOneInteger), allowed: true, tail: " -7 ", want: map[string]any{"count": int64(-7)}},
		{name: "integer with fraction", row: posRow(posOneInteger), allowed: true, tail: "1.0", wantErr: ErrNeedsArgs, missing: []string{"count"}},
		{name: "integer exponent", row: posRow(posOneInteger), allowed: true, tail: "1e3", wantErr: ErrNeedsArgs, missing: []string{"count"}},
		{name: "integer hex", row: posRow(posOneInteger), allowed: true, tail: "0x10", wantErr: ErrNeedsArgs, missing: []string{"count"}},
		{name: "integer underscores", row: posRow(posOneInteger), allowed: true, tail: "1_000", wantErr: ErrNeedsArgs, missing: []string{"count"}},
		{name: "integer overflow", row: posRow(posOneInteger), allowed: true, tail: "99999999999999999999", wantErr: ErrNeedsArgs, missing: []string{"count"}},
		{name: "integer word", row: posRow(posOneInteger), allowed: true, tail: "five", wantErr: ErrNeedsArgs, missing: []string{"count"}},

		// The type must be exactly one of the three.
		{name: "boolean type", row: posRow(`{"properties":{"on":{"type":"boolean"}},"required":["on"]}`), allowed: true, tail: "true", wantErr: ErrNeedsArgs, missing: []string{"on"}},
		{name: "type list", row: posRow(`{"properties":{"q":{"type":["string","null"]}},"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},
		{name: "missing type", row: posRow(`{"properties":{"q":{"description":"anything"}},"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},
		{name: "type upper case", row: posRow(`{"properties":{"q":{"type":"String"}},"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},
		{name: "property schema true", row: posRow(`{"properties":{"q":true},"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},
		{name: "property schema null", row: posRow(`{"properties":{"q":null},"required":["q"]}`), allowed: true, tail: "x", wantErr: ErrNeedsArgs, missing: []string{"q"}},

		// Who may receive a guessed argument.
		{name: "mutating tool, one required string", row: posRow(posOneString, mutating), allowed: true, tail: "milk", wantErr: ErrNeedsArgs, missing: []string{"query"}},
		{name: "not read-only", row: posRow(posOneString, notReadOnly), allowed: true, tail: "milk", wantErr: ErrNeedsArgs, missing: []string{"query"}},
		{name: "destructive but claims read-only", row: posRow(posOneString, destructive), allowed: true, tail: "milk", wantErr: ErrNeedsArgs, missing: []string{"query"}},
		{name: "read-only, not in allow_tools", row: posRow(posOneString), allowed: false, tail: "milk", wantErr: ErrNeedsArgs, missing: []string{"query"}},
		{name: "read-only, not allowed, integer", row: posRow(posOneInteger), allowed: false, tail: "3", wantErr: ErrNeedsArgs, missing: []string{"count"}},

		// Two or more required.
		{name: "two required", row: posRow(`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}`), allowed: true, tail: "x y", wantErr: ErrNeedsArgs, missing: []string{"a", "b"}},
		{name: "two required, empty tail", row: posRow(`{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}`), allowed: true, tail: "", wantErr: ErrNeedsArgs, missing: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BindPositional(tt.row, tt.allowed, tt.tail)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v (args %v)", err, tt.wantErr, got)
				}
				if got != nil {
					t.Errorf("args %v returned with an error", got)
				}
				var ae *ArgsError
				if !errors.As(err, &ae) {
					t.Fatalf("err %T is not an *ArgsError", err)
				}
				if tt.missing != nil {
					if diff := cmp.Diff(tt.missing, ae.Missing); diff != "" {
						t.Errorf("Missing (-want +got):\n%s", diff)
					}
				}
				if ae.Reason == "" {
					t.Error("no reason given")
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgsErrorMessage(t *testing.T) {
	_, err := BindPositional(posRow(posOneNumber), true, "three")
	const want = "the tool needs arguments that cannot be taken from speech (celsius): expected a number"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func FuzzBindPositional(f *testing.F) {
	for _, s := range []string{posOneString, posOneNumber, posOneInteger, posOptional, "", "null", `{"required":["x"]}`, `[]`, `{"properties":{"q":true},"required":["q"]}`} {
		f.Add([]byte(s), "milk", true, false, true)
		f.Add([]byte(s), "", true, false, true)
		f.Add([]byte(s), "3", false, true, true)
	}
	f.Fuzz(func(t *testing.T, schema []byte, tail string, readOnly, destructive, allowed bool) {
		row := posRow(string(schema), func(r *allowlist.Tool) { r.ReadOnly, r.Destructive = readOnly, destructive })
		args, err := BindPositional(row, allowed, tail)
		if err != nil {
			if args != nil {
				t.Fatalf("args %v with error %v", args, err)
			}
			if !errors.Is(err, ErrNeedsArgs) && !errors.Is(err, ErrUndescribedArg) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if args == nil {
			t.Fatal("nil args without an error")
		}
		if len(args) > 0 && (!readOnly || destructive || !allowed) {
			t.Fatalf("guessed %v for readOnly=%v destructive=%v allowed=%v", args, readOnly, destructive, allowed)
		}
		if len(args) > 1 {
			t.Fatalf("bound more than one argument: %v", args)
		}
		for _, v := range args {
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				t.Fatalf("bound %v", f)
			}
		}
		if _, err := json.Marshal(args); err != nil {
			t.Fatalf("args cannot be sent: %v", err)
		}
	})
}
