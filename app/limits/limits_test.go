package limits_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"maven/app/limits"
	"maven/internal/enumtest"
)

// thermostat is a tool schema with a property of every kind a limit takes, and a few that take
// none.
const thermostat = `{"type":"object","properties":{
	"temperature":{"type":"number","minimum":5,"maximum":35},
	"mode":{"type":"string","enum":["heat","cool","off","auto"]},
	"unit":{"type":"string"},
	"name":{"type":"string","maxLength":50},
	"count":{"type":"integer"},
	"flag":{"type":"boolean"},
	"code":{"type":"string"},
	"zone":{"enum":["hall",2,true]},
	"coded":{"type":"string","pattern":"^x"},
	"tags":{"type":"array","items":{"type":"string"}},
	"either":{"type":["string","number"]},
	"untyped":{}
},"required":["temperature"],"additionalProperties":false}`

func schema(t testing.TB) limits.Schema {
	t.Helper()
	s, err := limits.ReadSchema(json.RawMessage(thermostat))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func set(t testing.TB, js string) limits.Set {
	t.Helper()
	var s limits.Set
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return s
}

func TestEveryKindHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Kind", limits.Kinds())
	for _, k := range limits.Kinds() {
		if k.Words() == string(k) {
			t.Errorf("kind %q has no words", k)
		}
	}
}

// TestSetJSONIsCanonical: a set reads back what it wrote, and writes the same bytes whatever
// order and spacing it was read from (what the step-up names and the database keeps).
func TestSetJSONIsCanonical(t *testing.T) {
	a := set(t, `{"run_without_asking":true,"properties":{"temperature":{"maximum":23,"minimum":17.0},"mode":{"enum":["heat","cool"]}}}`)
	b := set(t, `{"properties":{"mode":{"enum":["heat","cool"]},"temperature":{"minimum":17,"maximum":23}},"run_without_asking":true}`)
	ca, err := a.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := b.Canonical()
	want := `{"properties":{"mode":{"enum":["heat","cool"]},"temperature":{"maximum":23,"minimum":17}},"run_without_asking":true}`
	if string(ca) != want || string(cb) != want {
		t.Errorf("canonical:\n%s\n%s\nwant %s", ca, cb, want)
	}
	for _, bad := range []string{
		`{"properties":{"t":{"minimum":1,"pattern":"x"}}}`,
		`{"properties":{"t":{"format":"email"}}}`,
		`{"properties":{"t":{}}}`,
		`{"properties":{},"extra":1}`,
		`{"properties":{"t":{"minimum":"1"}}}`,
	} {
		var s limits.Set
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s was read", bad)
		}
	}
}

// TestDigestNamesTheShapeAndTheLimits: another fingerprint, another limit, or the choice to run
// unasked each make another digest, so a step-up approves exactly what the page showed.
func TestDigestNamesTheShapeAndTheLimits(t *testing.T) {
	base := set(t, `{"properties":{"temperature":{"minimum":17,"maximum":23}}}`)
	d := func(fp string, s limits.Set) string {
		got, err := limits.Digest(fp, s)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	seen := map[string]string{}
	for name, got := range map[string]string{
		"base":          d("sha256:a", base),
		"another shape": d("sha256:b", base),
		"another limit": d("sha256:a", set(t, `{"properties":{"temperature":{"minimum":17,"maximum":24}}}`)),
		"unasked":       d("sha256:a", set(t, `{"properties":{"temperature":{"minimum":17,"maximum":23}},"run_without_asking":true}`)),
		"none":          d("sha256:a", limits.Set{}),
	} {
		if !strings.HasPrefix(got, "sha256:") || len(got) != len("sha256:")+64 {
			t.Errorf("%s: digest %q", name, got)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s have one digest", name, other)
		}
		seen[got] = name
	}
	if d("sha256:a", base) != d("sha256:a", set(t, `{"properties":{"temperature":{"maximum":23.0,"minimum":17}}}`)) {
		t.Error("the same limits written otherwise have another digest")
	}
}

// TestValidateRefusesWhatTheSchemaContradicts: each limit the schema contradicts is refused
// with the reason; the ones that narrow it pass.
func TestValidateRefusesWhatTheSchemaContradicts(t *testing.T) {
	s := schema(t)
	for _, c := range []struct {
		name, limits string
		want         string // "" passes
	}{
		{"a range within the server's", `{"temperature":{"minimum":17,"maximum":23}}`, ""},
		{"a one-sided range", `{"temperature":{"maximum":23}}`, ""},
		{"a subset of the enum", `{"mode":{"enum":["heat","cool"]}}`, ""},
		{"a fixed value in the enum", `{"mode":{"const":"heat"}}`, ""},
		{"values of a string", `{"unit":{"enum":["celsius","kelvin"]}}`, ""},
		{"a length", `{"name":{"minLength":1,"maxLength":20}}`, ""},
		{"a pattern", `{"code":{"pattern":"^[A-Z]{3}$"}}`, ""},
		{"a fixed integer", `{"count":{"const":3}}`, ""},
		{"a fixed boolean", `{"flag":{"const":false}}`, ""},
		{"values of an untyped enum", `{"zone":{"enum":["hall",2]}}`, ""},
		{"a range on a string", `{"unit":{"minimum":1}}`, "takes no range limit"},
		{"a pattern on a number", `{"temperature":{"pattern":"1"}}`, "takes no pattern limit"},
		{"a length on an enum", `{"mode":{"maxLength":3}}`, "takes no length limit"},
		{"a value outside the server's enum", `{"mode":{"enum":["heat","warm"]}}`, `"warm" is not one of the server's values (heat, cool, off, auto)`},
		{"a fixed value of the wrong type", `{"temperature":{"const":"hot"}}`, `"hot" is not a number`},
		{"a fraction for an integer", `{"count":{"const":2.5}}`, "2.5 is not an integer"},
		{"a value the server's schema refuses", `{"temperature":{"const":40}}`, "the server's schema refuses 40"},
		{"a string too long for the server", `{"name":{"const":"` + strings.Repeat("n", 51) + `"}}`, "the server's schema refuses"},
		{"min over max", `{"temperature":{"minimum":23,"maximum":17}}`, "the minimum 23 is above the maximum 17"},
		{"a range wider than the server's", `{"temperature":{"minimum":0,"maximum":23}}`, "the server's own range is 5–35: a limit may only narrow it"},
		{"a length longer than the server's", `{"name":{"maxLength":80}}`, "the server's own length is ≤ 50"},
		{"a negative length", `{"name":{"minLength":-1}}`, "a length is a whole number"},
		{"a fractional length", `{"name":{"maxLength":2.5}}`, "a length is a whole number"},
		{"a pattern that does not compile", `{"code":{"pattern":"(a"}}`, "the pattern does not compile: missing closing )"},
		{"a backreference, which RE2 has not", `{"code":{"pattern":"(a)\\1"}}`, "the pattern does not compile: invalid escape sequence"},
		{"a second pattern", `{"coded":{"pattern":"y$"}}`, "the server's schema has a pattern of its own (^x)"},
		{"no allowed value", `{"unit":{"enum":[]}}`, "name at least one allowed value"},
		{"a value twice", `{"unit":{"enum":["c","c"]}}`, `c is listed twice`},
		{"not a property", `{"humidity":{"maximum":3}}`, "humidity: not a property of this tool"},
		{"an array", `{"tags":{"const":"x"}}`, "it takes no limit: it is an array"},
		{"two types", `{"either":{"const":"x"}}`, "it may be string or number"},
		{"no type", `{"untyped":{"const":"x"}}`, "its schema declares no type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := limits.Validate(s, set(t, `{"properties":`+c.limits+`}`))
			var lerr *limits.Error
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (!errors.As(err, &lerr) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an *Error saying %q", err, c.want)
			}
		})
	}
	if err := limits.Validate(s, limits.Set{RunUnasked: true}); err == nil || !strings.Contains(err.Error(), "at least one limit") {
		t.Errorf("running unasked with no limit: %v", err)
	}
}

// TestDraftReadsTheFormByType: the form's text is read by each property's type, choices as
// their JSON; every field that cannot be read is named with its property, and DraftOf writes a
// set so that Parse reads it back.
func TestDraftReadsTheFormByType(t *testing.T) {
	s := schema(t)
	d := limits.Draft{RunUnasked: true, Props: map[string]limits.DraftLimit{
		"temperature": {Kind: limits.KindRange, Min: " 17", Max: "23.5"},
		"mode":        {Kind: limits.KindValues, Values: []string{`"heat"`, `"cool"`}},
		"unit":        {Kind: limits.KindFixed, Value: " celsius "},
		"count":       {Kind: limits.KindValues, Values: []string{"1", "", "2"}},
		"flag":        {Kind: limits.KindFixed, Value: "true"},
		"code":        {Kind: limits.KindPattern, Pattern: "^[A-Z]+$"},
		"name":        {Kind: ""},
	}}
	got, err := d.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{"code":{"pattern":"^[A-Z]+$"},"count":{"enum":[1,2]},"flag":{"const":true},"mode":{"enum":["heat","cool"]},"temperature":{"maximum":23.5,"minimum":17},"unit":{"const":"celsius"}},"run_without_asking":true}`
	if b, _ := got.Canonical(); string(b) != want {
		t.Errorf("parsed %s\nwant %s", b, want)
	}
	again, err := limits.DraftOf(s, got).Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustCanonical(t, again), mustCanonical(t, got); a != b {
		t.Errorf("DraftOf then Parse: %s, want %s", a, b)
	}

	bad := limits.Draft{Props: map[string]limits.DraftLimit{
		"temperature": {Kind: limits.KindRange, Min: "warm"},
		"count":       {Kind: limits.KindFixed, Value: "three"},
		"mode":        {Kind: limits.KindFixed, Value: "heat"},
		"name":        {Kind: limits.KindLength},
		"unit":        {Kind: "colour"},
	}}
	_, err = bad.Parse(s)
	var lerr *limits.Error
	if !errors.As(err, &lerr) {
		t.Fatalf("got %v", err)
	}
	wantProblems := map[string]string{
		"temperature": `the minimum "warm" is not a number`,
		"count":       `"three" is not a number`,
		"mode":        "choose one of its values",
		"name":        "give the length a minimum, a maximum or both",
		"unit":        `there is no limit of the kind "colour"`,
	}
	if len(lerr.Problems) != len(wantProblems) {
		t.Errorf("problems %v", lerr.Problems)
	}
	for _, p := range lerr.Problems {
		if w := wantProblems[p.Property]; w == "" || !strings.Contains(p.Err.Error(), w) {
			t.Errorf("%s: %v, want %q", p.Property, p.Err, w)
		}
	}
}

func mustCanonical(t testing.TB, s limits.Set) string {
	t.Helper()
	b, err := s.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckNamesThePropertyAndTheLimit: an argument outside its limit is a *Violation naming
// the property and the limit; a fixed property must be sent; what is not limited passes, and
// so, as in JSON Schema, does a value of a type the limit does not apply to.
func TestCheckNamesThePropertyAndTheLimit(t *testing.T) {
	c, err := limits.Compile(set(t, `{"properties":{
		"temperature":{"minimum":17,"maximum":23},
		"mode":{"enum":["heat","cool"]},
		"unit":{"const":"celsius"},
		"name":{"maxLength":3},
		"code":{"pattern":"^[A-Z]{3}$"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]any{"temperature": 20.0, "mode": "cool", "unit": "celsius", "name": "héé", "code": "ABC", "other": 99.0}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c2 := range []struct {
		name string
		args map[string]any
		want string // "" passes
	}{
		{"within", ok, ""},
		{"an integer within", with("temperature", int64(17)), ""},
		{"the bounds are in", with("temperature", 23.0), ""},
		{"too warm", with("temperature", 25.0), "temperature must be between 17 and 23 (the owner's limit), not 25"},
		{"too cold", with("temperature", 16.5), "temperature must be between 17 and 23"},
		{"not an allowed value", with("mode", "off"), `mode must be heat or cool (the owner's limit), not "off"`},
		{"not the fixed value", with("unit", "kelvin"), `unit must be celsius (the owner's limit), not "kelvin"`},
		{"the fixed value not sent", with("unit", nil), "unit must be celsius (the owner's limit), and it was not sent"},
		{"too long in characters", with("name", "abcd"), "name must be at most 3 characters long"},
		{"not matching", with("code", "ABCD"), "code must match the pattern ^[A-Z]{3}$"},
		{"a range not sent", with("temperature", nil), ""},
		{"a string for a range", with("temperature", "hot"), ""},
		{"a number for a pattern", with("code", 3.0), ""},
		{"a number for an allowed string", with("mode", 1.0), "mode must be heat or cool (the owner's limit), not 1"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			err := c.Check(c2.args)
			var v *limits.Violation
			switch {
			case c2.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c2.want != "" && (!errors.As(err, &v) || !errors.Is(err, limits.ErrOutside) || !strings.Contains(err.Error(), c2.want)):
				t.Errorf("got %v, want a violation saying %q", err, c2.want)
			}
		})
	}
	long := strings.Repeat("x", 500)
	if err := c.Check(with("code", long)); err == nil || len(err.Error()) > 200 {
		t.Errorf("a long value is repeated whole: %d bytes", len(err.Error()))
	}
}

// TestNarrowAppliesTheLimitsAsKeywords: the narrowed schema keeps the server's schema and
// carries each limit as its JSON Schema keywords, a fixed property required; jsonschema-go
// validates calls against it as the approved schema and Check do together.
func TestNarrowAppliesTheLimitsAsKeywords(t *testing.T) {
	s := set(t, `{"properties":{"temperature":{"minimum":17,"maximum":23},"mode":{"enum":["heat","cool"]},"unit":{"const":"celsius"}}}`)
	narrowed, err := limits.Narrow(json.RawMessage(thermostat), s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Additional *bool                     `json:"additionalProperties"`
	}
	if err := json.Unmarshal(narrowed, &got); err != nil {
		t.Fatal(err)
	}
	temp, mode, unit := got.Properties["temperature"], got.Properties["mode"], got.Properties["unit"]
	if temp["minimum"] != 17.0 || temp["maximum"] != 23.0 || temp["type"] != "number" {
		t.Errorf("temperature: %v", temp)
	}
	if len(mode["enum"].([]any)) != 2 || unit["const"] != "celsius" || got.Properties["name"]["maxLength"] != 50.0 {
		t.Errorf("mode %v, unit %v, name %v", mode, unit, got.Properties["name"])
	}
	if strings.Join(got.Required, ",") != "temperature,unit" || got.Additional == nil || *got.Additional {
		t.Errorf("required %v, additionalProperties %v", got.Required, got.Additional)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(narrowed, &js); err != nil {
		t.Fatal(err)
	}
	resolved, err := js.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := resolved.Validate(map[string]any{"temperature": 20.0, "mode": "heat", "unit": "celsius"}); err != nil {
		t.Errorf("a call within: %v", err)
	}
	if err := resolved.Validate(map[string]any{"temperature": 25.0, "mode": "heat", "unit": "celsius"}); err == nil {
		t.Error("a call outside passes the narrowed schema")
	}
	if same, _ := limits.Narrow(json.RawMessage(thermostat), limits.Set{RunUnasked: true}); string(same) != thermostat {
		t.Error("no limit changed the schema")
	}
}

// TestACatastrophicPatternIsChecked: (a+)+$, which makes a backtracking engine try every split
// of the a's, is RE2 here and answers on thirty a's and a b as on any other string;
// BenchmarkCatastrophicPattern measures it.
func TestACatastrophicPatternIsChecked(t *testing.T) {
	c, err := limits.Compile(set(t, `{"properties":{"code":{"pattern":"^(a+)+$"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(map[string]any{"code": strings.Repeat("a", 30) + "b"}); !errors.Is(err, limits.ErrOutside) {
		t.Errorf("thirty a's and a b: %v", err)
	}
	if err := c.Check(map[string]any{"code": strings.Repeat("a", 100000)}); err != nil {
		t.Errorf("a hundred thousand a's: %v", err)
	}
}
