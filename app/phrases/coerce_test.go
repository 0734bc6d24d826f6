package phrases

import (
	"errors"
	"testing"
)

func TestCoerce(t *testing.T) {
	str := Property{Name: "message", Type: "string"}
	integer := Property{Name: "count", Type: "integer"}
	number := Property{Name: "a", Type: "number"}
	boolean := Property{Name: "loud", Type: "boolean"}
	level := Property{Name: "level", Type: "string", Enum: []any{"debug", "Info", "error_only"}}
	numEnum := Property{Name: "speed", Type: "integer", Enum: []any{1.0, 2.0, 3.0}}
	for _, c := range []struct {
		p    Property
		said string
		want any // nil: refused
	}{
		{str, " Hello, World! ", "Hello, World"},
		{str, "...", nil},
		{integer, "23", int64(23)},
		{integer, "twenty three", int64(23)},
		{integer, "Twenty-three.", int64(23)},
		{integer, "one hundred and five", int64(105)},
		{integer, "a thousand", int64(1000)},
		{integer, "two thousand twenty six", int64(2026)},
		{integer, "minus four", int64(-4)},
		{integer, "-4", int64(-4)},
		{integer, "1,000", int64(1000)},
		{integer, "zero", int64(0)},
		{integer, "3.5", nil},
		{integer, "five five", nil},
		{integer, "twenty twelve", nil},
		{integer, "banana", nil},
		{integer, "12,34", nil},
		{number, "three point five", 3.5},
		{number, "3.5", 3.5},
		{number, "point two five", 0.25},
		{number, "3 point 1 4", 3.14},
		{number, "minus one point oh five", -1.05},
		{number, "NaN", nil},
		{number, "Inf", nil},
		{number, "0x10", nil},
		{number, "three point", nil},
		{boolean, "Yes", true},
		{boolean, "on", true},
		{boolean, "true", true},
		{boolean, "off.", false},
		{boolean, "no", false},
		{boolean, "maybe", nil},
		{level, "INFO", "Info"},
		{level, "error only", "error_only"},
		{level, "warning", nil},
		{numEnum, "two", int64(2)},
		{numEnum, "4", nil},
	} {
		got, err := Coerce(c.p, c.said)
		if c.want == nil {
			var ce *CoerceError
			if !errors.As(err, &ce) || ce.Property != c.p.Name {
				t.Errorf("%s %q: got %v %v, want a *CoerceError", c.p.Name, c.said, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: got %#v %v, want %#v", c.p.Name, c.said, got, err, c.want)
		}
	}
}

func TestCoerceErrorsSayWhatFits(t *testing.T) {
	_, err := Coerce(Property{Name: "level", Type: "string", Enum: []any{"low", "high"}}, "medium")
	if err == nil || err.Error() != "level must be one of low or high" {
		t.Fatalf("%v", err)
	}
	_, err = Coerce(Property{Name: "a", Type: "number"}, "banana")
	if err == nil || err.Error() != "a must be a number" {
		t.Fatalf("%v", err)
	}
}

func TestReadSchema(t *testing.T) {
	s, err := ReadSchema([]byte(`{"type":"object","properties":{
		"a":{"type":"number"},"n":{"type":["integer","null"]},"e":{"enum":["x","y"]},
		"mixed":{"type":["string","number"]},"list":{"type":"array"}},"required":["a","ghost","a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "number", "n": "integer", "e": "string", "mixed": "", "list": ""}
	for name, typ := range want {
		if got := s.Props[name].Type; got != typ {
			t.Errorf("%s: type %q, want %q", name, got, typ)
		}
	}
	if len(s.Required) != 2 || len(s.Undescribed) != 1 || s.Undescribed[0] != "ghost" || !s.Props["a"].Required {
		t.Fatalf("required %v undescribed %v", s.Required, s.Undescribed)
	}
	if _, err := ReadSchema([]byte(`{"properties": 3}`)); err == nil {
		t.Fatal("a broken schema was read")
	}
}
