package phrases

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"", "empty"},
		{"add (a | b", `"(" is never closed`},
		{"add [a | b", `"[" is never closed`},
		{"add a) b", "no matching opening"},
		{"add a] b", "no matching opening"},
		{"add (a] b", "no matching opening"},
		{"add {a and {b}", "holds a bracket"},
		{"add {a", "never closed"},
		{"add a} b", `"}" has no matching`},
		{"add {} and {b}", "names no property"},
		{"turn on {name:entity}", "slot lists"},
		{"<turn> on {what}", "expansion rules"},
		{"(set; put) {a}", "permutations"},
		{"{a} {b}", "need a word between them"},
		{"add {a} [and] {b}", "need a word between them"},
		{"x{a}", "must stand apart"},
		{"{a}s here", "must stand apart"},
		{"say {a} or {a}", "appears twice"},
		{"{a}", "at least one word"},
		{"[please] {a}", "at least one word"},
		{"echo \\", `lone "\"`},
		{strings.Repeat("[a] ", 9) + "{x}", "more than 256 ways"},
		{strings.Repeat("word ", 50), "longer than 200"},
	} {
		t.Run(c.line, func(t *testing.T) {
			_, err := Parse(c.line)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", c.line, err, c.want)
			}
		})
	}
}

func TestMatchBindsEverySlot(t *testing.T) {
	for _, c := range []struct {
		template, utterance string
		want                map[string]string // nil: no match
	}{
		{"add {a} and {b}", "add 3 and 4", map[string]string{"a": "3", "b": "4"}},
		{"add {a} and {b}", "Add three point five and -2.", map[string]string{"a": "three point five", "b": "-2"}},
		{"add {a} and {b}", "add 3 and", nil},
		{"add {a} and {b}", "add 3 4", nil},
		{"[please] (add | sum) {a} (and | plus) {b}", "sum twenty three plus 4", map[string]string{"a": "twenty three", "b": "4"}},
		{"[please] (add | sum) {a} (and | plus) {b}", "please add 1 and 2", map[string]string{"a": "1", "b": "2"}},
		{"echo {message}", "echo Hello, World!", map[string]string{"message": "Hello, World"}},
		{"turn on [the] light[s] in {room}", "turn on lights in the living room", map[string]string{"room": "the living room"}},
		{"turn on [the] light[s] in {room}", "turn on the light in kitchen", map[string]string{"room": "kitchen"}},
		{"set {name} to {value}", "set alarm to wake to work", map[string]string{"name": "alarm", "value": "wake to work"}},
		{"{what} is done", "the laundry is done", map[string]string{"what": "the laundry"}},
		{"list tasks", "list tasks", map[string]string{}},
		{"list tasks", "list tasks now", nil},
		{`say \(quietly\) {text}`, "say quietly hi", map[string]string{"text": "hi"}},
	} {
		t.Run(c.template+"/"+c.utterance, func(t *testing.T) {
			tpl, err := Parse(c.template)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := tpl.Match(c.utterance, Words(c.utterance))
			if c.want == nil {
				if ok {
					t.Fatalf("matched %v, want no match", m.Values)
				}
				return
			}
			if !ok || !maps.Equal(m.Values, c.want) {
				t.Fatalf("got %v %v, want %v", ok, m.Values, c.want)
			}
		})
	}
}

func TestMatchPrefersTheMostSpecificWay(t *testing.T) {
	tpl, err := Parse("(add {a} [please] | add {a} and {b})")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := tpl.Match("add 1 and 2", Words("add 1 and 2"))
	if !ok || !maps.Equal(m.Values, map[string]string{"a": "1", "b": "2"}) || m.Literal != 2 {
		t.Fatalf("%v %+v", ok, m)
	}
}

func TestSlotsAndExample(t *testing.T) {
	tpl, err := Parse("[please] (add | sum) {a} [and {b}]")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tpl.Slots, []string{"a", "b"}) {
		t.Fatalf("slots %v", tpl.Slots)
	}
	if got := tpl.Example(func(s string) string { return "<" + s + ">" }); got != "please add <a> and <b>" {
		t.Fatalf("example %q", got)
	}
	tpl, err = Parse("(what is | sum) {a} plus[ses] {b}")
	if err != nil {
		t.Fatal(err)
	}
	if got := tpl.Example(func(s string) string { return "<" + s + ">" }); got != "what is <a> plusses <b>" {
		t.Fatalf("example %q", got)
	}
}

func TestCompileChecksSlotsAgainstTheSchema(t *testing.T) {
	schema, err := ReadSchema([]byte(`{"type":"object","properties":{
		"a":{"type":"number"},"b":{"type":"number"},"tags":{"type":"array"},"x":{}},"required":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if lines, _, err := Compile("get-sum", schema, "add {a} and {b}\n\n  sum {a} {b} \r\n"); err == nil {
		t.Fatalf("adjacent slots compiled: %v", lines)
	}
	lines, templates, err := Compile("get-sum", schema, "add {a} and {b}\n\n  sum {a} plus {b} \r\n")
	if err != nil || !slices.Equal(lines, []string{"add {a} and {b}", "sum {a} plus {b}"}) || len(templates) != 2 {
		t.Fatalf("%v %v %v", lines, templates, err)
	}
	_, _, err = Compile("get-sum", schema, "add {a} and {c}\nok {a} then {b}\ntag {tags} now\nwith {x} now\n(broken")
	var e *Error
	if !errors.As(err, &e) || len(e.Lines) != 4 {
		t.Fatalf("%v", err)
	}
	for i, want := range []string{"line 1", "{c} is not a property of get-sum (it takes a, b, tags and x)", "line 3", "is an array", "line 4", "no declared type", "line 5", "never closed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%d: %q lacks %q", i, err, want)
		}
	}
	if _, _, err := Compile("get-sum", schema, strings.Repeat("add {a} and {b}\n", MaxLines+1)); err != ErrTooMany {
		t.Fatalf("too many: %v", err)
	}
}

// FuzzTemplate parses arbitrary phrases and matches them against arbitrary utterances: nothing
// panics, a phrase that parses has a bounded number of ways of saying it, and every slot value
// is a piece of the utterance as said.
func FuzzTemplate(f *testing.F) {
	for _, seed := range [][2]string{
		{"[please] (add | sum) {a} (and | plus) {b}", "please add 3 and 4"},
		{"turn on [the] light[s] in {room}", "turn on the lights in the living room"},
		{`say \(quietly\) {text}`, "say quietly hi"},
		{"((a|b)[c|d]{x} e)|f", "a c x e"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, line, utterance string) {
		tpl, err := Parse(line)
		if err != nil {
			return
		}
		if len(tpl.variants) == 0 || len(tpl.variants) > MaxVariants {
			t.Fatalf("%q has %d ways of saying it", line, len(tpl.variants))
		}
		m, ok := tpl.Match(utterance, Words(utterance))
		if !ok {
			return
		}
		for slot, v := range m.Values {
			if v == "" || !strings.Contains(utterance, v) {
				t.Fatalf("slot %s = %q is not a piece of %q", slot, v, utterance)
			}
		}
	})
}
